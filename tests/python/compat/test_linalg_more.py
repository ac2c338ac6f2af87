"""MindSpore-style eig gradients, matrix_exp and the matrix/vector norms (issue 14): values against
numpy.linalg and scipy.linalg, gradients against central finite differences, both modes."""
import numpy as np
import pytest
import scipy.linalg

import mycel as ms
from mycel import Tensor, _mycel, nn, ops

MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
R = np.random.default_rng(1414)
INF = float("inf")


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _rand(shape, dtype=np.float64):
    x = R.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * R.normal(size=shape)
    return x.astype(dtype)


def _fd(f, x, eps=1e-6):
    """The gradient of a real function f by central differences (dL/dRe + i dL/dIm for complex x)."""
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = 1
        g[idx] = (f(x + eps * e) - f(x - eps * e)) / (2 * eps)
        if np.iscomplexobj(x):
            g[idx] += 1j * (f(x + 1j * eps * e) - f(x - 1j * eps * e)) / (2 * eps)
    return g


# ---- eig: the rule alone (_mycel.ad.vjp) with complex cotangents ----

@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("vectors", [True, False], ids=["w_and_v", "w_only"])
def test_eig_gradient_vs_finite_differences(dtype, vectors):
    """L = Re <gw, w> + sum(c |V|^2) / 2: the eigenvalues' part and a loss of the eigenvectors that
    does not depend on their phases (LAPACK fixes those), so finite differences see it."""
    a = _rand((2, 4, 4), dtype)
    gw = _rand((2, 4), np.complex128)
    c = R.normal(size=(2, 4, 4))

    def loss(m):
        w, v = np.linalg.eig(m)  # LAPACK's geev, as Mycel's: the same eigenvalue order
        return float(np.real(np.sum(np.conj(gw) * w)) + (0.5 * np.sum(c * np.abs(v) ** 2) if vectors else 0.0))

    w, v = ops.eig(Tensor(a))
    if vectors:
        # Re <gV, dV> with gV = c * V is d(sum c |V|^2) / 2.
        grads = _mycel.ad.vjp("eig", [Tensor(a)], (Tensor(gw), Tensor(c * v.asnumpy())), compute_v=True)
    else:
        grads = _mycel.ad.vjp("eig", [Tensor(a)], Tensor(gw), compute_v=False)
    got = grads[0].asnumpy()
    assert got.dtype == a.dtype and got.shape == a.shape
    np.testing.assert_allclose(got, _fd(loss, a), rtol=1e-5, atol=1e-6)


def test_eig_gradient_of_eigenvalues_closed_form():
    """dw_k = u_k dA v_k for the left eigenvector u_k (row k of V^-1, so u_k v_k = 1): the gradient
    of Re(w_k) is Re(u_k^T v_k^T), entry (i, j) = Re(u_ki v_jk)."""
    a = _rand((3, 3))
    w, v = (t.asnumpy() for t in ops.eig(Tensor(a)))
    gw = np.zeros(3, np.complex128)
    gw[1] = 1.0  # d Re(w_1) / dA
    (g,) = _mycel.ad.vjp("eig", [Tensor(a)], Tensor(gw), compute_v=False)
    u = np.linalg.inv(v)  # rows: left eigenvectors, scaled so that u_k v_k = 1
    want = np.real(np.outer(u[1], v[:, 1]))
    np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-8, atol=1e-10)


# ---- matrix_exp ----

class _Exp(nn.Cell):
    def construct(self, a):
        return ops.matrix_exp(a)


@MODES
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_matrix_exp_vs_scipy(mode, dtype):
    ms.set_context(mode=mode)
    for scale in (1e-3, 0.3, 1.5, 4.0, 60.0):  # each Pade degree, then scaling and squaring
        a = (scale / 3 * _rand((2, 3, 3), dtype)).astype(dtype)
        got = _Exp()(Tensor(a)).asnumpy()
        want = np.stack([scipy.linalg.expm(m.astype(np.complex128 if np.iscomplexobj(m) else np.float64))
                         for m in a])
        tol = 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-11
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want.astype(dtype), rtol=tol, atol=tol * np.abs(want).max())


