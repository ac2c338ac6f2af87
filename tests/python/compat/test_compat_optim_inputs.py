"""MindSpore's in-place primitives on state the Cell does not own: a Parameter (or a Tensor)
passed to construct is updated by SparseApplyAdagrad, ApplyGradientDescent, ScatterAdd, ... in
graph mode as in PyNative (numpy references), and Parameter.data is the Parameter."""
import numpy as np
import pytest

import mycel as ms
from mycel import context, nn, ops
from mycel.ops import operations as P

RNG = np.random.default_rng(3)
VAR = RNG.normal(size=(4, 3)).astype(np.float32)
ACC = RNG.uniform(0.1, 1.0, size=(4, 3)).astype(np.float32)
GRAD = RNG.normal(size=(2, 3)).astype(np.float32)
IDX = np.array([3, 1], np.int32)


@pytest.fixture(params=[context.GRAPH_MODE, context.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    old = context.get_context("mode")
    context.set_context(mode=request.param)
    yield request.param
    context.set_context(mode=old)


def adagrad_ref(var, acc, grad, idx, lr):
    var, acc = var.copy(), acc.copy()
    for g, i in zip(grad, idx):
        acc[i] += g * g
        var[i] -= lr * g / np.sqrt(acc[i])
    return var, acc


class SparseAdagradNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.op = P.SparseApplyAdagrad(lr=0.1)

    def construct(self, var, accum, grad, indices):
        return self.op(var, accum, grad, indices)


def test_parameter_arguments_are_updated(mode):
    var = ms.Parameter(ms.Tensor(VAR), name="var")
    acc = ms.Parameter(ms.Tensor(ACC), name="accum")
    net = SparseAdagradNet()
    want_var, want_acc = VAR, ACC
    for _ in range(2):  # the second call reads the first one's writes
        out_var, out_acc = net(var, acc, ms.Tensor(GRAD), ms.Tensor(IDX))
        want_var, want_acc = adagrad_ref(want_var, want_acc, GRAD, IDX, 0.1)
        np.testing.assert_allclose(out_var.asnumpy(), want_var, rtol=1e-6)
        np.testing.assert_allclose(out_acc.asnumpy(), want_acc, rtol=1e-6)
    np.testing.assert_allclose(var.asnumpy(), want_var, rtol=1e-6)
    np.testing.assert_allclose(acc.asnumpy(), want_acc, rtol=1e-6)


def test_tensor_argument_is_updated_as_in_pynative(mode):
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.op = P.ApplyGradientDescent()

        def construct(self, var, alpha, delta):
            return self.op(var, alpha, delta)

    var = ms.Tensor(VAR.copy())
    out = Net()(var, ms.Tensor(np.float32(0.5)), ms.Tensor(VAR * 2))
    np.testing.assert_allclose(out.asnumpy(), VAR - VAR, atol=1e-7)
    np.testing.assert_allclose(var.asnumpy(), VAR - VAR, atol=1e-7)


def test_reads_of_the_argument_see_the_old_value(mode):
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.op = P.ScatterAdd()

        def construct(self, x, indices, updates):
            before = x * 2.0  # runs before the write, wherever the scheduler puts it
            return self.op(x, indices, updates), before

    x = ms.Parameter(ms.Tensor(VAR), name="x")
    out, before = Net()(x, ms.Tensor(IDX), ms.Tensor(GRAD))
    want = VAR.copy()
    np.add.at(want, IDX, GRAD)
    np.testing.assert_allclose(before.asnumpy(), VAR * 2.0, rtol=1e-6)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    np.testing.assert_allclose(x.asnumpy(), want, rtol=1e-6)


def test_vmap_over_parameter_arguments(mode):
    var = ms.Parameter(ms.Tensor(np.stack([VAR, VAR + 1])), name="bvar")
    acc = ms.Parameter(ms.Tensor(np.stack([ACC, ACC * 2])), name="baccum")
    grad = np.stack([GRAD, -GRAD])
    idx = np.stack([IDX, IDX[::-1]])
    out_var, out_acc = ops.vmap(SparseAdagradNet(), in_axes=(0, 0, 0, 0))(var, acc, ms.Tensor(grad),
                                                                            ms.Tensor(idx))
    for b, (v0, a0) in enumerate([(VAR, ACC), (VAR + 1, ACC * 2)]):
        want_var, want_acc = adagrad_ref(v0, a0, grad[b], idx[b], 0.1)
        np.testing.assert_allclose(out_var.asnumpy()[b], want_var, rtol=1e-6)
        np.testing.assert_allclose(out_acc.asnumpy()[b], want_acc, rtol=1e-6)


def test_assign_to_a_computed_value_is_a_clear_error():
    class Net(nn.Cell):
        def construct(self, x):
            return ops.assign(x * 2.0, x)

    old = context.get_context("mode")
    context.set_context(mode=context.GRAPH_MODE)
    try:
        with pytest.raises(TypeError, match=r"\[assign\] argument 'variable' must be a Parameter .* computed value"):
            Net()(ms.Tensor(VAR))
    finally:
        context.set_context(mode=old)


def test_an_input_written_in_a_loop_is_a_clear_error():
    class Net(nn.Cell):
        def construct(self, x, n):
            i = 0
            while i < n:
                ops.assign(x, x + 1.0)
                i += 1
            return x

    old = context.get_context("mode")
    context.set_context(mode=context.GRAPH_MODE)
    try:
        with pytest.raises(NotImplementedError, match="write an input outside loops"):
            Net()(ms.Parameter(ms.Tensor(VAR), name="looped"), 3)
    finally:
        context.set_context(mode=old)


def test_sparse_adagrad_rejects_float64():
    var = ms.Parameter(ms.Tensor(VAR.astype(np.float64)), name="v64")
    acc = ms.Parameter(ms.Tensor(ACC.astype(np.float64)), name="a64")
    with pytest.raises(TypeError, match="SparseApplyAdagrad: 'var' must be float16 or float32"):
        P.SparseApplyAdagrad(lr=0.1)(var, acc, ms.Tensor(GRAD.astype(np.float64)), ms.Tensor(IDX))


def test_parameter_data_is_the_parameter():
    p = ms.Parameter(ms.Tensor(VAR), name="p")
    assert p.data is p
    P.ScatterAdd()(p.data, ms.Tensor(IDX), ms.Tensor(GRAD))
    want = VAR.copy()
    np.add.at(want, IDX, GRAD)
    np.testing.assert_allclose(p.data.asnumpy(), want, rtol=1e-6)
