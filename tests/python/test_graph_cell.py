"""mycel.load + nn.GraphCell (MindSpore's way to run an exported MINDIR model): the loaded graph
gives the exported network's outputs in both modes, for any batch size (the batch dim stays
dynamic), and bad files or arguments get clear errors."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn

pytestmark = pytest.mark.skipif(getattr(mycel._mycel, "lite", None) is None, reason="no lite runtime")


class TwoHeads(nn.Cell):
    def __init__(self):
        super().__init__()
        self.body = nn.SequentialCell([nn.Dense(4, 8), nn.ReLU()])
        self.a, self.b = nn.Dense(8, 3), nn.Dense(8, 2)

    def construct(self, x):
        h = self.body(x)
        return self.a(h), self.b(h)


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_graph_cell_runs_the_exported_network(tmp_path, mode):
    net = TwoHeads()
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    mycel.export(net, Tensor(x), file_name=str(tmp_path / "net"), file_format="MINDIR")
    mycel.set_context(mode=mode)
    try:
        cell = nn.GraphCell(mycel.load(str(tmp_path / "net.mindir")))
        for batch in (x, np.concatenate([x, x, x])):  # another batch size: the batch dim is dynamic
            got = cell(Tensor(batch))
            want = net(Tensor(batch))
            assert isinstance(got, tuple) and len(got) == 2
            for g, w in zip(got, want):
                np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-5, atol=1e-6)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_load_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        mycel.load(str(tmp_path / "missing.mindir"))
    bad = tmp_path / "bad.mindir"
    bad.write_bytes(b"\0" * 100)
    with pytest.raises(ValueError):
        mycel.load(str(bad))
    with pytest.raises(ValueError, match="mycel.onnx.load_model"):
        mycel.load(str(tmp_path / "m.onnx"))
    with pytest.raises(TypeError, match="must come from mycel.load"):
        nn.GraphCell(object())
    net = nn.Dense(2, 2)
    mycel.export(net, Tensor(np.ones((1, 2), np.float32)), file_name=str(tmp_path / "d"), file_format="MINDIR")
    with pytest.raises(TypeError, match="takes 1 input"):
        nn.GraphCell(mycel.load(str(tmp_path / "d.mindir")))(Tensor(np.ones((1, 2), np.float32)),
                                                            Tensor(np.ones((1, 2), np.float32)))
