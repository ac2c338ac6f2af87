"""geqrf/orgqr/ormqr (ops/householder.cc): LAPACK's packed Householder QR, checked through
Q R = A, Q^T Q = I and against numpy.linalg.qr, in both modes."""
import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops
from mycel.ops import operations as P

RNG = np.random.default_rng(11)


def T(a):
    return ms.Tensor(np.asarray(a))


class Net(nn.Cell):
    def construct(self, a, c):
        y, tau = ops.geqrf(a)
        q = ops.orgqr(y, tau)
        return y, tau, q, ops.ormqr(y, tau, c), ops.ormqr(y, tau, c, True, True)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_q_times_r_is_a_in_both_modes(dtype, tol):
    a = RNG.normal(size=(3, 6, 4)).astype(dtype)
    c = RNG.normal(size=(3, 6, 2)).astype(dtype)
    eager = Net()(T(a), T(c))
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = Net()(T(a), T(c))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    for y, tau, q, qc, qtc in (eager, compiled):
        y, tau, q = y.asnumpy(), tau.asnumpy(), q.asnumpy()
        assert y.dtype == dtype and tau.shape == (3, 4) and q.shape == (3, 6, 4)
        r = np.triu(y)[:, :4]
        np.testing.assert_allclose(q @ r, a, atol=tol * 10, rtol=tol * 10)
        np.testing.assert_allclose(np.swapaxes(q, 1, 2) @ q, np.broadcast_to(np.eye(4), (3, 4, 4)), atol=tol * 10)
        for b in range(3):  # numpy's R agrees up to the signs LAPACK picks (the same routine: equal)
            np.testing.assert_allclose(np.abs(r[b]), np.abs(np.linalg.qr(a[b].astype(np.float64))[1]),
                                       atol=tol * 10, rtol=tol * 10)
        # ormqr applies the full 6 x 6 Q: its first 4 columns are q; Q^T Q c = c
        np.testing.assert_allclose(qtc.asnumpy()[:, :4], np.swapaxes(q, 1, 2) @ c, atol=tol * 10, rtol=tol * 10)
        back = ops.ormqr(T(y), T(tau), qtc, True, False).asnumpy()
        np.testing.assert_allclose(back, c, atol=tol * 10, rtol=tol * 10)
        np.testing.assert_allclose(qc.asnumpy()[:, :, :], ops.ormqr(T(y), T(tau), T(c)).asnumpy(), atol=tol)


def test_vmap_over_a_batch():
    a = RNG.normal(size=(3, 5, 4))
    c = RNG.normal(size=(5, 2))
    y, tau = ops.vmap(ops.geqrf)(T(a))
    q = ops.vmap(ops.orgqr)(y, tau).asnumpy()
    np.testing.assert_allclose(q @ np.triu(y.asnumpy())[:, :4], a, atol=1e-12)
    tc = T(c)
    qc = ops.vmap(lambda yy, tt: ops.ormqr(yy, tt, tc, True, True))(y, tau).asnumpy()
    np.testing.assert_allclose(qc[:, :4], np.swapaxes(q, 1, 2) @ c, atol=1e-12)


def test_right_side_primitives_and_errors():
    a = RNG.normal(size=(4, 4))
    y, tau = P.Geqrf()(T(a))
    q = P.Orgqr()(y, tau).asnumpy()
    c = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(P.Ormqr(left=False)(y, tau, T(c)).asnumpy(), c @ q, atol=1e-12)
    np.testing.assert_allclose(ops.ormqr(y, tau, T(c), left=False, transpose=True).asnumpy(), c @ q.T, atol=1e-12)
    with pytest.raises(ValueError, match=r"orgqr.*m >= n"):
        ops.orgqr(T(np.zeros((2, 3))), T(np.zeros(2)))
    with pytest.raises(TypeError, match=r"geqrf.*int32.*float32, float64"):
        ops.geqrf(T(np.zeros((2, 2), np.int32)))
    with pytest.raises(ValueError, match=r"ormqr.*rows"):
        ops.ormqr(y, tau, T(np.zeros((3, 2))))
    with pytest.raises(ValueError, match=r"geqrf.*rank >= 2"):
        ops.geqrf(T(np.zeros(3)))
