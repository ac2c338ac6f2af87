"""ApplyAdamWithAmsgrad, SparseApplyRMSProp and FusedAdaFactor against numpy references of their
documented updates (two steps, so the state each writes is read back), graph and PyNative."""
import numpy as np
import pytest

import mycel as ms
from mycel import context, nn, ops
from mycel.ops import operations as P

RNG = np.random.default_rng(7)


@pytest.fixture(params=[context.GRAPH_MODE, context.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    old = context.get_context("mode")
    context.set_context(mode=request.param)
    yield request.param
    context.set_context(mode=old)


def param(a, name):
    return ms.Parameter(ms.Tensor(np.array(a)), name=name)


class Amsgrad(nn.Cell):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, var, m, v, vhat, beta1_power, beta2_power, lr, grad):
        return self.op(var, m, v, vhat, beta1_power, beta2_power, lr, grad)


class RMSProp(nn.Cell):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, var, ms_, mom, lr, grad, indices):
        return self.op(var, ms_, mom, lr, grad, indices)


class AdaFactor(nn.Cell):
    """The state passed in as Parameters, the hyper-parameters held by the Cell."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, grad, param, exp_avg, row, col, sq):
        return self.op((1e-30, 1e-3), 1.0, 0.9, 0.8, 1e-2, 0.03, grad, param, exp_avg, row, col, sq)


class AdaFactorNorm(AdaFactor):
    def construct(self, grad, param, exp_avg, row, col, sq, global_norm):
        return self.op((1e-30, 1e-3), 1.0, 0.9, 0.8, 1e-2, 0.03, grad, param, exp_avg, row, col, sq, global_norm)


def test_apply_adam_with_amsgrad(mode):
    shape = (3, 4)
    var0, m0, v0 = (RNG.normal(size=shape).astype(np.float32) for _ in range(3))
    v0 = np.abs(v0)
    vhat0 = np.abs(RNG.normal(size=shape)).astype(np.float32)
    var, m, v, vhat = param(var0, "var"), param(m0, "m"), param(v0, "v"), param(vhat0, "vhat")
    net = Amsgrad(P.ApplyAdamWithAmsgrad(beta1=0.8, beta2=0.9, epsilon=1e-6))
    w, mm, vv, vh = (x.astype(np.float64) for x in (var0, m0, v0, vhat0))
    for step in range(1, 3):
        g = RNG.normal(size=shape).astype(np.float32)
        b1p, b2p = 0.8 ** step, 0.9 ** step
        out = net(var, m, v, vhat, ms.Tensor(np.float32(b1p)), ms.Tensor(np.float32(b2p)),
                  ms.Tensor(np.float32(0.01)), ms.Tensor(g))
        mm = 0.8 * mm + 0.2 * g
        vv = 0.9 * vv + 0.1 * g * g
        vh = np.maximum(vh, vv)
        w = w - 0.01 * np.sqrt(1 - b2p) / (1 - b1p) * mm / (np.sqrt(vh) + 1e-6)
        for got, want in zip(out, (w, mm, vv, vh)):
            np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var.asnumpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vhat.asnumpy(), vh, rtol=1e-5, atol=1e-6)


def rmsprop_ref(var, ms_, mom, lr, grad, idx, rho, momentum, eps):
    """MindSpore's kernel, row by row: ms moves only where |grad| > float32 epsilon."""
    var, ms_, mom = (x.astype(np.float32).copy() for x in (var, ms_, mom))
    for g, i in zip(grad.astype(np.float32), idx):
        moved = np.abs(g) > np.finfo(np.float32).eps
        ms_[i] = np.where(moved, ms_[i] * rho + g * g * (1 - rho), ms_[i])
        mom[i] = mom[i] * momentum + lr * g / np.sqrt(ms_[i] + eps)
        var[i] = var[i] - mom[i]
    return var, ms_, mom


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_sparse_apply_rms_prop(mode, dtype):
    shape = (4, 2, 3)
    var0 = RNG.normal(size=shape).astype(dtype)
    ms0 = RNG.uniform(0.5, 2, size=shape).astype(dtype)
    mom0 = RNG.normal(size=shape).astype(dtype)
    grad = RNG.normal(size=(2, 2, 3)).astype(dtype)
    grad[1, 0] = 0  # ms stays there
    idx = np.array([2, 0], np.int32)
    var, ms_, mom = param(var0, "var"), param(ms0, "ms"), param(mom0, "mom")
    net = RMSProp(P.SparseApplyRMSProp(0.3, 0.1, 1e-6))
    out = net(var, ms_, mom, ms.Tensor(np.array(0.05, dtype)), ms.Tensor(grad), ms.Tensor(idx))
    want = rmsprop_ref(var0, ms0, mom0, dtype(0.05), grad, idx, 0.3, 0.1, 1e-6)
    tol = 1e-6 if dtype == np.float32 else 2e-3
    for got, state, w in zip(out, (var, ms_, mom), want):
        np.testing.assert_allclose(got.asnumpy().astype(np.float32), w, rtol=tol, atol=tol)
        np.testing.assert_allclose(state.asnumpy().astype(np.float32), w, rtol=tol, atol=tol)
    np.testing.assert_array_equal(ms_.asnumpy()[1], ms0[1])  # a row indices does not name


