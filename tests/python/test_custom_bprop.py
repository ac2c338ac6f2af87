"""A Cell's own bprop(self, *inputs, out, dout) replaces autodiff of its construct, in graph mode
(called from a compiled function or at top level) and in PyNative (the recorder calls the Cell as
one compiled node), as MindSpore's Cell.bprop does."""
import numpy as np
import pytest

import mycel
from mycel import nn, ops, Tensor, Parameter

MODES = [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE]


class ScaledMul(nn.Cell):
    """x * y whose gradient is deliberately (2 y dout, 3 x dout): not the true one."""

    def construct(self, x, y):
        return x * y

    def bprop(self, x, y, out, dout):
        return dout * y * 2.0, dout * x * 3.0


class Outer(nn.Cell):
    def __init__(self):
        super().__init__()
        self.m = ScaledMul()

    def construct(self, x, y):
        return ops.sin(self.m(x, y)).sum()


X = np.array([1.0, 2.0, -0.5], np.float32)
Y = np.array([3.0, 4.0, 0.25], np.float32)


@pytest.mark.parametrize("mode", MODES)
def test_custom_bprop_of_a_sub_cell_is_used(mode):
    mycel.set_context(mode=mode)
    gx, gy = ops.GradOperation(get_all=True)(Outer())(Tensor(X), Tensor(Y))
    c = np.cos(X * Y)
    np.testing.assert_allclose(gx.asnumpy(), c * Y * 2, rtol=1e-5)
    np.testing.assert_allclose(gy.asnumpy(), c * X * 3, rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_custom_bprop_of_the_differentiated_cell_itself(mode):
    mycel.set_context(mode=mode)
    gx, gy = ops.GradOperation(get_all=True)(ScaledMul())(Tensor(X), Tensor(Y))
    np.testing.assert_allclose(gx.asnumpy(), Y * 2)
    np.testing.assert_allclose(gy.asnumpy(), X * 3)


class ClippedIdentity(nn.Cell):
    """A straight-through estimator: forward rounds, backward passes dout through."""

    def construct(self, x):
        return ops.round(x)

    def bprop(self, x, out, dout):
        return (dout,)


class WithWeight(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([0.5, -1.0, 2.0], np.float32)), name="w")
        self.q = ClippedIdentity()

    def construct(self, x):
        return (self.q(x * self.w) * x).sum()


@pytest.mark.parametrize("mode", MODES)
def test_straight_through_estimator_gives_weight_gradients(mode):
    mycel.set_context(mode=mode)
    net = WithWeight()
    gw, = ops.GradOperation(get_by_list=True)(net, net.trainable_params())(Tensor(X))
    # d/dw sum(round(x w) x) with round's gradient taken as 1: x * x.
    np.testing.assert_allclose(gw.asnumpy(), X * X, rtol=1e-6)


class BadArity(nn.Cell):
    def construct(self, x):
        return x * 2.0

    def bprop(self, x, dout):
        return (dout,)


def test_bprop_with_wrong_arguments_is_a_clear_error():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    with pytest.raises(TypeError, match="bprop must take the inputs of construct plus out and dout"):
        ops.GradOperation()(BadArity())(Tensor(X))


class BadResult(nn.Cell):
    def construct(self, x, y):
        return x * y

    def bprop(self, x, y, out, dout):
        return (dout,)


def test_bprop_returning_too_few_gradients_is_a_clear_error():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    with pytest.raises(TypeError, match="one sensitivity per input"):
        ops.GradOperation(get_all=True)(BadResult())(Tensor(X), Tensor(Y))
