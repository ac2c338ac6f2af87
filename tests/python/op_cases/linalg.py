"""Rows for the linear-algebra ops against numpy.linalg: well-conditioned (diagonally dominant or
positive definite) batched inputs, single and double precision, real and complex. Eigenvectors
and singular vectors are compared in compat/test_linalg.py (up to their sign freedom)."""
import numpy as np

from op_cases import OpCase

SINGLE, DOUBLE = ("float32", "complex64"), ("float64", "complex128")


def _draw(dt, rng, shape):
    x = rng.normal(size=shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x


def _square(*shape):
    def gen(rng, dt):
        return [(_draw(dt, rng, shape) + 3 * shape[-1] ** 0.5 * np.eye(shape[-1])).astype(dt)]
    return gen


def _spd(*shape):
    def gen(rng, dt):
        x = _draw(dt, rng, shape)
        return [(x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dt)]
    return gen


def _system(a_gen, b_shape, factor=False):
    def gen(rng, dt):
        (a,) = a_gen(rng, dt)
        b = _draw(dt, rng, b_shape).astype(dt)
        return [b, np.linalg.cholesky(a).astype(dt)] if factor else [a, b]
    return gen


def _rect(*shape):
    return lambda rng, dt: [_draw(dt, rng, shape).astype(dt)]


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _slogdet(x):
    s, l = np.linalg.slogdet(x)
    return s, l.astype(x.dtype)  # MindSpore's log|det| has the input's dtype


def _rows(op, ref, gen, attrs=None, id=""):
    """One row in double precision and one in single (looser tolerance). Double comes first, so
    the help-text examples (scripts/gen_op_examples.py) print values that every LAPACK agrees on
    to the digits shown."""
    return [OpCase(op, ref, gen, attrs or {}, dtypes=DOUBLE, rtol=1e-9, atol=1e-10, id=id),
            OpCase(op, ref, gen, attrs or {}, dtypes=SINGLE, rtol=2e-4, atol=2e-4, id=(id + "_single").lstrip("_"))]


CASES = (
    _rows("inverse", lambda x, adjoint=False: np.linalg.inv(_h(x) if adjoint else x), _square(2, 3, 4, 4))
    + _rows("inverse", lambda x, adjoint: np.linalg.inv(_h(x)), _square(3, 3), dict(adjoint=True), "adjoint")
    + _rows("det", np.linalg.det, _square(2, 3, 3))
    + _rows("slogdet", _slogdet, _square(4, 4))
    + _rows("cholesky", lambda x, upper=False: np.linalg.cholesky(x), _spd(2, 4, 4))
    + _rows("cholesky", lambda x, upper: _h(np.linalg.cholesky(x)), _spd(3, 3), dict(upper=True), "upper")
    + _rows("cholesky_solve", lambda b, f, upper=False: np.linalg.solve(f @ _h(f), b),
            _system(_spd(2, 4, 4), (2, 4, 3), factor=True))
    + _rows("matrix_solve", lambda a, b, adjoint=False: np.linalg.solve(a, b), _system(_square(2, 3, 3), (2, 3, 2)))
    + _rows("matrix_solve", lambda a, b, adjoint: np.linalg.solve(_h(a), b), _system(_square(3, 3), (3, 4)),
            dict(adjoint=True), "adjoint")
    + _rows("eigh", lambda x, compute_eigenvectors: np.linalg.eigvalsh(x), _spd(2, 4, 4),
            dict(compute_eigenvectors=False))
    + _rows("svd", lambda x, compute_uv: np.linalg.svd(x, compute_uv=False), _rect(2, 5, 3), dict(compute_uv=False))
    + _rows("qr", lambda x: np.linalg.qr(x), _rect(2, 4, 3))
    + _rows("lstsq", lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0], _system(_rect(6, 3), (6, 2)))
)


def _lu(a):
    """Partial-pivoting LU in plain numpy, pivoting as LAPACK's i?amax does (|re| + |im|)."""
    a = a.copy()
    n = a.shape[-1]
    piv = np.zeros(n, np.int32)
    for k in range(n):
        p = k + int(np.argmax(np.abs(a[k:, k].real) + np.abs(a[k:, k].imag)))
        piv[k] = p + 1
        a[[k, p]] = a[[p, k]]
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a, piv


def _batched(f):
    def ref(x, *rest):
        outs = [f(x[i], *(r[i] for r in rest)) for i in range(x.shape[0])]
        return tuple(np.stack(o) for o in zip(*outs)) if isinstance(outs[0], tuple) else np.stack(outs)
    return ref


def _unpack(lu, piv):
    n = lu.shape[-1]
    perm = list(range(n))
    for i in range(n):
        j = piv[i] - 1
        perm[i], perm[j] = perm[j], perm[i]
    p = np.zeros_like(lu)
    p[perm, range(n)] = 1
    return p, np.tril(lu, -1) + np.eye(n, dtype=lu.dtype), np.triu(lu)


def _factored(b_shape):
    def gen(rng, dt):
        (a,) = _square(2, 4, 4)(rng, dt)
        lu, piv = zip(*(_lu(m) for m in a))
        out = [np.stack(lu).astype(dt), np.stack(piv)]
        return ([_draw(dt, rng, b_shape).astype(dt)] if b_shape else []) + out
    return gen


def _solve_lu(b, lu, piv):
    p, l, u = _unpack(lu, piv)
    return np.linalg.solve(p @ l @ u, b)


CASES += (_rows("lu_factor", _batched(_lu), _square(2, 4, 4))
          + _rows("lu_unpack", _batched(_unpack), _factored(None))
          + _rows("lu_solve", lambda b, lu, piv: _batched(lambda bb, l, p: _solve_lu(bb, l, p))(b, lu, piv),
                  _factored((2, 4, 3))))


def _eigvals(x, compute_v):
    wide = x.dtype in (np.float64, np.complex128)
    return np.linalg.eigvals(x).astype(np.complex128 if wide else np.complex64)


CASES += _rows("eig", _eigvals, _rect(2, 4, 4), dict(compute_v=False))


def _expm(x):
    """scipy's expm (Al-Mohy and Higham's algorithm: an independent implementation), batched."""
    from scipy.linalg import expm
    if x.size == 0:
        return x.copy()
    return np.stack([expm(m) for m in x.reshape(-1, *x.shape[-2:])]).reshape(x.shape).astype(x.dtype)


def _scaled(scale, *shape):
    """Random matrices of 1-norm about `scale`: small ones take a low Pade degree, large ones the
    scaling and squaring."""
    return lambda rng, dt: [(scale / shape[-1] * _draw(dt, rng, shape)).astype(dt)]


CASES += (_rows("matrix_exp", _expm, _scaled(0.01, 2, 3, 3), id="small")
          + _rows("matrix_exp", _expm, _scaled(0.5, 4, 4), id="mid")
          + _rows("matrix_exp", _expm, _scaled(2.0, 2, 5, 5), id="deg9")
          + _rows("matrix_exp", _expm, _scaled(25.0, 3, 6, 6), id="squared")
          + [OpCase("matrix_exp", _expm, [(0, 2, 2)], dtypes=("float32", "float64"), id="empty"),
             OpCase("matrix_exp", _expm, [(1, 1)], dtypes=("float32", "float64"), id="1x1")])
