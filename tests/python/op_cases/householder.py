"""Table rows for geqrf/orgqr/ormqr (ops/householder.cc) against numpy.linalg.qr's raw
Householder form (LAPACK's geqrf) and the Q it implies."""
import numpy as np

from op_cases import OpCase

F = ("float32", "float64")


def _raw(a):
    """numpy's (packed, tau) per matrix of a batch (numpy returns the packed matrix transposed)."""
    flat = a.reshape((-1,) + a.shape[-2:]).astype(np.float64)
    ys, taus = [], []
    for m in flat:
        h, tau = np.linalg.qr(m, mode="raw")
        ys.append(h.T)
        taus.append(tau)
    k = min(a.shape[-2:])
    return (np.array(ys).reshape(a.shape).astype(a.dtype),
            np.array(taus).reshape(a.shape[:-2] + (k,)).astype(a.dtype))


def _q_full(y, tau):
    """Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^T with v_i = (0.., 1, y[i+1:, i])."""
    m = y.shape[0]
    q = np.eye(m)
    for i in range(tau.shape[0]):
        v = np.zeros(m)
        v[i] = 1.0
        v[i + 1:] = y[i + 1:, i]
        q = q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return q


def _orgqr_ref(y, tau):
    out = [_q_full(a, t)[:, :a.shape[1]] for a, t in zip(y.reshape((-1,) + y.shape[-2:]).astype(np.float64),
                                                         tau.reshape(-1, tau.shape[-1]).astype(np.float64))]
    return np.array(out).reshape(y.shape).astype(y.dtype)


def _ormqr_ref(y, tau, c, left=True, transpose=False):
    outs = []
    for a, t, cc in zip(y.reshape((-1,) + y.shape[-2:]).astype(np.float64), tau.reshape(-1, tau.shape[-1]),
                        c.reshape((-1,) + c.shape[-2:]).astype(np.float64)):
        q = _q_full(a, t.astype(np.float64))
        q = q.T if transpose else q
        outs.append(q @ cc if left else cc @ q)
    return np.array(outs).reshape(c.shape).astype(c.dtype)


def _factored(shape, other=None, k=None):
    """A random matrix batch factored by numpy (so the rows test orgqr/ormqr alone)."""
    def gen(rng, dt):
        y, tau = _raw(rng.standard_normal(shape).astype(dt))
        if k is not None:
            tau = tau[..., :k]
        arrays = [y, tau]
        if other is not None:
            arrays.append(rng.standard_normal(other).astype(dt))
        return arrays
    return gen


CASES = [
    OpCase("geqrf", lambda a: _raw(a), [(5, 3)], dtypes=F, rtol=1e-4, atol=1e-5),
    OpCase("geqrf", lambda a: _raw(a), [(2, 3, 4)], dtypes=F, rtol=1e-4, atol=1e-5, id="wide_batch"),
    OpCase("orgqr", _orgqr_ref, _factored((5, 3)), dtypes=F, rtol=1e-4, atol=1e-5),
    OpCase("orgqr", _orgqr_ref, _factored((2, 4, 4), k=2), dtypes=F, rtol=1e-4, atol=1e-5, id="k2_batch"),
    OpCase("ormqr", _ormqr_ref, _factored((4, 3), other=(4, 2)), dtypes=F, rtol=1e-4, atol=1e-5),
    OpCase("ormqr", _ormqr_ref, _factored((3, 3), other=(2, 3)), dict(left=False, transpose=True),
           dtypes=F, rtol=1e-4, atol=1e-5, id="right_t"),
]
