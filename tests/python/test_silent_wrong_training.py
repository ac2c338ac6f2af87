"""The silent wrong-training bugs of issue 22, each with the test that failed before its fix.

1. PyNative: views behind indexing (x[0], x[-1], x[0:1]) were made outside op dispatch, so the
   gradient recorder captured them as constants: zero gradient. Views now record as the op they
   stand for, and an unknown tensor sharing memory with a recorded value is an error.
2. GRAPH_MODE: a weight read only by a graph that the differentiated graph calls (a call left
   after inlining) got no gradient: autodiff returned sensitivities only for lexical free
   variables. Its free variables now include those of its callees that live in enclosing graphs,
   and inlining runs to a fixpoint so deep Cell nesting flattens.
3. Graph mode parsed branches whose condition is a constant False (and failed on attributes that
   exist only when the branch is taken); comparisons of constants now fold at parse time.
"""
import numpy as np
import pytest

import mycel
from mycel import Parameter, Tensor, nn, ops


MODES = [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE]


class Pick(nn.Cell):
    def __init__(self, which):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((2, 3), np.float32)), name="w")
        self.which = which

    def construct(self, x):
        y = x * self.w
        if self.which == 0:
            return (y[0] * 2.0).sum()
        if self.which == 1:
            return (y[1] * 2.0).sum()
        if self.which == 2:
            return (y[-1] * 2.0).sum()
        return (y[0:1] * 2.0).sum()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("which,row", [(0, 0), (1, 1), (2, 1), (3, 0)])
def test_axis0_indexing_gradients(mode, which, row):
    mycel.set_context(mode=mode)
    x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3) + 1)
    net = Pick(which)
    gx = mycel.grad(net, grad_position=0)(x).asnumpy()
    expected = np.zeros((2, 3), np.float32)
    expected[row] = 2.0
    np.testing.assert_array_equal(gx, expected)
    gw = mycel.grad(net, grad_position=None, weights=net.trainable_params())(x)[0].asnumpy()
    np.testing.assert_array_equal(gw, expected * x.asnumpy())


def test_tuple_outputs_made_by_indexing_get_gradients():
    # ShuffleNetV2's `return x[0], x[1]`: every parameter before the split had zero gradient.
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.dense = nn.Dense(3, 4)

        def construct(self, x):
            y = self.dense(x)
            return y[0], y[1]

    net = Net()
    x = Tensor(np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32))
    grads = mycel.grad(net, grad_position=None, weights=net.trainable_params())(x)
    w = net.dense.weight.asnumpy()
    # d/dW sum(y[0]) + sum(y[1]) = ones(4, 1) @ (x[0] + x[1])[None]
    np.testing.assert_allclose(grads[0].asnumpy(), np.ones((4, 1)) * x.asnumpy().sum(0)[None], rtol=1e-6)
    np.testing.assert_allclose(grads[1].asnumpy(), np.full(4, 2.0), rtol=1e-6)
    assert w.shape == (4, 3)


def test_a_raw_view_of_a_recorded_value_is_an_error_not_a_zero_gradient():
    # A DLPack view of an intermediate shares its memory but was made by no recorded op.
    def f(x):
        y = x * 2.0
        alias = mycel.from_dlpack(y.asnumpy())  # zero-copy: numpy's view of y, then ours
        return (alias * 3.0).sum()

    x = Tensor(np.ones((2, 2), np.float32))
    with pytest.raises(RuntimeError, match=r"\[grad\].*shares memory.*not made by a recorded op"):
        mycel.grad(f)(x)


class Res(nn.Cell):
    def __init__(self, c, inner):
        super().__init__()
        self.layers = nn.SequentialCell([nn.Dense(c, c) for _ in range(inner)])

    def construct(self, x):
        return x + self.layers(x)


def _deep_residual(depth):
    mycel.set_seed(0)
    net = nn.SequentialCell([Res(8, 3) for _ in range(depth)])
    rng = np.random.default_rng(0)
    x = Tensor((rng.standard_normal((4, 8)) * 0.1).astype(np.float32))
    y = Tensor(rng.standard_normal((4, 8)).astype(np.float32))
    return net, x, y


@pytest.mark.parametrize("depth", [14, 20])
def test_deep_residual_train_step_updates_every_parameter_by_its_gradient(depth):
    net, x, y = _deep_residual(depth)
    params = net.trainable_params()
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    before = [p.asnumpy().copy() for p in params]
    grads = [g.asnumpy() for g in mycel.grad(loss_net, grad_position=None, weights=params)(x, y)]
    assert all(np.abs(g).max() > 0 for g in grads)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    step = nn.TrainOneStepCell(loss_net, nn.SGD(params, 0.5))
    step(x, y)
    for p, b, g in zip(params, before, grads):
        np.testing.assert_allclose(p.asnumpy(), b - 0.5 * g, rtol=1e-4, atol=1e-6, err_msg=p.name)


def test_deep_residual_value_and_grad_inside_a_graph():
    net, x, y = _deep_residual(14)
    params = net.trainable_params()
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    eager = [g.asnumpy() for g in mycel.grad(loss_net, grad_position=None, weights=params)(x, y)]

    class Step(nn.Cell):
        def __init__(self):
            super().__init__()
            self.vg = mycel.value_and_grad(loss_net, None, params)

        def construct(self, a, b):
            return self.vg(a, b)[1]

    mycel.set_context(mode=mycel.GRAPH_MODE)
    graph = [g.asnumpy() for g in Step()(x, y)]
    for p, e, g in zip(params, eager, graph):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-6, err_msg=p.name)


class Block(nn.Cell):
    """A block whose `conv_dw` exists only when its stride needs it (GoogLeNet, RegNet, GhostNet)."""

    def __init__(self, stride, act=None):
        super().__init__()
        self.stride = stride
        self.act = act
        self.use_scale = stride > 1
        if stride > 1:
            self.conv_dw = nn.Dense(4, 4)

    def construct(self, x):
        if self.stride > 1:
            x = self.conv_dw(x)
        if self.act is not None:
            x = self.act(x)
        if self.stride > 1 and self.use_scale:
            x = x * 2.0
        y = self.conv_dw(x) if self.stride == 2 else x
        return y


@pytest.mark.parametrize("stride", [1, 2])
def test_constant_false_branches_are_not_parsed(stride):
    mycel.set_seed(0)
    net = Block(stride, nn.ReLU() if stride == 2 else None)
    x = Tensor(np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32))
    eager = net(x).asnumpy()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    np.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-6)


def test_drop_path_tuple_repetition_by_rank():
    class DropPathShape(nn.Cell):
        def construct(self, x):
            shape = (x.shape[0],) + (1,) * (x.ndim - 1)
            mask = ops.ones(shape, mycel.float32)
            return x * mask, 2 * (3,)

    x = Tensor(np.ones((2, 3, 4), np.float32))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    out, rep = DropPathShape()(x)
    assert out.shape == (2, 3, 4) and tuple(rep) == (3, 3)


@pytest.mark.parametrize("mode", MODES)
def test_split_into_one_part_is_a_one_tuple(mode):
    mycel.set_context(mode=mode)

    class Net(nn.Cell):
        def construct(self, x):
            parts = ops.split(x, 1, 1)
            return parts[0] * 2.0, len(parts)

    x = Tensor(np.ones((2, 3), np.float32))
    y, n = Net()(x)
    assert int(n) == 1
    np.testing.assert_array_equal(y.asnumpy(), np.full((2, 3), 2.0, np.float32))
    assert isinstance(ops.split(x, 1, 1), tuple)
