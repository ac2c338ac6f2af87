"""Pinned dependencies: constraints.txt pins every package of the tested .venv, scripts/setup
installs through it, and pyproject.toml's ranges contain the pins; CMake refuses a oneDNN
outside 2.6 <= v < 3."""
import os
import re
import subprocess
import tomllib
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _pins():
    pins = {}
    with open(os.path.join(ROOT, "constraints.txt")) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                name, _, version = line.partition("==")
                assert version, f"constraints.txt: '{line}' is not an exact pin (name==version)"
                pins[canonicalize_name(name)] = version
    return pins


def test_constraints_pin_the_installed_versions():
    pins = _pins()
    for name in ("numpy", "nanobind", "scikit-build-core", "pytest", "pillow"):
        key = canonicalize_name(name)
        assert key in pins, f"constraints.txt does not pin {name}"
        assert metadata.version(name) == pins[key], f"{name}: installed {metadata.version(name)}"


def test_pyproject_ranges_contain_the_pins():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    reqs = project["build-system"]["requires"] + project["project"]["dependencies"]
    pins = _pins()
    for text in reqs:
        req = Requirement(text)
        assert req.specifier, f"pyproject.toml: '{text}' has no version range"
        pinned = pins[canonicalize_name(req.name)]
        assert req.specifier.contains(pinned), f"pyproject.toml: '{text}' excludes pinned {pinned}"


def test_setup_installs_through_the_constraints():
    with open(os.path.join(ROOT, "scripts", "setup")) as f:
        text = f.read()
    assert re.search(r"pip install [^\n]*-c constraints\.txt", text)


@pytest.mark.parametrize("version,ok", [("2.6.3", True), ("2.5.4", False), ("3.1.0", False)])
def test_cmake_checks_the_onednn_version(tmp_path, version, ok):
    # The check itself, run by `cmake -P` on a stand-in dnnl_VERSION (no compiler needed).
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        cml = f.read()
    m = re.search(r"if\(dnnl_VERSION .*?\nendif\(\)", cml, re.S)
    assert m, "CMakeLists.txt does not check dnnl_VERSION"
    script = tmp_path / "check.cmake"
    script.write_text(f'set(dnnl_VERSION "{version}")\nset(dnnl_DIR "/x")\n{m.group(0)}\n')
    cmake = os.path.join(ROOT, ".venv", "bin", "cmake")
    r = subprocess.run([cmake if os.path.exists(cmake) else "cmake", "-P", str(script)],
                       capture_output=True, text=True)
    assert (r.returncode == 0) == ok, r.stderr
    if not ok:
        assert "oneDNN >= 2.6 and < 3" in r.stderr and version in r.stderr
