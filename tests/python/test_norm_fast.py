"""The float32 batch_norm (forward, backward) and layer_norm backward loops
(kernels/cpu/norm_fast.cc) against float64 numpy closed forms: odd channel counts and planes or
rows whose length is no multiple of the 8 float lanes, the moving statistics, and gradients for
the input and the affine parameters; PyNative and a warm graph step."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from bf16_reference import bf16_round

RNG = np.random.default_rng(11)


def bn_reference(x, gamma, beta, w, eps):
    """y and the gradients of sum(y * w) for training-mode batch norm over (N, C, ...)."""
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mu = x.mean(axis=axes)
    var = x.var(axis=axes)
    inv = 1 / np.sqrt(var + eps)
    xhat = (x - mu.reshape(shape)) * inv.reshape(shape)
    y = gamma.reshape(shape) * xhat + beta.reshape(shape)
    m = x.size / x.shape[1]
    dbeta = w.sum(axis=axes)
    dgamma = (w * xhat).sum(axis=axes)
    dx = (gamma * inv / m).reshape(shape) * (m * w - dbeta.reshape(shape) - xhat * dgamma.reshape(shape))
    return y, dx, dgamma, dbeta, mu, x.var(axis=axes, ddof=1)


def close(got, ref, tol=2e-5, scale=None):
    """Within tol of the largest |ref| (or of `scale`: the size of the terms that cancel)."""
    got = got.asnumpy() if isinstance(got, Tensor) else got
    assert got.shape == ref.shape
    scale = np.abs(ref).max() + 1e-3 if scale is None else scale
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol * scale)


class Weighted(nn.Cell):
    """sum(f(x) * w): its gradient with respect to f's output is w."""

    def __init__(self, f, w):
        super().__init__()
        self.f = f
        self.w = Tensor(w.astype(np.float32))

    def construct(self, x):
        return (self.f(x) * self.w).sum()


@pytest.mark.parametrize("shape", [(4, 7, 5, 3), (3, 9, 11, 13), (32, 16, 4, 4)])
@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_batch_norm_training_forward_and_grads(shape, mode):
    mycel.set_context(mode=mycel.GRAPH_MODE if mode == "graph" else mycel.PYNATIVE_MODE)
    try:
        c = shape[1]
        x = (RNG.standard_normal(shape) * 2 + 0.5).astype(np.float32)
        w = RNG.standard_normal(shape)
        gamma = RNG.uniform(0.5, 1.5, c).astype(np.float32)
        beta = RNG.standard_normal(c).astype(np.float32)
        bn = nn.BatchNorm2d(c, momentum=0.8)
        bn.gamma.set_data(Tensor(gamma))
        bn.beta.set_data(Tensor(beta))
        bn.set_train(True)
        net = Weighted(bn, w)
        y_ref, dx_ref, dg_ref, db_ref, mu, var1 = bn_reference(x.astype(np.float64), gamma, beta, w, 1e-5)
        grad = ops.GradOperation(get_all=True, get_by_list=True)(net, [bn.gamma, bn.beta])
        steps = 2 if mode == "graph" else 1  # the second graph step runs the warm launch
        for _ in range(steps):
            (dx,), (dg, db) = grad(Tensor(x))
            close(dx, dx_ref)
            close(dg, dg_ref)
            close(db, db_ref)
        close(bn(Tensor(x)), y_ref)
        # Each call above updated the moving statistics once: moving = 0.8 moving + 0.2 batch.
        calls = steps + 1
        keep = 0.8 ** calls
        close(bn.moving_mean.asnumpy(), (1 - keep) * mu)
        close(bn.moving_variance.asnumpy(), keep * 1 + (1 - keep) * var1)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_batch_norm_inference_uses_moving_statistics():
    x = RNG.standard_normal((2, 5, 3, 7)).astype(np.float32)
    bn = nn.BatchNorm2d(5)
    mean, var = RNG.standard_normal(5).astype(np.float32), RNG.uniform(0.5, 2, 5).astype(np.float32)
    bn.moving_mean.set_data(Tensor(mean))
    bn.moving_variance.set_data(Tensor(var))
    bn.set_train(False)
    ref = (x - mean.reshape(1, -1, 1, 1)) / np.sqrt(var.reshape(1, -1, 1, 1) + 1e-5)
    close(bn(Tensor(x)), ref.astype(np.float64))


