"""Complex gradients of svd, qr and the LU ops (lu_factor, lu_unpack, lu_solve), which raised
before: PyTorch's convention (for a real loss L of z = x + iy the gradient is dL/dx + i dL/dy),
in both modes, against central finite differences of the same loss in numpy (complex128).
svd's losses read only what the factorization fixes (s, U V^H, |U|, |V|: a common phase of a
column of U and of V is arbitrary); qr and LU are unique for LAPACK's conventions (R's diagonal
real; partial pivoting by |Re| + |Im|, which the numpy reference below follows)."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, ops

from complex_grad_helpers import check_gradients

R = np.random.default_rng(41)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _c(*shape):
    return R.normal(size=shape) + 1j * R.normal(size=shape)


def _re(z, kt):
    """Re sum(z conj(k)) (kt: the constant k as a Tensor): its cotangent for z is k."""
    return ops.sum(ops.real(z * ops.conj(kt)))


def _re_np(z, k):
    return np.sum(np.real(z * np.conj(k)))


def _lu_np(a):
    """Packed LU with partial pivoting as LAPACK's getrf picks rows (largest |Re| + |Im|), and
    the 1-based pivots: P A = L U."""
    lu = a.copy()
    n = lu.shape[0]
    piv = np.zeros(n, np.int32)
    for j in range(n):
        p = j + int(np.argmax(np.abs(lu[j:, j].real) + np.abs(lu[j:, j].imag)))
        piv[j] = p + 1
        lu[[j, p]] = lu[[p, j]]
        lu[j + 1:, j] /= lu[j, j]
        lu[j + 1:, j + 1:] -= np.outer(lu[j + 1:, j], lu[j, j + 1:])
    return lu, piv


# Weights of the losses (constants).
K33, K43, K34, K3, K32 = _c(3, 3), _c(4, 3), _c(3, 4), _c(3), _c(3, 2)
K33T = K33.T.copy()
W3 = np.array([0.7, -1.3, 2.1])
A33, A43 = np.abs(_c(3, 3)), np.abs(_c(4, 3))
# ... and as Tensors, made outside the compiled functions (graph mode reads them as constants).
TK33, TK32, TK33T, TW3 = Tensor(K33), Tensor(K32), Tensor(K33T), Tensor(W3)


def _svd_loss(shape, wuv, wu, wv):
    twuv, twu, twv = Tensor(wuv), Tensor(wu), Tensor(wv)

    def loss(a):
        s, u, v = ops.svd(a)
        uvh = ops.matmul(u, ops.conj(ops.transpose(v, (1, 0))))
        return (ops.sum(s * TW3) + _re(uvh, twuv) + ops.sum(ops.abs(u) ** 2 * twu)
                + ops.sum(ops.abs(v) ** 2 * twv))

    def ref(a):
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        return (np.sum(s * W3) + _re_np(u @ vh, wuv) + np.sum(np.abs(u) ** 2 * wu)
                + np.sum(np.abs(vh.conj().T) ** 2 * wv))
    return loss, ref, lambda: [_c(*shape)]


def _svd_values(a):
    return ops.sum(ops.svd(a, compute_uv=False) * TW3)


def _qr_loss(shape, kq, kr):
    tkq, tkr = Tensor(kq), Tensor(kr)

    def loss(a):
        q, r = ops.qr(a)
        return _re(q, tkq) + _re(r, tkr)

    def ref(a):
        q, r = np.linalg.qr(a)
        return _re_np(q, kq) + _re_np(r, kr)
    return loss, ref, lambda: [_c(*shape)]


def _lu_factor_loss(a):
    lu, _ = ops.lu_factor(a)
    return _re(lu, TK33)


def _lu_unpack_loss(a):
    lu, piv = ops.lu_factor(a)
    _, l, u = ops.lu_unpack(lu, piv)
    return _re(l, TK33) + _re(u, TK33T)


def _lu_unpack_ref(a):
    lu, _ = _lu_np(a)
    return _re_np(np.tril(lu, -1) + np.eye(3), K33) + _re_np(np.triu(lu), K33T)


def _lu_solve_loss(a, b):
    lu, piv = ops.lu_factor(a)
    return _re(ops.lu_solve(b, lu, piv), TK32)


CASES = [
    ("svd_square",) + _svd_loss((3, 3), K33, A33, A33),
    ("svd_tall",) + _svd_loss((4, 3), K43, A43, A33),
    ("svd_wide",) + _svd_loss((3, 4), K34, A33, A43),
    ("svd_values", _svd_values, lambda a: np.sum(np.linalg.svd(a, compute_uv=False) * W3),
     lambda: [_c(3, 3)]),
    ("qr_square",) + _qr_loss((3, 3), K33, K33T),
    ("qr_tall",) + _qr_loss((4, 3), K43, K33),
    ("lu_factor", _lu_factor_loss, lambda a: _re_np(_lu_np(a)[0], K33), lambda: [_c(3, 3)]),
    ("lu_unpack", _lu_unpack_loss, _lu_unpack_ref, lambda: [_c(3, 3)]),
    ("lu_solve", _lu_solve_loss, lambda a, b: _re_np(np.linalg.solve(a, b), K32),
     lambda: [_c(3, 3) + 2 * np.eye(3), _c(3, 2)]),
]


@MODES
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_complex_factorization_gradients_match_finite_differences(case, mode):
    name, loss, ref, make = case
    check_gradients(name, loss, ref, make(), mode)


def test_complex64_svd_gradient_keeps_its_dtype():
    a = _c(3, 3).astype(np.complex64)
    g = ms.grad(lambda t: ops.sum(ops.svd(t, compute_uv=False)))(Tensor(a)).asnumpy()
    assert g.dtype == np.complex64
    u, _, vh = np.linalg.svd(a.astype(np.complex128))
    np.testing.assert_allclose(g, u @ vh, rtol=1e-4, atol=1e-5)  # d sum(s) = U V^H


def test_real_svd_gradient_unchanged():
    a = R.normal(size=(3, 3))
    g = ms.grad(lambda t: ops.sum(ops.svd(t, compute_uv=False)))(Tensor(a)).asnumpy()
    u, _, vh = np.linalg.svd(a)
    np.testing.assert_allclose(g, u @ vh, rtol=1e-10)
