"""Cell.set_train keeps the compiled graph when the mode does not change (Model.train calls it on
every call: the step was re-parsed at the start of every epoch) and drops it when it does, for
the Cell itself and for a parent whose sub-Cell changed (graph mode folds `training`)."""
import numpy as np

import mycel as ms
from mycel import Tensor, nn
from mycel.train import Model
import mycel.dataset as ds


class _Drop(nn.Cell):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(p=0.5)

    def construct(self, x):
        return self.drop(x)


def _graph():
    ms.set_context(mode=ms.GRAPH_MODE)


def _restore():
    ms.set_context(mode=ms.PYNATIVE_MODE)


def test_same_mode_keeps_the_compiled_graph_and_a_change_drops_it():
    _graph()
    try:
        net = _Drop()
        x = Tensor(np.ones((64, 64), np.float32))
        net.set_train(True)
        y = net(x).asnumpy()
        assert (y == 0).any() and np.allclose(y[y != 0], 2.0)  # inverted dropout, p = 0.5
        compiled = net.__dict__["_compiled"]
        net.set_train(True)
        assert net.__dict__["_compiled"] is compiled
        net.set_train(False)  # the sub-Cell's flag changes: the parent's graph must go
        assert net.__dict__.get("_compiled") is None
        np.testing.assert_array_equal(net(x).asnumpy(), np.ones((64, 64), np.float32))
        net.set_train(False)
        compiled = net.__dict__["_compiled"]
        assert compiled is not None
        net.set_train(True)
        assert net.__dict__.get("_compiled") is None
        assert (net(x).asnumpy() == 0).any()
    finally:
        _restore()


def test_model_train_compiles_the_step_once():
    _graph()
    try:
        ms.set_seed(0)
        net = nn.Dense(4, 3)
        model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                      nn.Momentum(net.trainable_params(), 0.1, 0.9))
        rng = np.random.default_rng(0)
        data = ds.NumpySlicesDataset((rng.standard_normal((32, 4)).astype(np.float32),
                                      rng.integers(0, 3, 32).astype(np.int32)),
                                     column_names=["x", "y"], shuffle=False).batch(8)
        model.train(1, data)
        compiled = model.train_network.__dict__["_compiled"]
        w = net.weight.asnumpy().copy()
        model.train(1, data)
        model.train(2, data, dataset_sink_mode=True, sink_size=2)
        assert model.train_network.__dict__["_compiled"] is compiled
        assert not np.allclose(net.weight.asnumpy(), w)  # and it trained
    finally:
        _restore()