@pytest.mark.parametrize("shape", [(3, 5, 37), (2, 64, 128), (7, 1)])
def test_layer_norm_grads(shape):
    d = shape[-1]
    x = (RNG.standard_normal(shape) * 3 - 1).astype(np.float32)
    w = RNG.standard_normal(shape)
    gamma = RNG.uniform(0.5, 1.5, d).astype(np.float32)
    beta = RNG.standard_normal(d).astype(np.float32)
    ln = nn.LayerNorm((d,), begin_norm_axis=-1, begin_params_axis=-1)
    ln.gamma.set_data(Tensor(gamma))
    ln.beta.set_data(Tensor(beta))
    net = Weighted(ln, w)
    xd = x.astype(np.float64)
    mu = xd.mean(-1, keepdims=True)
    rs = 1 / np.sqrt(xd.var(-1, keepdims=True) + 1e-5)
    xhat = (xd - mu) * rs
    dxhat = w * gamma
    dx_ref = rs / d * (d * dxhat - dxhat.sum(-1, keepdims=True) - xhat * (dxhat * xhat).sum(-1, keepdims=True))
    axes = tuple(range(len(shape) - 1))
    (dx,), (dg, db) = ops.GradOperation(get_all=True, get_by_list=True)(net, [ln.gamma, ln.beta])(Tensor(x))
    close(dx, dx_ref, scale=np.abs(rs * dxhat).max())  # d == 1: terms of 1/sqrt(eps) cancel to 0
    close(dg, (w * xhat).sum(axis=axes))
    close(db, w.sum(axis=axes))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", [(5, 1), (3, 7, 37), (2048, 128), (6, 1000)])
def test_layer_norm_forward_rows_match_numpy_and_onednn(shape, dtype, threads, monkeypatch):
    """layer_norm's forward rows (norm_fast.cc) against float64 numpy, and against oneDNN's
    primitive (MYCEL_LAYER_NORM_ROWS=0) within the output's rounding; a NaN stays in its row."""
    mycel.set_context(num_threads=threads)
    d = shape[-1]
    x = (RNG.standard_normal(shape) * 3 + 1.5).astype(np.float32)
    x.reshape(-1, d)[-1, 0] = np.nan
    if dtype == "bfloat16":
        x = bf16_round(x)
    gamma = RNG.uniform(0.5, 1.5, d).astype(np.float32)
    beta = RNG.standard_normal(d).astype(np.float32)

    def run():
        xt = Tensor(x, dtype=getattr(mycel, dtype))
        y, mean, rstd = ops.layer_norm(xt, Tensor(gamma), Tensor(beta), epsilon=1e-5)
        assert y.dtype == xt.dtype and mean.dtype == mycel.float32 and rstd.dtype == mycel.float32
        return [t.astype(mycel.float32).asnumpy().astype(np.float64) for t in (y, mean, rstd)]

    xd = x.astype(np.float64)
    mu = xd.mean(-1, keepdims=True)
    rs = 1 / np.sqrt(xd.var(-1, keepdims=True) + 1e-5)
    y_ref = (xd - mu) * rs * gamma + beta
    tol = 2 ** -8 if dtype == "bfloat16" else 1e-5  # the output's rounding
    got = run()
    monkeypatch.setenv("MYCEL_LAYER_NORM_ROWS", "0")
    onednn = run()
    rows = x.reshape(-1, d).shape[0]
    finite = np.arange(rows) != rows - 1  # the last row holds the NaN
    for g, o, ref in zip(got, onednn, (y_ref, mu, rs)):
        g, o, ref = (a.reshape(rows, -1) for a in (g, o, ref))
        assert np.isnan(g[~finite]).all()
        close(g[finite], ref[finite], tol)
        close(g[finite], o[finite], 2 * tol)