def test_matrix_exp_identities():
    """exp(0) = I, exp(diag(d)) = diag(e^d), exp(A) exp(-A) = I, det exp(A) = e^tr(A)."""
    a = _rand((5, 5))
    e = ops.matrix_exp(Tensor(a)).asnumpy()
    np.testing.assert_allclose(e @ ops.matrix_exp(Tensor(-a)).asnumpy(), np.eye(5), atol=1e-11)
    np.testing.assert_allclose(np.linalg.det(e), np.exp(np.trace(a)), rtol=1e-10)
    np.testing.assert_allclose(ops.matrix_exp(Tensor(np.zeros((3, 3)))).asnumpy(), np.eye(3))
    d = R.normal(size=4)
    np.testing.assert_allclose(ops.matrix_exp(Tensor(np.diag(d))).asnumpy(), np.diag(np.exp(d)), rtol=1e-13)
    nan = ops.matrix_exp(Tensor(np.array([[1.0, np.nan], [0.0, 1.0]]))).asnumpy()
    assert np.isnan(nan).all()


@MODES
def test_matrix_exp_gradient(mode):
    """grad of sum(W * exp(A)) through the user API, against central differences."""
    ms.set_context(mode=mode)
    a, w = 1.5 * _rand((2, 3, 3)), _rand((2, 3, 3))

    class Loss(nn.Cell):
        def construct(self, x):
            return (ops.matrix_exp(x) * Tensor(w)).sum()

    g = ops.grad(Loss())(Tensor(a)).asnumpy()
    want = _fd(lambda m: float(np.sum(w * np.stack([scipy.linalg.expm(x) for x in m]))), a)
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-7)


def test_matrix_exp_complex_rule():
    a, gy = 0.7 * _rand((3, 3), np.complex128), _rand((3, 3), np.complex128)
    (g,) = _mycel.ad.vjp("matrix_exp", [Tensor(a)], Tensor(gy))
    want = _fd(lambda m: float(np.real(np.sum(np.conj(gy) * scipy.linalg.expm(m)))), a)
    np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-6, atol=1e-7)


def test_matrix_exp_errors():
    with pytest.raises(ValueError, match=r"\[matrix_exp\] input 'A' must be a square matrix"):
        ops.matrix_exp(Tensor(np.ones((2, 3))))
    with pytest.raises(TypeError, match=r"\[matrix_exp\] input 'A' has unsupported dtype int32"):
        ops.matrix_exp(Tensor(np.ones((2, 2), np.int32)))


# ---- norms ----

MATRIX_ORDS = ["fro", "nuc", 1, -1, 2, -2, INF, -INF]
VECTOR_ORDS = [2, 1, INF, -INF, 0, 3, 0.5, -1]


