"""MindSpore-style linear algebra (ops.inverse/P.MatrixInverse, det, slogdet, cholesky,
cholesky_solve, matrix_solve, eigh, svd, qr, lstsq): values against numpy.linalg on batched
float32/float64/complex inputs in both modes, gradients against central finite differences and
closed forms, and the errors bad inputs raise."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, _mycel, nn, ops
from mycel.ops import operations as P

MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
R = np.random.default_rng(14)


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _spd(shape, dtype=np.float64):
    """Symmetric (Hermitian) positive definite matrices of shape (..., n, n)."""
    x = _rand(shape, dtype)
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _rand(shape, dtype=np.float64):
    x = R.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * R.normal(size=shape)
    return x.astype(dtype)


def _tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if np.dtype(dtype) in (np.float32, np.complex64) else dict(rtol=1e-9, atol=1e-9)


class _Forms(nn.Cell):
    """Every op once, as a MindSpore program would call them (functional and primitive forms)."""

    def construct(self, a, spd, b):
        sign, logdet = ops.slogdet(a)
        w, v = P.Eigh()(spd)
        s, u, vv = ops.svd(a)
        q, r = ops.qr(a)
        low = ops.cholesky(spd)
        return (ops.inverse(a), P.MatrixInverse(adjoint=True)(a), ops.det(a), sign, logdet, w, v,
                s, u, vv, q, r, low, ops.cholesky(spd, upper=True),
                ops.cholesky_solve(b, low), ops.matrix_solve(a, b),
                P.MatrixSolve(adjoint=True)(a, b), ops.lstsq(a, b))


@MODES
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_values_vs_numpy_batched(mode, dtype):
    ms.set_context(mode=mode)
    a, spd, b = _rand((2, 3, 4, 4), dtype), _spd((2, 3, 4, 4), dtype), _rand((2, 3, 4, 2), dtype)
    outs = [o.asnumpy() for o in _Forms()(Tensor(a), Tensor(spd), Tensor(b))]
    (inv, inv_h, det, sign, logdet, w, v, s, u, vv, q, r, low, up, chs, sol, sol_h, ls) = outs
    t = _tol(dtype)
    ah = np.conj(np.swapaxes(a, -1, -2))
    np.testing.assert_allclose(inv, np.linalg.inv(a), **t)
    np.testing.assert_allclose(inv_h, np.linalg.inv(ah), **t)
    np.testing.assert_allclose(det, np.linalg.det(a), **t)
    ns, nl = np.linalg.slogdet(a)
    np.testing.assert_allclose(sign, ns, **t)
    np.testing.assert_allclose(logdet, nl, **t)
    nw, _ = np.linalg.eigh(spd)
    np.testing.assert_allclose(w, nw, **t)
    np.testing.assert_allclose(spd @ v, v * w[..., None, :], **t)  # columns are eigenvectors
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), **t)
    np.testing.assert_allclose((u * s[..., None, :]) @ np.conj(np.swapaxes(vv, -1, -2)), a, **t)
    np.testing.assert_allclose(q @ r, a, **t)
    np.testing.assert_allclose(np.triu(r), r)
    nq, nr = np.linalg.qr(a)  # numpy's QR is LAPACK's Householder QR too: the same signs
    np.testing.assert_allclose(np.abs(r), np.abs(nr), **t)
    np.testing.assert_allclose(low, np.linalg.cholesky(spd), **t)
    np.testing.assert_allclose(up, np.conj(np.swapaxes(np.linalg.cholesky(spd), -1, -2)), **t)
    np.testing.assert_allclose(chs, np.linalg.solve(spd, b), **t)
    np.testing.assert_allclose(sol, np.linalg.solve(a, b), **t)
    np.testing.assert_allclose(sol_h, np.linalg.solve(ah, b), **t)
    np.testing.assert_allclose(ls, np.linalg.solve(a, b), **t)  # square, full rank: the solution


def test_rectangular_and_options_vs_numpy():
    a = _rand((2, 5, 3))
    s, u, v = ops.svd(Tensor(a), full_matrices=True)
    assert u.shape == (2, 5, 5) and v.shape == (2, 3, 3)
    nu, ns, nvh = np.linalg.svd(a, full_matrices=True)
    np.testing.assert_allclose(s.asnumpy(), ns, rtol=1e-10)
    np.testing.assert_allclose(np.abs(u.asnumpy()[..., :3]), np.abs(nu[..., :3]), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.abs(u.asnumpy() @ np.swapaxes(u.asnumpy(), -1, -2)), np.eye(5)[None].repeat(2, 0), atol=1e-12)
    assert ops.svd(Tensor(a), compute_uv=False).shape == (2, 3)
    for mode in ("reduced", "complete"):
        q, r = ops.qr(Tensor(a), mode=mode)
        nq, nr = np.linalg.qr(a, mode=mode)
        np.testing.assert_allclose(q.asnumpy(), nq, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(r.asnumpy(), nr, rtol=1e-10, atol=1e-12)
    wide = _rand((3, 5))
    q, r = ops.qr(Tensor(wide))
    np.testing.assert_allclose(q.asnumpy() @ r.asnumpy(), wide, atol=1e-12)
    # lstsq: overdetermined (least squares) and underdetermined (minimum norm), matrix and vector b
    for m, n in ((6, 3), (3, 6)):
        x, b = _rand((m, n)), _rand((m, 2))
        np.testing.assert_allclose(ops.lstsq(Tensor(x), Tensor(b)).asnumpy(), np.linalg.lstsq(x, b, rcond=None)[0], atol=1e-10)
        np.testing.assert_allclose(ops.lstsq(Tensor(x), Tensor(b[:, 0])).asnumpy(), np.linalg.lstsq(x, b[:, 0], rcond=None)[0], atol=1e-10)
    # eigh reads one triangle only: the other may hold anything
    spd = _spd((4, 4))
    junk = np.triu(R.normal(size=(4, 4)), 1)
    np.testing.assert_allclose(ops.eigh(Tensor(np.tril(spd) + junk))[0].asnumpy(), np.linalg.eigvalsh(spd), rtol=1e-10)
    np.testing.assert_allclose(ops.eigh(Tensor(np.triu(spd) + junk.T), lower=False)[0].asnumpy(), np.linalg.eigvalsh(spd), rtol=1e-10)
    assert ops.eigh(Tensor(spd), compute_eigenvectors=False).shape == (4,)
    # singular: det 0, slogdet (0, -inf); empty matrices: det 1, inverse empty
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert ops.det(Tensor(sing)).asnumpy() == 0
    sg, ld = ops.slogdet(Tensor(sing))
    assert sg.asnumpy() == 0 and ld.asnumpy() == -np.inf
    np.testing.assert_array_equal(ops.det(Tensor(np.zeros((3, 0, 0)))).asnumpy(), np.ones(3))
    assert ops.inverse(Tensor(np.zeros((0, 0)))).shape == (0, 0)
    np.testing.assert_allclose(ops.matrix_determinant(Tensor(sing + np.eye(2))).asnumpy(), np.linalg.det(sing + np.eye(2)))


def _fd(f, x, eps=1e-6):
    """Central finite differences of the scalar f at every entry of x (float64)."""
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        p, m = x.copy(), x.copy()
        p[idx] += eps
        m[idx] -= eps
        g[idx] = (f(p) - f(m)) / (2 * eps)
    return g


def _sym(x):
    """A symmetric positive definite matrix made of x, inside the program (so FD sees all of x)."""
    return (x + ops.transpose(x, (0, 2, 1))) * 0.5 + Tensor(4 * np.eye(x.shape[-1]))


W = {k: R.normal(size=(2, 3, 3)) for k in ("a", "b", "c")}
WV = R.normal(size=(2, 3))
B = R.normal(size=(2, 3, 2))
GRAD_CASES = [
    ("inverse", lambda x: (ops.inverse(x) * Tensor(W["a"])).sum()),
    ("inverse_adjoint", lambda x: (P.MatrixInverse(adjoint=True)(x) * Tensor(W["a"])).sum()),
    ("det", lambda x: (ops.det(x) * Tensor(WV[:, 0])).sum()),
    ("slogdet", lambda x: (ops.slogdet(x)[1] * Tensor(WV[:, 1])).sum()),
    ("matrix_solve", lambda x: (ops.matrix_solve(x, Tensor(B)) * Tensor(W["a"][..., :2])).sum()),
    ("matrix_solve_adjoint", lambda x: (ops.matrix_solve(x, Tensor(B), adjoint=True) * Tensor(W["b"][..., :2])).sum()),
    ("matrix_solve_rhs", lambda x: (ops.matrix_solve(Tensor(W["c"] + 3 * np.eye(3)), x) * Tensor(W["a"])).sum()),
    ("cholesky", lambda x: (ops.cholesky(_sym(x)) * Tensor(W["a"])).sum()),
    ("cholesky_upper", lambda x: (ops.cholesky(_sym(x), upper=True) * Tensor(W["b"])).sum()),
    ("cholesky_solve", lambda x: (ops.cholesky_solve(Tensor(B), ops.cholesky(_sym(x))) * Tensor(W["a"][..., :2])).sum()),
    ("cholesky_solve_upper", lambda x: (ops.cholesky_solve(x, ops.cholesky(_sym(Tensor(W["c"])), upper=True), upper=True) * Tensor(W["b"])).sum()),
    ("eigh", lambda x: (ops.eigh(_sym(x))[0] * Tensor(WV)).sum() + (ops.square(ops.eigh(_sym(x))[1]) * Tensor(W["a"])).sum()),
    ("eigvalsh", lambda x: (ops.eigh(_sym(x), compute_eigenvectors=False) * Tensor(WV)).sum()),
    ("svd", lambda x: (ops.svd(x)[0] * Tensor(WV)).sum() + (ops.square(ops.svd(x)[1]) * Tensor(W["a"])).sum()
     + (ops.square(ops.svd(x)[2]) * Tensor(W["b"])).sum()),
    ("svd_values", lambda x: (ops.svd(x, compute_uv=False) * Tensor(WV)).sum()),
    ("qr", lambda x: (ops.qr(x)[0] * Tensor(W["a"])).sum() + (ops.qr(x)[1] * Tensor(W["b"])).sum()),
]


@pytest.mark.parametrize("name,f", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_vs_finite_differences(name, f):
    x = R.normal(size=(2, 3, 3)) + 2 * np.eye(3)
    g = ops.grad(f)(Tensor(x)).asnumpy()
    fd = _fd(lambda v: float(f(Tensor(v)).asnumpy()), x)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_svd_gradient_rectangular(shape):
    x = R.normal(size=(2,) + shape)
    wu, wv, ws = R.normal(size=(2, shape[0], 3)), R.normal(size=(2, shape[1], 3)), R.normal(size=(2, 3))

    def f(t):
        s, u, v = ops.svd(t)
        return (s * Tensor(ws)).sum() + (ops.square(u) * Tensor(wu)).sum() + (ops.square(v) * Tensor(wv)).sum()
    np.testing.assert_allclose(ops.grad(f)(Tensor(x)).asnumpy(), _fd(lambda v: float(f(Tensor(v)).asnumpy()), x),
                               rtol=1e-5, atol=1e-6)


def test_qr_gradient_tall():
    x = R.normal(size=(5, 3))
    wq, wr = R.normal(size=(5, 3)), R.normal(size=(3, 3))
    f = lambda t: (ops.qr(t)[0] * Tensor(wq)).sum() + (ops.qr(t)[1] * Tensor(wr)).sum()  # noqa: E731
    np.testing.assert_allclose(ops.grad(f)(Tensor(x)).asnumpy(), _fd(lambda v: float(f(Tensor(v)).asnumpy()), x),
                               rtol=1e-5, atol=1e-6)


def test_det_gradient_closed_form_and_graph_mode():
    """d det(A) = det(A) A^-T (Jacobi's formula), eagerly and in a compiled Cell."""
    x = R.normal(size=(3, 4, 4)) + 3 * np.eye(4)
    want = np.linalg.det(x)[:, None, None] * np.swapaxes(np.linalg.inv(x), -1, -2)

    class Net(nn.Cell):
        def construct(self, a):
            return ops.det(a).sum() + ops.slogdet(a)[1].sum()
    want = want + np.swapaxes(np.linalg.inv(x), -1, -2)
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        np.testing.assert_allclose(ops.grad(Net())(Tensor(x)).asnumpy(), want, rtol=1e-10)
    ms.set_context(mode=ms.PYNATIVE_MODE)


def test_second_derivative_of_inverse():
    """The rules are ops too: d/dt of d/dA sum(inverse(A)) at A = t I is 2 n / t^3 summed, per entry."""
    x = 2.0 * np.eye(2)
    inner = ops.grad(lambda a: ops.inverse(a).sum())
    h = ops.grad(lambda a: inner(a).sum())(Tensor(x)).asnumpy()
    fd = _fd(lambda v: float(inner(Tensor(v)).asnumpy().sum()), x, eps=1e-5)
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-7)


