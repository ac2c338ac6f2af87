"""Docs that run: every ```python block of README.md and docs/*.md runs, unless it is a fragment.

Marking: a block whose info string is ```python fragment (instead of ```python) is a fragment:
it shows a shape of code (undefined names, long training runs, paths on another machine) and is
not run. Every other ```python block runs, in order, the blocks of one file sharing one namespace
like the cells of a notebook, in a fresh Python process per file (so set_context and set_seed of
one file do not leak into another) whose working directory is a temporary folder (files written
by the examples land there). A block must run in seconds; a long one is a fragment.
"""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC_FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
_FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)


def blocks(path):
    """(first line number, info string after 'python', code) of each ```python block."""
    text = path.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m.group(1).strip(), m.group(2))
            for m in _FENCE.finditer(text)]


def runnable(path):
    return [(line, code) for line, info, code in blocks(path) if info != "fragment"]


# Runs the blocks of one file in order; reports which block failed and its traceback.
_RUNNER = r"""
import json, linecache, sys, traceback
blocks = json.loads(sys.stdin.read())
ns = {"__name__": "__main__"}
for line, code in blocks:
    name = f"<{sys.argv[1]}:{line}>"
    # the source kept where graph mode (inspect) finds it, as IPython keeps a cell's
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    try:
        exec(compile(code, name, "exec"), ns)
    except BaseException:
        print(f"block at {sys.argv[1]}:{line} failed:\n" + traceback.format_exc(), file=sys.stderr)
        sys.exit(1)
"""


def test_every_block_is_marked_python_or_python_fragment():
    for path in DOC_FILES:
        for line, info, _ in blocks(path):
            assert info in ("", "fragment"), f"{path.name}:{line}: unknown info string {info!r}"


def test_counts():
    """The blocks that run and the fragments (reported by the suite; a doc change updates them)."""
    run = sum(len(runnable(p)) for p in DOC_FILES)
    total = sum(len(blocks(p)) for p in DOC_FILES)
    print(f"docs: {run} blocks run, {total - run} fragments")
    assert run >= total - run  # most examples run


@pytest.mark.parametrize("path", [p for p in DOC_FILES if runnable(p)], ids=lambda p: p.name)
def test_doc_blocks_run(path, tmp_path):
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")  # mycel as installed, like the suite's own
    proc = subprocess.run([sys.executable, "-c", _RUNNER, str(path.relative_to(ROOT))],
                          input=json.dumps(runnable(path)), capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
