"""batch_norm and layer_norm on bfloat16 activations with float32 parameters and statistics (amp
O2's norms, kernels/cpu/norm_fast.cc, oneDNN's bf16 layer norm): forward, moving statistics and
gradients against float64 numpy closed forms on the same bf16-valued data, against the float32
kernel, and the O2 wiring (BatchNorm and LayerNorm take their bf16 input uncast; the step still
tracks the float32 one)."""
import numpy as np
import pytest

import mycel
from mycel import amp, nn, ops, Tensor
from bf16_reference import bf16_round

from test_norm_fast import Weighted, bn_reference

RNG = np.random.default_rng(19)
BF16_EPS = 2.0 ** -8  # bfloat16's unit roundoff: 8 significant bits


def bf16_values(a):
    """a rounded to bfloat16 (round to nearest even), as float64: what a bf16 tensor holds."""
    return bf16_round(a).astype(np.float64)


def close(got, ref, tol):
    """Within tol of the largest |ref|."""
    got = got.asnumpy().astype(np.float64) if isinstance(got, Tensor) else got
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol * (np.abs(ref).max() + 1e-3))


@pytest.mark.parametrize("shape", [(4, 7, 5, 3), (8, 16, 9, 9), (2, 3, 17, 1)])
@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_bf16_activations_float32_statistics(shape, mode):
    mycel.set_context(mode=mycel.GRAPH_MODE if mode == "graph" else mycel.PYNATIVE_MODE)
    c = shape[1]
    x = bf16_values(RNG.standard_normal(shape) * 3 + 1.5)
    w = bf16_values(RNG.standard_normal(shape))  # dy: the bf16 gradient a bf16 consumer sends
    gamma = RNG.uniform(0.5, 1.5, c).astype(np.float32)
    beta = RNG.standard_normal(c).astype(np.float32)
    bn = nn.BatchNorm2d(c, momentum=0.8)
    bn.gamma.set_data(Tensor(gamma))
    bn.beta.set_data(Tensor(beta))
    bn.set_train(True)
    net = Weighted(bn, w)
    net.w = Tensor(w.astype(np.float32), dtype=mycel.bfloat16)
    xt = Tensor(x.astype(np.float32), dtype=mycel.bfloat16)
    y_ref, dx_ref, dg_ref, db_ref, mu, var1 = bn_reference(x, gamma.astype(np.float64),
                                                           beta.astype(np.float64), w, 1e-5)
    grad = ops.GradOperation(get_all=True, get_by_list=True)(net, [bn.gamma, bn.beta])
    steps = 2 if mode == "graph" else 1  # the second graph step runs the warm launch
    for _ in range(steps):
        (dx,), (dg, db) = grad(xt)
        assert dx.dtype == mycel.bfloat16 and dg.dtype == mycel.float32 and db.dtype == mycel.float32
        close(dx, dx_ref, 2 * BF16_EPS)  # one rounding of the float32 result
        close(dg, dg_ref, 1e-5)  # float32 sums of bf16 values: no bf16 rounding
        close(db, db_ref, 1e-5)
    y = bn(xt)
    assert y.dtype == mycel.bfloat16
    close(y, y_ref, BF16_EPS)
    # The moving statistics stay float32 and see the same batch statistics as float32 would.
    assert bn.moving_mean.dtype == mycel.float32
    keep = 0.8 ** (steps + 1)
    close(bn.moving_mean.asnumpy().astype(np.float64), (1 - keep) * mu, 1e-5)
    close(bn.moving_variance.asnumpy().astype(np.float64), keep * 1 + (1 - keep) * var1, 1e-5)