def test_bad_inputs_name_the_op_and_argument():
    sq, rect = Tensor(np.eye(3)), Tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"\[inverse\] input 'x' must be square .*\(2, 3\)"):
        ops.inverse(rect)
    with pytest.raises(ValueError, match=r"\[det\] input 'x' must be square"):
        ops.det(rect)
    with pytest.raises(ValueError, match=r"\[inverse\] input 'x' is singular: matrix 1 of the batch"):
        ops.inverse(Tensor(np.stack([np.eye(2), np.ones((2, 2))])))
    with pytest.raises(ValueError, match=r"\[matrix_solve\] input 'matrix' is singular"):
        ops.matrix_solve(Tensor(np.ones((2, 2))), Tensor(np.ones((2, 1))))
    with pytest.raises(ValueError, match=r"\[cholesky\] input 'input_x' is not positive definite"):
        ops.cholesky(Tensor(-np.eye(2)))
    with pytest.raises(ValueError, match=r"\[matrix_solve\] input 'rhs' with shape \(4, 1\) must be \(\.\.\., 3, K\)"):
        ops.matrix_solve(sq, Tensor(np.ones((4, 1))))
    with pytest.raises(ValueError, match=r"\[cholesky\] input 'input_x' must be a matrix"):
        ops.cholesky(Tensor(np.ones(3)))
    with pytest.raises(TypeError, match=r"\[det\] input 'x' has unsupported dtype int32; supported: float32, float64, complex64, complex128"):
        ops.det(Tensor(np.eye(2, dtype=np.int32)))
    with pytest.raises(ValueError, match=r"\[lstsq\] input 'A'"):
        ops.lstsq(rect, Tensor(np.ones((3, 1))))
    with pytest.raises(ValueError, match=r"\[svd\] input 'input' has shape \(2147483648, 0\): LAPACK takes"):
        ops.svd(Tensor(np.zeros(0)).reshape((2**31, 0)))
    with pytest.raises(ValueError, match=r"\[qr\] mode must be 'reduced' or 'complete'"):
        ops.qr(sq, mode="r")
    # (complex svd gradients exist now: compat/test_compat_linalg_complex_grad2.py)
    ms.set_context(mode=ms.GRAPH_MODE)
    with pytest.raises(ValueError, match=r"\[inverse\] input 'x' must be square"):
        ms.jit(lambda a: ops.inverse(a))(rect)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(ops.inverse(sq).asnumpy(), np.eye(3))  # the process is still fine


