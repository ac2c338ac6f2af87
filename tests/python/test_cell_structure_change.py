"""Graph mode compiles a Cell's sub-Cells and attributes into its program; changing one after the
first call recompiles instead of silently running the stale program (PYNATIVE is the reference).
Training itself must not trigger recompiles."""
import numpy as np
import pytest

import mycel as ms
from mycel import Parameter, Tensor, nn
from mycel.common import api as _api


@pytest.fixture(params=[ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    old = ms.get_context("mode")
    ms.set_context(mode=request.param)
    yield request.param
    ms.set_context(mode=old)


class Scaled(nn.Cell):
    def __init__(self):
        super().__init__()
        self.scale = 2.0
        self.w = Parameter(Tensor(np.ones(3, np.float32)), name="w")
        self.body = nn.Dense(3, 3, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return self.body(x * self.scale * self.w)


X = Tensor(np.ones((1, 3), np.float32))


def test_replacing_a_sub_cell_recompiles(mode):
    net = Scaled()
    assert net(X).shape == (1, 3)
    net.body = nn.Dense(3, 5, weight_init="ones", bias_init="zeros")
    np.testing.assert_allclose(net(X).asnumpy(), np.full((1, 5), 6.0))


def test_replacing_a_nested_sub_cell_recompiles_the_outer_cell(mode):
    outer = nn.SequentialCell([Scaled()])
    np.testing.assert_allclose(outer(X).asnumpy(), np.full((1, 3), 6.0))
    outer[0].body = nn.Dense(3, 2, weight_init="ones", bias_init="zeros")
    np.testing.assert_allclose(outer(X).asnumpy(), np.full((1, 2), 6.0))


def test_changing_a_constant_attribute_recompiles(mode):
    net = Scaled()
    np.testing.assert_allclose(net(X).asnumpy(), np.full((1, 3), 6.0))
    net.scale = 3.0
    np.testing.assert_allclose(net(X).asnumpy(), np.full((1, 3), 9.0))


def test_replacing_a_parameter_recompiles(mode):
    net = Scaled()
    net(X)
    net.w = Parameter(Tensor(np.full(3, 2.0, np.float32)), name="w")
    np.testing.assert_allclose(net(X).asnumpy(), np.full((1, 3), 12.0))


def test_same_values_and_training_do_not_recompile(monkeypatch):
    ms.set_context(mode=ms.GRAPH_MODE)
    count = [0]
    init = _api._Compiled.__init__

    def counting(self, *a, **k):
        count[0] += 1
        init(self, *a, **k)

    monkeypatch.setattr(_api._Compiled, "__init__", counting)
    net = Scaled()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.Momentum(net.trainable_params(), 0.01, 0.9))
    y = Tensor(np.zeros((1, 3), np.float32))
    for _ in range(5):
        step(X, y)
        net.scale = 2.0  # the same value: no change
    assert count[0] == 1
    net.scale = 2.5  # a change: one recompile of the train step
    for _ in range(3):
        step(X, y)
    assert count[0] == 2
