"""set_context(save_graphs=True, save_graphs_path=dir) writes the IR of each graph compiled from
then on under dir (what MYCEL_DUMP_IR=<dir> does); save_graphs=False stops it. Cell.compile(*inputs) compiles without running."""
import os

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops


class Scale(nn.Cell):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def construct(self, x):
        return ops.relu(x) * self.k


@pytest.fixture(autouse=True)
def _restore(monkeypatch):
    monkeypatch.delenv("MYCEL_DUMP_IR", raising=False)
    yield
    mycel.set_context(save_graphs=False, save_graphs_path=".", mode=mycel.PYNATIVE_MODE)


def _ir_files(root):
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".ir")]


def test_save_graphs_dumps_the_ir_of_graphs_compiled_from_then_on(tmp_path):
    mycel.set_context(mode=mycel.GRAPH_MODE, save_graphs=True, save_graphs_path=str(tmp_path / "ir"))
    assert mycel.get_context("save_graphs") is True
    x = Tensor(np.array([-1.0, 2.0], np.float32))
    np.testing.assert_array_equal(Scale(3.0)(x).asnumpy(), [0.0, 6.0])
    files = _ir_files(tmp_path / "ir")
    assert files, "no IR written"
    assert any("relu" in open(f).read() for f in files)

    mycel.set_context(save_graphs=False)
    assert "MYCEL_DUMP_IR" not in os.environ
    before = len(_ir_files(tmp_path / "ir"))
    Scale(5.0)(Tensor(np.ones((2, 2), np.float32)))  # a new graph: compiled, not dumped
    assert len(_ir_files(tmp_path / "ir")) == before


def test_save_graphs_path_given_after_save_graphs_moves_the_dump(tmp_path):
    mycel.set_context(save_graphs=2)
    mycel.set_context(save_graphs_path=str(tmp_path))
    assert os.environ["MYCEL_DUMP_IR"] == str(tmp_path)


def test_bad_values_name_the_setting():
    with pytest.raises(ValueError, match="save_graphs must be a bool or 0-3, got 7"):
        mycel.set_context(save_graphs=7)
    with pytest.raises(ValueError, match="save_graphs_path must be a non-empty str"):
        mycel.set_context(save_graphs_path="")


def test_cell_compile_builds_the_program_without_running_it():
    from mycel import _mycel
    mycel.set_context(mode=mycel.GRAPH_MODE)
    net = Scale(2.0)
    x = Tensor(np.array([[-1.0, 3.0]], np.float32))
    before = _mycel.graph.compile_count()
    net.compile(x)
    assert _mycel.graph.compile_count() == before + 1
    np.testing.assert_array_equal(net.compile_and_run(x).asnumpy(), [[0.0, 6.0]])
    assert _mycel.graph.compile_count() == before + 1  # the call found the compiled Program
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    net.compile(x)  # nothing to compile eagerly
    assert _mycel.graph.compile_count() == before + 1


def test_jit_syntax_level_is_kept():
    mycel.set_context(jit_syntax_level=mycel.STRICT)
    assert mycel.get_context("jit_syntax_level") == mycel.STRICT
    mycel.set_context(jit_syntax_level=mycel.LAX)
    with pytest.raises(ValueError, match="jit_syntax_level must be mycel.STRICT, COMPATIBLE or LAX, got 7"):
        mycel.set_context(jit_syntax_level=7)
