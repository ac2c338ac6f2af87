"""Graph-kernel fusion of reductions through TE (MYCEL_TE_FUSION=1): an elementwise chain feeding a
sum or mean (softmax's sum, layer norm's mean and variance, a bias gradient, a loss) becomes one
fused_reduce[te] kernel, forward and backward. References: numpy, and the same steps compiled
without TE fusion (the unfused reductions)."""
import os

import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops
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
    assert not fused_reduces(G.compile(Softmax()).program_text(x))
