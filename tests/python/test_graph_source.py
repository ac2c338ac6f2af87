"""Graph mode parses Python source: code without a source file (typed at the prompt, piped to
`python -`, exec'd from a string) gets a short error saying why and what to do; code whose source
is kept in linecache (IPython's <ipython-input-...>, Jupyter's cells) compiles."""
import linecache
import subprocess
import sys

import numpy as np
import pytest

import mycel

X = mycel.Tensor(np.ones((2, 2), np.float32))
SOURCE = """\
import mycel
from mycel import nn, ops

@mycel.jit
def double(x):
    return ops.relu(x) * 2.0

class Net(nn.Cell):
    def construct(self, x):
        return double(x) + 1.0
"""


def run_in(filename, keep_source):
    if keep_source:  # what IPython does for every cell
        linecache.cache[filename] = (len(SOURCE), None, SOURCE.splitlines(True), filename)
    ns = {}
    exec(compile(SOURCE, filename, "exec"), ns)
    return ns


def test_string_without_source_says_why_and_what_to_do():
    ns = run_in("<string>", keep_source=False)
    with pytest.raises(TypeError) as e:
        ns["double"](X)
    assert str(e.value) == (
        "graph mode cannot compile 'double': it parses the Python source, and <string> keeps none "
        "(code typed at the prompt, piped to `python -` or exec'd from a string); define it in a .py "
        "file or a notebook cell, or run it eagerly with mycel.set_context(mode=mycel.PYNATIVE_MODE)")


@pytest.mark.parametrize("filename", ["<ipython-input-3-5f3c8a1b2e4d>", "<cell line: 1>",
                                      "/tmp/ipykernel_4242/1234567890.py"])
def test_notebook_cells_compile(filename):
    ns = run_in(filename, keep_source=True)
    try:
        np.testing.assert_allclose(ns["double"](X).asnumpy(), 2.0)
        mycel.set_context(mode=mycel.GRAPH_MODE)
        np.testing.assert_allclose(ns["Net"]()(X).asnumpy(), 3.0)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
        linecache.cache.pop(filename, None)


def test_piped_to_python():
    script = SOURCE + "print(double(mycel.Tensor([1.0])))\n"
    proc = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "TypeError: graph mode cannot compile 'double': it parses the Python source, and <stdin> keeps "
        "none (code typed at the prompt, piped to `python -` or exec'd from a string); define it in a "
        ".py file or a notebook cell, or run it eagerly with mycel.set_context(mode=mycel.PYNATIVE_MODE)")
