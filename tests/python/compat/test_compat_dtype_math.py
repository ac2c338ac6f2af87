"""MindSpore-style programs over the wider unsigned and complex dtypes (issue 14): unary math,
cumsum/cumprod, var/std/var_mean/std_mean, logsumexp, in both modes, against numpy; and the
TypeError where the math is not defined. Per-op, per-dtype values are the op table's
(op_cases/extended_dtypes.py); these check the user-level forms."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops
from mycel.ops import operations as P

R = np.random.default_rng(1414)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _z(shape, dtype=np.complex64):
    return (R.normal(size=shape) + 1j * R.normal(size=shape)).astype(dtype)


class _ComplexMath(nn.Cell):
    def construct(self, z):
        return (ops.exp(z), ops.log(z), ops.sqrt(z), ops.sin(z), ops.cos(z), ops.tanh(z), ops.abs(z),
                ops.neg(z), ops.square(z), ops.reciprocal(z), ops.sigmoid(z), ops.isfinite(z))


@MODES
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_unary_math(mode, dtype):
    ms.set_context(mode=mode)
    z = _z((3, 4), dtype)
    got = [o.asnumpy() for o in _ComplexMath()(Tensor(z))]
    want = [np.exp(z), np.log(z), np.sqrt(z), np.sin(z), np.cos(z), np.tanh(z), np.abs(z), -z, z * z, 1 / z,
            1 / (1 + np.exp(-z)), np.isfinite(z)]
    tol = 1e-5 if dtype == np.complex64 else 1e-12
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@MODES
@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
def test_unsigned_math(mode, dtype):
    ms.set_context(mode=mode)
    x = R.integers(1, 1000, size=(3, 5)).astype(dtype)

    class Net(nn.Cell):
        def construct(self, t):
            return ops.sqrt(t), ops.exp(t * 0), ops.log(t), ops.square(t), ops.sign(t), ops.cumsum(t, 1), \
                ops.cumprod(t, 0), ops.var(t, 1), ops.logsumexp(t, 0)

    got = [o.asnumpy() for o in Net()(Tensor(x))]
    want = [np.sqrt(x), np.exp(x * 0), np.log(x), np.square(x), np.sign(x), np.cumsum(x, 1), np.cumprod(x, 0),
            np.var(x, 1), np.log(np.exp(x.astype(np.float64) - x.max(0)).sum(0)) + x.max(0)]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-6)


@MODES
def test_var_mean_std_mean(mode):
    ms.set_context(mode=mode)
    x = R.normal(size=(3, 4, 5)).astype(np.float32)

    class Net(nn.Cell):
        def construct(self, t):
            return ops.var_mean(t, 1, 1, True), ops.std_mean(t, (0, 2)), ops.var_mean(t), \
                ops.std_mean(t, axis=-1, ddof=True)

    (v1, m1), (s2, m2), (v3, m3), (s4, m4) = Net()(Tensor(x))
    np.testing.assert_allclose(v1.asnumpy(), np.var(x, 1, ddof=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(m1.asnumpy(), np.mean(x, 1, keepdims=True), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(s2.asnumpy(), np.std(x, (0, 2)), rtol=1e-5)
    np.testing.assert_allclose(m2.asnumpy(), np.mean(x, (0, 2)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(v3.asnumpy(), np.var(x), rtol=1e-5)
    np.testing.assert_allclose(m3.asnumpy(), np.mean(x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(s4.asnumpy(), np.std(x, -1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(m4.asnumpy(), np.mean(x, -1), rtol=1e-5, atol=1e-7)


def test_var_mean_gradient():
    """d(var + mean)/dx = 2 (x - mean) / (n - ddof) + 1 / n, against the closed form."""
    x = R.normal(size=(4, 6))
    g = ops.grad(lambda t: sum(o.sum() for o in ops.var_mean(t, 1, 1)))(Tensor(x)).asnumpy()
    np.testing.assert_allclose(g, 2 * (x - x.mean(1, keepdims=True)) / 5 + 1 / 6, rtol=1e-12)


@MODES
def test_cumprod_forms_and_gradient(mode):
    ms.set_context(mode=mode)
    x = R.normal(size=(3, 5))
    x[1, 2] = 0.0

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.prim = P.CumProd(exclusive=True, reverse=True)

        def construct(self, t):
            return ops.cumprod(t, 1), self.prim(t, 0)

    a, b = Net()(Tensor(x))
    np.testing.assert_allclose(a.asnumpy(), np.cumprod(x, 1), rtol=1e-12)
    rev = np.cumprod(x[::-1], 0)[::-1]
    np.testing.assert_allclose(b.asnumpy(), np.concatenate([rev[1:], np.ones((1, 5))]), rtol=1e-12)
    w = np.arange(15.0).reshape(3, 5)
    w_t = Tensor(w)
    g = ops.grad(lambda t: (ops.cumprod(t, 1) * w_t).sum())(Tensor(x)).asnumpy()
    want = np.zeros_like(x)  # brute force: dy_j/dx_k = prod of x_0..x_j without x_k, k <= j
    for r in range(3):
        for k in range(5):
            for j in range(k, 5):
                want[r, k] += w[r, j] * np.prod(np.delete(x[r, :j + 1], k))
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


def test_undefined_math_raises_type_error():
    z = Tensor(_z((2,)))
    for op in (ops.erf, ops.relu, ops.floor, ops.softplus):
        with pytest.raises(TypeError, match="complex64"):
            op(z)
    with pytest.raises(TypeError, match="complex64"):
        ops.logsumexp(z, 0)
    with pytest.raises(TypeError, match="uint16"):
        ops.erf(Tensor(np.ones(2, np.uint16)))
    with pytest.raises(TypeError, match=r"\[var_mean\] ddof must be an int or a bool"):
        ops.var_mean(Tensor(np.ones(3)), ddof=0.5)