def test_sparse_apply_rms_prop_checks_attributes():
    with pytest.raises(ValueError, match="'rho' must be in"):
        P.SparseApplyRMSProp(1.5, 0.1, 1e-6)
    with pytest.raises(TypeError, match="'momentum' must be a float"):
        P.SparseApplyRMSProp(0.5, "0.1", 1e-6)


def adafactor_ref(eps, clip, beta1, beta2t, wd, lr, grad, param_, exp_avg, row, col, sq, flags, inv_norm=1.0):
    """Adafactor as MindSpore documents it, with its kernel's floors (1e-30), in float64."""
    scale, first, decay = flags
    tiny = 1e-30
    g = grad.astype(np.float64) * inv_norm
    u = g * g + eps[0]
    if param_.ndim >= 2:
        row = beta2t * row + (1 - beta2t) * u.mean(-1)
        r = np.sqrt(row / np.maximum(row.mean(-1, keepdims=True), tiny))
        col = np.maximum(beta2t * col + (1 - beta2t) * u.mean(-2), tiny)
        upd = g / np.maximum(r[..., :, None] * np.sqrt(col)[..., None, :], tiny)
    else:
        sq = np.maximum(beta2t * sq + (1 - beta2t) * u, tiny)
        upd = g / np.sqrt(sq)
    if scale:
        lr = lr * max(eps[1], np.sqrt(np.mean(param_ ** 2)))
    upd = upd * lr / max(np.sqrt(np.mean(upd ** 2)) / clip, 1.0)
    if first:
        upd = beta1 * exp_avg + (1 - beta1) * upd
        exp_avg = upd
    if decay:
        upd = upd + param_ * wd * lr
    return param_ - upd, exp_avg, row, col, sq


@pytest.mark.parametrize("shape", [(2, 3, 4), (5,)])
@pytest.mark.parametrize("flags", [(False, False, False), (True, True, True)])
def test_fused_ada_factor(mode, shape, flags):
    p0 = RNG.normal(size=shape).astype(np.float32)
    avg0 = RNG.normal(size=shape).astype(np.float32) * 0.1
    row0 = RNG.uniform(0.1, 1, size=shape[:-1]).astype(np.float32)
    col0 = RNG.uniform(0.1, 1, size=shape[:-2] + shape[-1:]).astype(np.float32)
    sq0 = RNG.uniform(0.1, 1, size=shape).astype(np.float32)
    state = [param(p0, "param"), param(avg0, "exp_avg"), param(row0, "row"), param(col0, "col"),
             param(sq0, "sq")]
    net = AdaFactor(ops.FusedAdaFactor(*flags))
    ref = [x.astype(np.float64) for x in (p0, avg0, row0, col0, sq0)]
    for _ in range(2):
        g = RNG.normal(size=shape).astype(np.float32)
        out = net(ms.Tensor(g), *state)
        ref = list(adafactor_ref((1e-30, 1e-3), 1.0, 0.9, 0.8, 1e-2, 0.03, g, *ref, flags))
        np.testing.assert_allclose(out.asnumpy(), ref[0], rtol=1e-5, atol=1e-6)
    for got, want in zip(state, ref):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_fused_ada_factor_with_global_norm(mode):
    shape = (3, 4)
    p0 = RNG.normal(size=shape).astype(np.float32)
    zeros = [np.zeros(s, np.float32) for s in (shape, (3,), (4,), shape)]
    state = [param(p0, "param")] + [param(z, f"s{i}") for i, z in enumerate(zeros)]
    g = RNG.normal(size=shape).astype(np.float32)
    out = AdaFactorNorm(ops.FusedAdaFactorWithGlobalNorm())(ms.Tensor(g), *state, 10.0)
    want = adafactor_ref((1e-30, 1e-3), 1.0, 0.9, 0.8, 1e-2, 0.03, g, p0.astype(np.float64),
                         *[z.astype(np.float64) for z in zeros], (False, False, False), inv_norm=0.1)
    np.testing.assert_allclose(out.asnumpy(), want[0], rtol=1e-5, atol=1e-6)