@MODES
@pytest.mark.parametrize("ord", MATRIX_ORDS, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_matrix_norm_vs_numpy(mode, ord, dtype):  # noqa: A002
    ms.set_context(mode=mode)
    a = _rand((2, 3, 4, 5), dtype)
    tol = dict(rtol=2e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)

    class Norms(nn.Cell):
        def construct(self, x):
            return (ops.matrix_norm(x, ord), ops.norm(x, ord, (-2, -1)),
                    ops.matrix_norm(x, ord, (0, 2), True))

    m1, m2, m3 = (t.asnumpy() for t in Norms()(Tensor(a)))
    np.testing.assert_allclose(m1, np.linalg.norm(a, ord, axis=(-2, -1)), **tol)
    np.testing.assert_allclose(m2, m1, **tol)
    np.testing.assert_allclose(m3, np.linalg.norm(a, ord, axis=(0, 2), keepdims=True), **tol)
    assert m1.dtype == np.abs(a).dtype


@MODES
@pytest.mark.parametrize("ord", VECTOR_ORDS, ids=str)
def test_vector_norm_vs_numpy(mode, ord):  # noqa: A002
    ms.set_context(mode=mode)
    x = _rand((3, 4, 5))
    x[0, 0, :2] = 0  # zeros count for ord 0

    class Norms(nn.Cell):
        def construct(self, t):
            return ops.vector_norm(t, ord, 1), ops.vector_norm(t, ord, (0, 2), True), ops.vector_norm(t, ord)

    a, b, c = (t.asnumpy() for t in Norms()(Tensor(x)))
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(a, np.linalg.norm(x, ord, axis=1), rtol=1e-10)
        moved = np.moveaxis(x, 1, 0).reshape(4, -1)
        np.testing.assert_allclose(b.reshape(4), np.linalg.norm(moved, ord, axis=1), rtol=1e-10)
        np.testing.assert_allclose(c, np.linalg.norm(x.ravel(), ord), rtol=1e-10)


def test_norm_picks_like_numpy():
    a, v = _rand((4, 3)), _rand(5)
    np.testing.assert_allclose(ops.norm(Tensor(a)).asnumpy(), np.linalg.norm(a))  # all elements
    np.testing.assert_allclose(ops.norm(Tensor(a), 2).asnumpy(), np.linalg.norm(a, 2))  # a 2-d input: matrix
    np.testing.assert_allclose(ops.norm(Tensor(v), 1).asnumpy(), np.linalg.norm(v, 1))
    np.testing.assert_allclose(ops.norm(Tensor(a), INF, 1).asnumpy(), np.linalg.norm(a, INF, axis=1))
    np.testing.assert_allclose(Tensor(a).norm("nuc").asnumpy(), np.linalg.norm(a, "nuc"))
    from mycel.ops import linalg
    np.testing.assert_allclose(linalg.norm(Tensor(a), -2).asnumpy(), np.linalg.norm(a, -2))


@MODES
@pytest.mark.parametrize("ord", MATRIX_ORDS, ids=str)
def test_matrix_norm_gradients(mode, ord):  # noqa: A002
    ms.set_context(mode=mode)
    a = _rand((2, 3, 4))  # distinct singular values and no ties in the sums (random)

    class Loss(nn.Cell):
        def construct(self, x):
            return ops.matrix_norm(x, ord).sum()

    g = ops.grad(Loss())(Tensor(a)).asnumpy()
    want = _fd(lambda m: float(np.sum(np.linalg.norm(m, ord, axis=(-2, -1)))), a)
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-7)


@MODES
@pytest.mark.parametrize("ord", [2, 1, INF, 3, 0.5], ids=str)
def test_vector_norm_gradients(mode, ord):  # noqa: A002
    ms.set_context(mode=mode)
    x = _rand((3, 5))

    class Loss(nn.Cell):
        def construct(self, t):
            return ops.vector_norm(t, ord, -1).sum()

    g = ops.grad(Loss())(Tensor(x)).asnumpy()
    want = _fd(lambda m: float(np.sum(np.linalg.norm(m, ord, axis=-1))), x)
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-7)


def test_norm_errors():
    with pytest.raises(ValueError, match=r"\[matrix_norm\] ord must be"):
        ops.matrix_norm(Tensor(np.ones((2, 2))), 3)
    with pytest.raises(ValueError, match=r"\[norm\] ord 'fro' is a matrix norm"):
        ops.norm(Tensor(np.ones(3)), "fro")
    with pytest.raises(ValueError, match=r"\[vector_norm\] ord must be a number"):
        ops.vector_norm(Tensor(np.ones(3)), "nuc")
    with pytest.raises(ValueError, match=r"\[matrix_norm\] dim must name two dims"):
        ops.matrix_norm(Tensor(np.ones(3)))
    with pytest.raises(ValueError, match=r"\[norm\] with ord set, A must be 1-d or 2-d"):
        ops.norm(Tensor(np.ones((2, 2, 2))), 1)