def test_bf16_matches_the_float32_kernel_rounded():
    """The bf16 kernel computes in float32 what the float32 kernel computes on the same values:
    its output is the float32 kernel's output rounded once (ties aside: one bf16 ulp at most)."""
    shape = (16, 32, 8, 8)
    x = bf16_values(RNG.standard_normal(shape) * 2).astype(np.float32)
    g = Tensor(RNG.uniform(0.5, 1.5, 32).astype(np.float32))
    b = Tensor(RNG.standard_normal(32).astype(np.float32))

    def run(dtype):
        mean, var = Tensor(np.zeros(32, np.float32)), Tensor(np.ones(32, np.float32))
        y, sm, si = ops.batch_norm(Tensor(x, dtype=dtype), g, b, mean, var, is_training=True)
        return y.astype(mycel.float32).asnumpy(), sm.asnumpy(), si.asnumpy(), mean.asnumpy()

    y16, sm16, si16, m16 = run(mycel.bfloat16)
    y32, sm32, si32, m32 = run(mycel.float32)
    np.testing.assert_allclose(sm16, sm32, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(si16, si32, rtol=1e-6)
    np.testing.assert_allclose(m16, m32, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(y16, bf16_values(y32), rtol=0, atol=BF16_EPS * np.abs(y32).max())


class ConvBNReLU(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="same")
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(8 * 6 * 6, 4)

    def construct(self, x):
        return self.fc(self.flatten(self.relu(self.bn(self.conv(x)))))


def ln_reference(x, gamma, beta, w, eps, axis):
    """y and the gradients of sum(y * w) for layer norm over the dims from `axis` (float64)."""
    axes = tuple(range(axis, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    rs = 1 / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    xhat = (x - mu) * rs
    y = xhat * gamma + beta
    lead = tuple(range(gamma.ndim and x.ndim - gamma.ndim))
    dbeta = w.sum(axis=lead)
    dgamma = (w * xhat).sum(axis=lead)
    dxh = w * gamma
    m = np.prod([x.shape[a] for a in axes])
    dx = rs / m * (m * dxh - dxh.sum(axis=axes, keepdims=True)
                   - xhat * (dxh * xhat).sum(axis=axes, keepdims=True))
    return y, dx, dgamma, dbeta


class LNWeighted(nn.Cell):
    """sum(layer_norm(x, gamma, beta) * w) with gamma and beta float32 Parameters."""

    def __init__(self, gamma, beta, w, norm_axis, params_axis):
        super().__init__()
        self.gamma = mycel.Parameter(Tensor(gamma), name="gamma")
        self.beta = mycel.Parameter(Tensor(beta), name="beta")
        self.w = Tensor(w.astype(np.float32), dtype=mycel.bfloat16)
        self.norm_axis, self.params_axis = norm_axis, params_axis

    def construct(self, x):
        y, _, _ = ops.layer_norm(x, self.gamma, self.beta, begin_norm_axis=self.norm_axis,
                                 begin_params_axis=self.params_axis, epsilon=1e-5)
        return (y * self.w).sum()


# (shape, begin_norm_axis, begin_params_axis): oneDNN's path (params over the normalized dims,
# rows of 128 and of an odd length) and the widened reference (params over fewer dims).
# The first two (and the transformer step's 2048x128, split over the threads) take oneDNN's
# forward and norm_fast's bf16 rows backward.
LN_CASES = [((4, 16, 128), 2, 2), ((3, 5, 37), 2, 2), ((6, 4, 10), 1, 2), ((16, 128, 128), 2, 2)]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("shape,norm_axis,params_axis", LN_CASES)
@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_layer_norm_bf16_activations_float32_params(shape, norm_axis, params_axis, mode, threads):
    saved = mycel.get_context("num_threads")
    mycel.set_context(mode=mycel.GRAPH_MODE if mode == "graph" else mycel.PYNATIVE_MODE,
                      num_threads=threads)
    try:
        _check_layer_norm(shape, norm_axis, params_axis, mode)
    finally:
        mycel.set_context(num_threads=saved)


def _check_layer_norm(shape, norm_axis, params_axis, mode):
    x = bf16_values(RNG.standard_normal(shape) * 2 + 0.7)
    w = bf16_values(RNG.standard_normal(shape))
    pshape = shape[params_axis:]
    gamma = RNG.uniform(0.5, 1.5, pshape).astype(np.float32)
    beta = RNG.standard_normal(pshape).astype(np.float32)
    xt = Tensor(x.astype(np.float32), dtype=mycel.bfloat16)
    y, mean, rstd = ops.layer_norm(xt, Tensor(gamma), Tensor(beta), begin_norm_axis=norm_axis,
                                   begin_params_axis=params_axis, epsilon=1e-5)
    assert y.dtype == mycel.bfloat16 and mean.dtype == mycel.float32 and rstd.dtype == mycel.float32
    y_ref, dx_ref, dg_ref, db_ref = ln_reference(x, gamma.astype(np.float64), beta.astype(np.float64),
                                                 w, 1e-5, norm_axis)
    close(y, y_ref, BF16_EPS)
    axes = tuple(range(norm_axis, x.ndim))
    close(mean, x.mean(axis=axes, keepdims=True), 1e-5)
    close(rstd, 1 / np.sqrt(x.var(axis=axes, keepdims=True) + 1e-5), 1e-5)
    net = LNWeighted(gamma, beta, w, norm_axis, params_axis)
    grad = ops.GradOperation(get_all=True, get_by_list=True)(net, [net.gamma, net.beta])
    for _ in range(2 if mode == "graph" else 1):
        (dx,), (dg, db) = grad(xt)
        assert dx.dtype == mycel.bfloat16 and dg.dtype == mycel.float32 and db.dtype == mycel.float32
        close(dx, dx_ref, 2 * BF16_EPS)
        close(dg, dg_ref, 1e-5)
        close(db, db_ref, 1e-5)


def test_layer_norm_other_mixed_dtypes_are_rejected():
    x64 = Tensor(np.ones((2, 4)))  # float64
    g32 = Tensor(np.ones(4, np.float32))
    with pytest.raises(TypeError, match=r"\[layer_norm\] inputs 'x' and 'gamma' must have the same dtype "
                                        r"\(or 'x' bfloat16 with float32 'gamma'\), got float64 and float32"):
        ops.layer_norm(x64, g32, g32)
    with pytest.raises(TypeError, match="LayerNorm: the input x you gave is float64"):
        nn.LayerNorm((4,))(x64)
    y = nn.LayerNorm((4,))(Tensor(np.arange(8, dtype=np.float32).reshape(2, 4), dtype=mycel.bfloat16))
    assert y.dtype == mycel.bfloat16


def test_o2_batch_norm_takes_bf16_uncast():
    net = ConvBNReLU()
    amp.auto_mixed_precision(net, "O2")
    assert net.bn._float_dtype is None  # follows its (bf16) input, parameters float32
    assert net.conv._float_dtype == mycel.bfloat16
    x = Tensor(np.random.default_rng(0).standard_normal((4, 8, 6, 6)).astype(np.float32),
               dtype=mycel.bfloat16)
    net.bn.set_train(True)
    assert net.bn(x).dtype == mycel.bfloat16
    assert net.bn.gamma.dtype == mycel.float32 and net.bn.moving_mean.dtype == mycel.float32


@pytest.mark.parametrize("mode", [mycel.GRAPH_MODE, mycel.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_o2_step_tracks_float32_with_gradients(mode):
    """Three O2 steps against three float32 steps from the same weights: losses and the updated
    batch-norm parameters within bfloat16 tolerance."""
    mycel.set_context(mode=mode)
    rng = np.random.default_rng(3)
    x = Tensor(rng.standard_normal((16, 3, 6, 6)).astype(np.float32))
    y = Tensor(rng.integers(0, 4, 16).astype(np.int32))
    mycel.set_seed(5)
    ref, o2 = ConvBNReLU(), ConvBNReLU()
    for p, q in zip(ref.get_parameters(), o2.get_parameters()):
        q.set_data(Tensor(p.asnumpy()))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    steps = []
    for net, level in ((ref, "O0"), (o2, "O2")):
        opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
        step = amp.build_train_network(net, opt, loss, level=level)
        step.set_train(True)
        steps.append([float(step(x, y).asnumpy()) for _ in range(3)])
    np.testing.assert_allclose(steps[1], steps[0], rtol=0.03)
    # The batch-norm parameters' updates (from gamma = 1, beta = 0): bf16 activations and
    # gradients move them as float32 does, within 10% of the largest update.
    for name, init in (("gamma", 1.0), ("beta", 0.0)):
        a = getattr(ref.bn, name).asnumpy() - init
        b = getattr(o2.bn, name).asnumpy() - init
        assert getattr(o2.bn, name).dtype == mycel.float32
        assert np.abs(a).max() > 1e-3  # the steps did move them
        np.testing.assert_allclose(b, a, rtol=0, atol=0.1 * np.abs(a).max())
    np.testing.assert_allclose(o2.bn.moving_mean.asnumpy(), ref.bn.moving_mean.asnumpy(), rtol=0,
                               atol=0.02 * np.abs(ref.bn.moving_mean.asnumpy()).max() + 1e-4)


@pytest.mark.parametrize("mode", [mycel.GRAPH_MODE, mycel.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_o2_inference_uses_float32_moving_statistics(mode):
    """Eval mode: the bf16 batch norm normalizes with the float32 moving statistics (set away from
    0/1 here), matching the float32 network within bfloat16 tolerance."""
    mycel.set_context(mode=mode)
    rng = np.random.default_rng(8)
    ref, o2 = ConvBNReLU(), ConvBNReLU()
    for p, q in zip(ref.get_parameters(), o2.get_parameters()):
        q.set_data(Tensor(p.asnumpy()))
    for net in (ref, o2):
        net.bn.moving_mean.set_data(Tensor(np.linspace(-0.5, 0.5, 8).astype(np.float32)))
        net.bn.moving_variance.set_data(Tensor(np.linspace(0.5, 2.0, 8).astype(np.float32)))
        net.set_train(False)
    wrapped = amp.auto_mixed_precision(o2, "O2")
    x = Tensor(rng.standard_normal((4, 3, 6, 6)).astype(np.float32))
    want = ref(x).asnumpy()
    got = wrapped(x)
    assert got.dtype == mycel.float32
    np.testing.assert_allclose(got.asnumpy(), want, rtol=0, atol=0.03 * np.abs(want).max())


def _ln_grad_direct(dy, x, gamma, mean, rstd, dmean, drstd):
    bf = lambda a: Tensor(np.asarray(a, np.float32), dtype=mycel.bfloat16)  # noqa: E731
    f32 = lambda a: Tensor(np.asarray(a, np.float32))  # noqa: E731
    dx, dg, db = ops.layer_norm_grad(bf(dy), bf(x), f32(gamma), f32(mean), f32(rstd), f32(dmean),
                                     f32(drstd))
    return dx.astype(mycel.float32).asnumpy(), dg.asnumpy(), db.asnumpy()


# layer_norm_grad's bf16 rows of a multiple of 8 take two AVX2 passes
# (kernels/cpu/layer_norm_grad_row_bf16.cc), others the generic loop; MYCEL_LN_GRAD_ROWS=0 forces
# the generic loop for all. Both against float64 numpy (with the saved statistics' sensitivities
# dmean, drstd), and the two paths bit for bit.
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("rows,inner", [(2048, 128), (37, 136), (5, 40), (9, 8), (6, 37)])
def test_layer_norm_grad_bf16_rows_match_reference_and_generic_loop(rows, inner, threads,
                                                                    monkeypatch):
    saved = mycel.get_context("num_threads")
    mycel.set_context(mode=mycel.PYNATIVE_MODE, num_threads=threads)
    try:
        x = bf16_values(RNG.standard_normal((rows, inner)) * 2 + 0.7)
        dy = bf16_values(RNG.standard_normal((rows, inner)))
        gamma = RNG.uniform(0.5, 1.5, inner).astype(np.float32)
        mean = x.mean(axis=1, keepdims=True).astype(np.float32)
        rstd = (1 / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)).astype(np.float32)
        dmean = (RNG.standard_normal((rows, 1)) * 0.1).astype(np.float32)
        drstd = (RNG.standard_normal((rows, 1)) * 0.1).astype(np.float32)
        fast = _ln_grad_direct(dy, x, gamma, mean, rstd, dmean, drstd)
        monkeypatch.setenv("MYCEL_LN_GRAD_ROWS", "0")
        generic = _ln_grad_direct(dy, x, gamma, mean, rstd, dmean, drstd)
    finally:
        mycel.set_context(num_threads=saved)
    for a, b in zip(fast, generic):
        np.testing.assert_array_equal(a, b)
    mu, rs = mean.astype(np.float64), rstd.astype(np.float64)
    xhat = (x - mu) * rs
    dxh = dy * gamma.astype(np.float64)
    m = inner
    dx_ref = rs * dxh - rs / m * dxh.sum(1, keepdims=True) \
        - rs / m * xhat * (dxh * xhat).sum(1, keepdims=True) + dmean / m - drstd * rs * rs * xhat / m
    close(fast[0], dx_ref, 2 * BF16_EPS)
    close(fast[1], (dy * xhat).sum(0), 1e-5)
    close(fast[2], dy.sum(0), 1e-5)
