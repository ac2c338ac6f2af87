"""libmycel_lite stays compiler-free: te_call's TE side (inference, kernel, bprop) is a hook the
full library installs, so the lite library links none of src/mycel/te. Checked on the built
libraries with nm and ldd; the full extension is the control that the probes see TE code."""
import os
import shutil
import subprocess

import pytest

import mycel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LITE = os.path.join(ROOT, os.environ.get("MYCEL_BUILD_DIR", os.path.join("build", "dev")), "libmycel_lite.so")
FULL = mycel._mycel.__file__

pytestmark = [pytest.mark.skipif(not os.path.exists(LITE), reason="lite library not built"),
              pytest.mark.skipif(shutil.which("nm") is None or shutil.which("ldd") is None,
                                 reason="needs binutils nm and ldd")]


def defined_symbols(path):
    out = subprocess.run(["nm", "-D", "-C", "--defined-only", path], capture_output=True, text=True, check=True)
    return out.stdout


def test_lite_links_no_te_compiler():
    lite, full = defined_symbols(LITE), defined_symbols(FULL)
    for probe in ("mycel::te::compile", "mycel::te::generate_cpp", "mycel::te::differentiate",
                  "mycel::te::compile_shared", "mycel::te::load_aot"):
        assert probe in full, probe  # the probe names real symbols...
        assert probe not in lite, probe  # ...which lite does not have
    assert "mycel::set_te_call_hooks" in lite  # te_call itself is there, behind its hook
    # The compiler command line of the kernel cache is TE code too.
    with open(LITE, "rb") as f:
        lite_bytes = f.read()
    with open(FULL, "rb") as f:
        assert b"-fno-math-errno" in f.read()
    assert b"-fno-math-errno" not in lite_bytes


def test_lite_dependencies_resolve_without_python():
    out = subprocess.run(["ldd", LITE], capture_output=True, text=True, check=True).stdout
    assert "not found" not in out, out
    assert "python" not in out.lower() and "_mycel" not in out, out
