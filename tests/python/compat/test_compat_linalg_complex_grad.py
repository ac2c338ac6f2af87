"""Gradients of the linear algebra ops for complex inputs (PyTorch's convention: for a real loss L
of z = x + iy the gradient is dL/dx + i dL/dy): inverse, det, slogdet, matrix_solve, cholesky,
cholesky_solve, eigh and lstsq (svd, qr and the LU ops: test_compat_linalg_complex_grad2.py),
in both modes, against central finite differences of the same loss written in numpy
(complex128). Hermitian inputs are built as B + B^H or B B^H + 3 I from a
free complex B, so the differences move only along what the op reads; eigh's loss uses |V| (the
eigenvectors' phases are arbitrary)."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, ops

from complex_grad_helpers import check_gradients

R = np.random.default_rng(21)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _c(*shape):
    return R.normal(size=shape) + 1j * R.normal(size=shape)


K3, K32, K2 = _c(3, 3), _c(3, 2), _c(2)
K22 = K2.reshape(2, 1) * np.ones((2, 2))
T3, T32, T0, T22 = Tensor(K3), Tensor(K32), Tensor(K2[0]), Tensor(K22)  # the weights as constants
EYE3 = Tensor(3 * np.eye(3, dtype=np.complex128))
W3 = Tensor(np.array([0.3, -1.0, 2.0]))
ABS_K3 = Tensor(np.abs(K3))


def _re(z, k):
    """Re sum(z conj(k)) in mycel (k a Tensor): its cotangent for z is k."""
    return ops.sum(ops.real(z * ops.conj(k)))


def _re_np(z, k):
    return np.sum(np.real(z * np.conj(k)))


def _herm(b):
    return b + ops.conj(ops.transpose(b, (1, 0)))


def _spd(b):
    return ops.matmul(b, ops.conj(ops.transpose(b, (1, 0)))) + EYE3


def _spd_np(b):
    return b @ b.conj().T + 3 * np.eye(3)


# (name, mycel loss, numpy loss, argument factory)
CASES = [
    ("inverse", lambda a: _re(ops.inverse(a), T3), lambda a: _re_np(np.linalg.inv(a), K3),
     lambda: [_c(3, 3) + 2 * np.eye(3)]),
    ("det", lambda a: _re(ops.det(a), T0) + ops.abs(ops.det(a)),
     lambda a: _re_np(np.linalg.det(a), K2[0]) + np.abs(np.linalg.det(a)), lambda: [_c(3, 3)]),
    ("slogdet", lambda a: _re(ops.slogdet(a)[0], T0) + ops.real(ops.slogdet(a)[1]) * 0.7,
     lambda a: _re_np(np.linalg.slogdet(a)[0], K2[0]) + np.linalg.slogdet(a)[1] * 0.7, lambda: [_c(3, 3)]),
    ("matrix_solve", lambda a, b: _re(ops.matrix_solve(a, b), T32),
     lambda a, b: _re_np(np.linalg.solve(a, b), K32), lambda: [_c(3, 3) + 2 * np.eye(3), _c(3, 2)]),
    ("matrix_solve_adjoint", lambda a, b: _re(ops.matrix_solve(a, b, adjoint=True), T32),
     lambda a, b: _re_np(np.linalg.solve(a.conj().T, b), K32), lambda: [_c(3, 3) + 2 * np.eye(3), _c(3, 2)]),
    ("cholesky", lambda b: _re(ops.cholesky(_spd(b)), T3),
     lambda b: _re_np(np.linalg.cholesky(_spd_np(b)), K3), lambda: [_c(3, 3)]),
    ("cholesky_solve", lambda x, b: _re(ops.cholesky_solve(x, ops.cholesky(_spd(b))), T32),
     lambda x, b: _re_np(np.linalg.solve(_spd_np(b), x), K32), lambda: [_c(3, 2), _c(3, 3)]),
    ("eigh", lambda b: ops.sum(ops.eigh(_herm(b))[0] * W3) + ops.sum(ops.abs(ops.eigh(_herm(b))[1]) ** 2 * ABS_K3),
     lambda b: np.sum(np.linalg.eigh(b + b.conj().T)[0] * np.array([0.3, -1.0, 2.0]))
     + np.sum(np.abs(np.linalg.eigh(b + b.conj().T)[1]) ** 2 * np.abs(K3)), lambda: [_c(3, 3)]),
    ("lstsq_tall", lambda a, b: _re(ops.lstsq(a, b), T22),
     lambda a, b: _re_np(np.linalg.lstsq(a, b, rcond=None)[0], K22),
     lambda: [_c(4, 2), _c(4, 2)]),
]


@MODES
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_complex_linalg_gradients_match_finite_differences(case, mode):
    name, loss, ref, make = case
    check_gradients(name, loss, ref, make(), mode)


def test_real_inputs_keep_their_gradients():
    """The real path is unchanged: d det / dA = det A^-T."""
    a = R.normal(size=(3, 3))
    g = ms.grad(lambda t: ops.det(t))(Tensor(a)).asnumpy()
    np.testing.assert_allclose(g, np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-10)
