"""Graph-kernel fusion of reductions through TE (MYCEL_TE_FUSION=1; the default fuses them too, see
test_te_reduce_order.py): an elementwise chain feeding a
sum or mean (softmax's sum, layer norm's mean and variance, a bias gradient, a loss) becomes one
fused_reduce[te] kernel, forward and backward. References: numpy, and the same steps compiled
without TE fusion (the unfused reductions)."""
import os

import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops, te
from mycel._mycel import graph as G
from train_helpers import WithLoss
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)


@pytest.fixture(autouse=True)
def graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    os.environ.pop("MYCEL_TE_FUSION", None)
    ms.set_context(mode=ms.PYNATIVE_MODE)


def with_te_fusion(fn):
    os.environ["MYCEL_TE_FUSION"] = "1"
    try:
        return fn()
    finally:
        os.environ.pop("MYCEL_TE_FUSION", None)


def fused_reduces(text):
    return [line for line in text.splitlines() if "fused_reduce[te]{" in line]


def forward_and_grads(make, args, positions):
    """(output, grads) of a fresh net, compiled under the current MYCEL_TE_FUSION."""
    net = make()
    grad = ms.grad(make(), grad_position=positions)
    return net(*args).asnumpy(), [g.asnumpy() for g in grad(*args)]


def check_same(make, args, positions, rtol=1e-5, atol=1e-6):
    ref_out, ref_grads = forward_and_grads(make, args, positions)
    out, grads = with_te_fusion(lambda: forward_and_grads(make, args, positions))
    np.testing.assert_allclose(out, ref_out, rtol=rtol, atol=atol)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g, r, rtol=rtol * 10, atol=atol * 10)
    return out


class Softmax(nn.Cell):
    def construct(self, x):
        e = ops.exp(x - ops.max(x, axis=-1, keep_dims=True))
        return e / ops.sum(e, axis=-1, keep_dims=True)