def test_vmap_batches_over_any_axis():
    x = R.normal(size=(3, 4, 3)) + 3 * np.eye(3)[:, None, :]  # the batch at axis 1
    b = R.normal(size=(3, 2))
    got = ops.vmap(lambda m: ops.matrix_solve(m, Tensor(b)), in_axes=1)(Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, np.linalg.solve(np.moveaxis(x, 1, 0), b), rtol=1e-10)
    s, logdet = ops.vmap(ops.slogdet, in_axes=1)(Tensor(x))
    np.testing.assert_allclose(logdet.asnumpy(), np.linalg.slogdet(np.moveaxis(x, 1, 0))[1], rtol=1e-10)


def _lu_reference(a):
    """Partial-pivoting Doolittle LU in plain numpy: packed LU and LAPACK's 1-based pivots."""
    a = a.copy()
    n = a.shape[0]
    piv = np.zeros(n, np.int32)
    for k in range(n):
        p = k + int(np.argmax(np.abs(a[k:, k])))
        piv[k] = p + 1
        a[[k, p]] = a[[p, k]]
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a, piv


@MODES
def test_lu_factor_unpack_solve(mode):
    ms.set_context(mode=mode)
    a = R.normal(size=(2, 4, 4))
    b = R.normal(size=(2, 4, 3))

    def run(a, b):
        lu, piv = ops.lu_factor(a)
        p, l, u = ops.lu_unpack(lu, piv)
        return lu, piv, p, l, u, ops.lu_solve(b, lu, piv)
    fn = ms.jit(run) if mode == ms.GRAPH_MODE else run
    lu, piv, p, l, u, x = [t.asnumpy() for t in fn(Tensor(a), Tensor(b))]
    for i in range(2):
        want_lu, want_piv = _lu_reference(a[i])
        np.testing.assert_allclose(lu[i], want_lu, rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(piv[i], want_piv)
    assert piv.dtype == np.int32
    np.testing.assert_allclose(p @ l @ u, a, atol=1e-12)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-10)
    # MindSpore's documented example
    y = ops.lu_solve(Tensor(np.array([[1.0], [3.0], [3.0]], np.float32)),
                     Tensor(np.array([[2, 1, 1], [0.5, 1, 1.5], [0.5, 0, 2.5]], np.float32)),
                     Tensor(np.array([2, 2, 3], np.int32)))
    np.testing.assert_allclose(y.asnumpy(), [[1.9], [-1.4], [0.6]], rtol=1e-5)


