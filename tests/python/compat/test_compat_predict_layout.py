"""Model.infer_predict_layout / infer_train_layout (MindSpore's distributed-inference helpers)
under real mpirun: a semi-auto MLP on 2 ranks whose first matmul splits w1 by columns and whose
second splits the reduction dim (w2 by rows) gets MindSpore's layout lists (device matrix,
tensor map, slice shape = whole shape with the split dim halved, ...) without being built, and
the same layouts for training; outside semi/auto parallel graph mode the helpers refuse."""
import json

import numpy as np
import pytest

import mycel
from mycel import Model, Tensor, nn
from mpi_helpers import requires_mpi, run_mpi


@requires_mpi
def test_predict_and_train_layouts_on_two_ranks(tmp_path):
    rc, log = run_mpi(2, "predict_layout.py", tmp_path, timeout=120)
    assert rc == 0, log
    got = json.loads((tmp_path / "layout.json").read_text())
    w = got["weights"]
    assert w == {"w1": [8, 16], "w2": [16, 8]}  # predict keeps whole weights
    for name, split in (("w1", 1), ("w2", 0)):
        whole = w[name]
        dev, tmap, slice_shape, field, uniform, group = got["predict"][name]
        assert int(np.prod(dev)) == 2 and (field, uniform, group) == (0, True, "")
        # the split dim halved, the other whole; the tensor map marks only the split dim
        want = list(whole)
        want[split] //= 2
        assert slice_shape == want, (name, slice_shape)
        assert tmap[1 - split] == -1 and tmap[split] != -1, (name, tmap)
    assert got["train"] == got["predict"]
    assert got["out_shape"] == [16, 8]


def test_layout_helpers_need_semi_or_auto_parallel_graph_mode():
    net = nn.Dense(3, 2)
    model = Model(net)
    with pytest.raises(RuntimeError, match=r"infer_predict_layout: needs GRAPH_MODE and parallel_mode"):
        model.infer_predict_layout(Tensor(np.ones((2, 3), np.float32)))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        with pytest.raises(RuntimeError, match="stand_alone"):
            model.infer_predict_layout(Tensor(np.ones((2, 3), np.float32)))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