def test_softmax_sum_fused_with_its_exp():
    xv = np.random.default_rng(0).standard_normal((32, 45)).astype(np.float32)
    x = ms.Tensor(xv)
    out = check_same(Softmax, (x,), 0)
    e = np.exp(xv - xv.max(-1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    fused = fused_reduces(with_te_fusion(lambda: G.compile(Softmax()).program_text(x)))
    # exp(x - max) is also read by the division: the kernel writes it and its row sums
    assert any("exp" in f and "sum(1, keep_dims)" in f for f in fused), fused


class Norm(nn.Cell):
    def construct(self, x, g, b):
        mu = ops.mean(x, axis=-1, keep_dims=True)
        d = x - mu
        var = ops.mean(d * d, axis=-1, keep_dims=True)
        return d / ops.sqrt(var + 1e-5) * g + b


def test_layer_norm_mean_and_variance_forward_and_backward():
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((24, 40)).astype(np.float32)
    gv, bv = rng.standard_normal(40).astype(np.float32), rng.standard_normal(40).astype(np.float32)
    args = tuple(ms.Tensor(v) for v in (xv, gv, bv))
    out = check_same(Norm, args, (0, 1, 2), rtol=1e-4, atol=1e-5)
    mu = xv.mean(-1, keepdims=True)
    ref = (xv - mu) / np.sqrt(((xv - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * gv + bv
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    fused = fused_reduces(with_te_fusion(lambda: G.compile(Norm()).program_text(*args)))
    assert any("mean(1, keep_dims)" in f for f in fused), fused


class Mlp(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(12, 16)
        self.fc2 = nn.Dense(16, 3)

    def construct(self, x):
        return self.fc2(ops.relu(self.fc1(x)) * 0.5)


def test_training_step_bias_gradients_and_loss():
    # The backward's bias-gradient sums over the batch and the squared-error loss's sum fuse with
    # the chains that feed them; the losses of three SGD steps equal the unfused ones.
    rng = np.random.default_rng(2)
    x = ms.Tensor(rng.standard_normal((8, 12)).astype(np.float32))
    t = ms.Tensor(rng.standard_normal((8, 3)).astype(np.float32))

    class Loss(nn.Cell):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def construct(self, x, t):
            d = self.net(x) - t
            return ops.sum(d * d * 0.5)

    def losses():
        ms.set_seed(5)
        net = Mlp()
        step = nn.TrainOneStepCell(Loss(net), nn.SGD(net.trainable_params(), 0.05))
        return [float(step(x, t).asnumpy()) for _ in range(3)], step

    ref, _ = losses()
    got, step = with_te_fusion(losses)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    assert got[-1] < got[0]
    fused = fused_reduces(with_te_fusion(lambda: G.compile(step).program_text(x, t)))
    assert any("sum(0)" in f for f in fused), fused   # a bias gradient over the batch
    assert any("sum(0,1)" in f for f in fused), fused  # the loss


def test_without_te_fusion_reductions_stay_unfused():
    x = ms.Tensor(np.ones((4, 5), np.float32))
    os.environ["MYCEL_TE_FUSION"] = "0"
    text = G.compile(Softmax()).program_text(x)
    assert "fused_reduce" not in text, text
    os.environ.pop("MYCEL_TE_FUSION")  # the default fuses, named as the interpreter's
    assert "fused_reduce{" in G.compile(Softmax()).program_text(x)


class Extrema(nn.Cell):
    def construct(self, x, a):
        top = ops.max(ops.abs(x * a - 1.0), axis=-1, keep_dims=True)   # (rows, 1)
        low = ops.min(ops.exp(x) * a, axis=0)                           # (cols,)
        return top + low


def test_max_min_after_te_chains_nan_propagating():
    # max / min fused with the TE chains that feed them (ReduceFusion kMax / kMin) equal the
    # default bit for bit, a NaN anywhere in a row (column) giving NaN there, as numpy.
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((16, 37)).astype(np.float32)
    av = rng.standard_normal((16, 37)).astype(np.float32)
    xv[3, 5] = np.nan          # row 3 of max, column 5 of min
    av[9, 30] = np.nan         # row 9, column 30
    xv[12, 0] = -np.inf        # exp(-inf) * a = 0 * a: a finite minimum candidate
    args = (ms.Tensor(xv), ms.Tensor(av))
    ref = Extrema()(*args).asnumpy()
    got = with_te_fusion(lambda: Extrema()(*args).asnumpy())
    np.testing.assert_array_equal(got, ref)
    with np.errstate(invalid="ignore"):
        expect = (np.max(np.abs(xv * av - 1), -1, keepdims=True)
                  + np.min(np.exp(xv.astype(np.float64)) * av, 0))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expect))
    assert np.isnan(got[3]).all() and np.isnan(got[9]).all() and np.isnan(got[:, 5]).all()
    np.testing.assert_allclose(got, expect, rtol=1e-6, atol=1e-6)
    fused = fused_reduces(with_te_fusion(lambda: G.compile(Extrema()).program_text(*args)))
    assert any("abs" in f and "max(1, keep_dims)" in f for f in fused), fused
    assert any("exp" in f and "min(0)" in f for f in fused), fused


def test_max_min_after_te_chains_gradients():
    # Without NaN: forward and backward (the gradient goes to the elements equal to the
    # extremum) equal to the default's bit for bit.
    rng = np.random.default_rng(4)
    xv, av = (rng.standard_normal((16, 37)).astype(np.float32) for _ in range(2))
    args = (ms.Tensor(xv), ms.Tensor(av))
    check_same(Extrema, args, (0, 1), rtol=0, atol=0)


def test_te_max_min_reductions_propagate_nan():
    # te.max / te.min over a row (a simd reduction with a NaN flag), over a column (the output row
    # as the accumulator) and over everything: NaN propagates, as numpy's max / min.
    n, m = 9, 70
    x = te.placeholder((n, m), "float32", "x")
    k, k0 = te.reduce_axis((0, m), "k"), te.reduce_axis((0, n), "k0")
    ka, kb = te.reduce_axis((0, n), "ka"), te.reduce_axis((0, m), "kb")
    rmax = te.compute((n,), lambda i: te.max(x[i, k] * 2.0, axis=k), "rmax")
    cmin = te.compute((m,), lambda j: te.min(x[k0, j] - 1.0, axis=k0), "cmin")
    amax = te.compute((1,), lambda i: te.max(x[ka, kb], axis=[ka, kb]), "amax")
    fn = te.build([x], [rmax, cmin, amax])
    xv = np.random.default_rng(5).standard_normal((n, m)).astype(np.float32)
    for bad in [(2, 0), (2, 69), (5, 33), (8, 12)]:
        xv[bad] = np.nan
    got = [t.asnumpy() for t in fn(xv)]
    np.testing.assert_array_equal(got[0], np.max(xv * 2, 1))
    np.testing.assert_array_equal(got[1], np.min(xv - 1, 0))
    assert np.isnan(got[2]).all()
    clean = np.nan_to_num(xv, nan=0.5)
    got = [t.asnumpy() for t in fn(clean)]
    np.testing.assert_array_equal(got[0], np.max(clean * 2, 1))
    np.testing.assert_array_equal(got[2], [clean.max()])