def test_lu_gradients_and_bad_pivots():
    a, b = R.normal(size=(2, 3, 3)) + 2 * np.eye(3), R.normal(size=(2, 3, 2))
    wlu, wx = R.normal(size=(2, 3, 3)), R.normal(size=(2, 3, 2))
    lu0, piv0 = ops.lu_factor(Tensor(a))
    f_factor = lambda t: (ops.lu_factor(t)[0] * Tensor(wlu)).sum()  # noqa: E731
    f_solve = lambda t: (ops.lu_solve(Tensor(b), t, piv0) * Tensor(wx)).sum()  # noqa: E731
    f_rhs = lambda t: (ops.lu_solve(t, lu0, piv0) * Tensor(wx)).sum()  # noqa: E731
    for f, x in ((f_factor, a), (f_solve, lu0.asnumpy()), (f_rhs, b)):
        np.testing.assert_allclose(ops.grad(f)(Tensor(x)).asnumpy(), _fd(lambda v: float(f(Tensor(v)).asnumpy()), x),
                                   rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"\[lu_solve\] input 'LU_pivots' must hold 1-based rows in \[1, 3\], got 7"):
        ops.lu_solve(Tensor(b[0]), lu0[0], Tensor(np.array([1, 7, 3], np.int32)))
    with pytest.raises(TypeError, match=r"\[lu_unpack\] input 'LU_pivots' must be int32, got int64"):
        ops.lu_unpack(lu0, Tensor(np.ones((2, 3), np.int64)))
    with pytest.raises(ValueError, match=r"\[lu_solve\] input 'LU_pivots' must have shape \(2, 3\)"):
        ops.lu_solve(Tensor(b), lu0, Tensor(np.ones((2, 2), np.int32)))


