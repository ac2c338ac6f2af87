"""Gradient rows for the linear-algebra ops (float64, well-conditioned inputs). cholesky and eigh
read one triangle of a matrix that stands for a symmetric one, and their rules give the symmetric
gradient (MindSpore's, PyTorch's and JAX's convention), which perturbing one raw entry does not
see: their finite-difference checks go through a symmetric parameterization in
compat/test_linalg.py, and these rows check the rules' dtypes and shapes only (wrt=())."""
import numpy as np

from . import GradCase


def _square(*shape):
    return lambda rng: [rng.standard_normal(shape) + 3 * np.eye(shape[-1])]


def _spd(*shape):
    def gen(rng):
        x = rng.standard_normal(shape)
        return [x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])]
    return gen


def _solve(rng):
    return [rng.standard_normal((2, 3, 3)) + 3 * np.eye(3), rng.standard_normal((2, 3, 2))]


def _chol_solve(upper):
    def gen(rng):
        x = rng.standard_normal((2, 3, 3))
        f = np.linalg.cholesky(x @ np.swapaxes(x, -1, -2) + 3 * np.eye(3))
        return [rng.standard_normal((2, 3, 2)), np.swapaxes(f, -1, -2) if upper else f]
    return gen


def _factored(rng):
    """[b, LU_data, LU_pivots] of a well-conditioned batch (the factors from Mycel's lu_factor)."""
    from mycel import Tensor, ops
    lu, piv = ops.lu_factor(Tensor(rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)))
    return [rng.standard_normal((2, 3, 2)), lu.asnumpy(), piv.asnumpy()]


CASES = [
    GradCase("inverse", _square(2, 3, 3)),
    GradCase("inverse", _square(3, 3), dict(adjoint=True), id="adjoint"),
    GradCase("det", _square(2, 3, 3)),
    GradCase("slogdet", _square(3, 3)),
    GradCase("matrix_solve", _solve),
    GradCase("matrix_solve", _solve, dict(adjoint=True), id="adjoint"),
    GradCase("cholesky_solve", _chol_solve(False)),
    GradCase("cholesky_solve", _chol_solve(True), dict(upper=True), id="upper"),
    GradCase("cholesky", _spd(2, 3, 3), wrt=()),
    GradCase("eigh", _spd(3, 3), wrt=()),
    GradCase("svd", lambda rng: [rng.standard_normal((2, 4, 3))]),
    GradCase("svd", lambda rng: [rng.standard_normal((3, 5))], dict(compute_uv=False), id="values"),
    GradCase("qr", lambda rng: [rng.standard_normal((2, 4, 3))]),
    GradCase("lstsq", lambda rng: [rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 2))], id="tall"),
    GradCase("lstsq", lambda rng: [rng.standard_normal((3, 5)), rng.standard_normal((3, 2))], id="wide"),
    GradCase("lstsq", lambda rng: [rng.standard_normal((4, 3)), rng.standard_normal(4)], id="vector"),
    GradCase("lu_factor", _square(2, 3, 3)),
    GradCase("lu_unpack", lambda rng: _factored(rng)[1:], wrt=(0,)),
    GradCase("lu_solve", _factored, wrt=(0, 1)),
]

# eig: its outputs are complex, so the table's real cotangents leave it untested here; the rule is
# checked against finite differences with complex cotangents in compat/test_linalg_more.py.
# matrix_exp: the Frechet-derivative rule against central differences (it differentiates again).
CASES += [
    GradCase("eig", lambda rng: [rng.standard_normal((3, 3))], wrt=()),
    GradCase("matrix_exp", lambda rng: [0.5 * rng.standard_normal((3, 3))]),
    GradCase("matrix_exp", lambda rng: [3.0 * rng.standard_normal((2, 4, 4))], rtol=1e-4, atol=1e-5, id="squared"),
]