def _composites(x, spd_factor, sym):
    return (ops.pinv(x), ops.pinv(sym, hermitian=True), ops.matrix_power(sym, 3), ops.matrix_power(sym, -2),
            ops.matrix_power(sym, 0), ops.cholesky_inverse(spd_factor))


@MODES
def test_pinv_matrix_power_cholesky_inverse(mode):
    ms.set_context(mode=mode)
    x = R.normal(size=(2, 5, 3))
    spd = _spd((2, 3, 3))
    sym = R.normal(size=(2, 3, 3))
    sym = sym + np.swapaxes(sym, -1, -2) + 4 * np.eye(3)
    fn = ms.jit(_composites) if mode == ms.GRAPH_MODE else _composites
    got = [t.asnumpy() for t in fn(Tensor(x), Tensor(np.linalg.cholesky(spd)), Tensor(sym))]
    want = [np.linalg.pinv(x), np.linalg.pinv(sym, hermitian=True), np.linalg.matrix_power(sym, 3),
            np.linalg.matrix_power(np.linalg.inv(sym), 2), np.broadcast_to(np.eye(3), sym.shape), np.linalg.inv(spd)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    rank1 = np.outer([1.0, 2.0, 3.0], [1.0, -1.0])  # rank deficient: small singular values drop
    np.testing.assert_allclose(ops.pinv(Tensor(rank1)).asnumpy(), np.linalg.pinv(rank1), atol=1e-12)
    np.testing.assert_allclose(ops.pinv(Tensor(rank1), atol=100.0).asnumpy(), np.zeros((2, 3)))
    f = lambda t: (ops.pinv(t) * Tensor(W["a"][:, :, :2].transpose(0, 2, 1))).sum()  # noqa: E731
    xs = R.normal(size=(2, 3, 2))
    np.testing.assert_allclose(ops.grad(f)(Tensor(xs)).asnumpy(), _fd(lambda v: float(f(Tensor(v)).asnumpy()), xs),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"\[matrix_power\] input must be square"):
        ops.matrix_power(Tensor(x), 2)


@MODES
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_eig_general_matrices(mode, dtype):
    ms.set_context(mode=mode)
    a = _rand((2, 5, 5), dtype)  # real ones have complex-conjugate eigenvalue pairs
    fn = ms.jit(lambda t: ops.eig(t)) if mode == ms.GRAPH_MODE else ops.eig
    w, v = (t.asnumpy() for t in fn(Tensor(a)))
    nw, nv = np.linalg.eig(a)  # numpy runs LAPACK's geev too: same order and normalization
    t = _tol(dtype)
    assert w.dtype == (np.complex128 if np.dtype(dtype) in (np.float64, np.complex128) else np.complex64)
    np.testing.assert_allclose(w, nw, **t)
    np.testing.assert_allclose(np.abs(v), np.abs(nv), **t)  # each column is unique up to a phase
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), np.ones((2, 5)), **t)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], **t)
    assert P.Eig(compute_v=False)(Tensor(a)).shape == (2, 5)
