"""ops.Custom with func_type "te" and "pyfunc" (eager), and its te.differentiate backward."""

import numpy as np
import pytest

import mycel as ms
from mycel import ops, te
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)


def te_matmul(a, b):
    k = te.reduce_axis((0, a.shape[1]), "k")
    return te.compute((a.shape[0], b.shape[1]), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), "mm")


def test_custom_te_forward_and_generated_backward_match_builtin_matmul():
    rng = np.random.default_rng(0)
    av = rng.standard_normal((6, 4)).astype(np.float32)
    bv = rng.standard_normal((4, 5)).astype(np.float32)
    dv = rng.standard_normal((6, 5)).astype(np.float32)
    mm = ops.Custom(te_matmul, lambda sa, sb: (sa[0], sb[1]), lambda da, db: da, func_type="te")
    out = mm(ms.Tensor(av), ms.Tensor(bv))
    np.testing.assert_allclose(out.asnumpy(), ops.matmul(ms.Tensor(av), ms.Tensor(bv)).asnumpy(),
                               rtol=1e-5, atol=1e-5)
    da, db = mm.bprop_call(av, bv, dv)
    # The built-in matmul's gradient, through mycel.grad with the same sensitivity.
    ga, gb = ms.grad(lambda a, b: (ops.matmul(a, b) * ms.Tensor(dv)).sum(), grad_position=(0, 1))(
        ms.Tensor(av), ms.Tensor(bv))
    np.testing.assert_allclose(da.asnumpy(), ga.asnumpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(db.asnumpy(), gb.asnumpy(), rtol=1e-5, atol=1e-5)
    # A second call with the same signature reuses the compiled kernels.
    assert len(mm._cache) == 1
    mm(av, bv)
    assert len(mm._cache) == 1


def test_custom_pyfunc_and_user_bprop():
    xv = np.linspace(-1, 1, 7).astype(np.float32)
    sq = ops.Custom(lambda x: x * x, (7,), ms.float32, func_type="pyfunc",
                    bprop=lambda x, out, dout: (2 * x * dout,))
    np.testing.assert_allclose(sq(ms.Tensor(xv)).asnumpy(), xv * xv)
    (dx,) = sq.bprop_call(xv, np.ones(7, np.float32))
    np.testing.assert_allclose(dx, 2 * xv)


def test_custom_errors():
    with pytest.raises(ValueError, match="func_type must be 'te', 'pyfunc', 'aot' or 'hybrid', got 'tbe'"):
        ops.Custom(lambda x: x, (1,), ms.float32, func_type="tbe")
    bad = ops.Custom(lambda x: te.vmuls(x, 2.0), (3,), ms.float32)
    with pytest.raises(ValueError, match=r"func returned shape \(4,\), but out_shape says \(3,\)"):
        bad(np.zeros(4, np.float32))
    wrong = ops.Custom(lambda x: x, (2,), ms.float32, func_type="pyfunc")
    with pytest.raises(NotImplementedError, match="pyfunc op needs a bprop"):
        wrong.bprop_call(np.zeros(2, np.float32), np.zeros(2, np.float32))


def test_custom_te_is_recorded_by_grad_and_matches_builtin():
    rng = np.random.default_rng(1)
    av = ms.Tensor(rng.standard_normal((3, 4)).astype(np.float32))
    bv = ms.Tensor(rng.standard_normal((4, 2)).astype(np.float32))
    mm = ops.Custom(te_matmul, lambda sa, sb: (sa[0], sb[1]), lambda da, db: da)
    ga, gb = ms.grad(lambda a, b: (ops.tanh(mm(a, b)) ** 2).sum(), grad_position=(0, 1))(av, bv)
    ra, rb = ms.grad(lambda a, b: (ops.tanh(ops.matmul(a, b)) ** 2).sum(), grad_position=(0, 1))(av, bv)
    np.testing.assert_allclose(ga.asnumpy(), ra.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb.asnumpy(), rb.asnumpy(), rtol=1e-5, atol=1e-6)
    # A float32 definition also serves float64 callers (the expression retyped, built once).
    a64, b64 = ms.Tensor(av.asnumpy().astype(np.float64)), ms.Tensor(bv.asnumpy().astype(np.float64))
    out = ops.te_call((a64, b64), kernel=mm._cache[next(iter(mm._cache))][3]["id"])
    assert out.dtype == ms.float64
    np.testing.assert_allclose(out.asnumpy(), a64.asnumpy() @ b64.asnumpy(), rtol=1e-12)


def test_te_call_errors():
    with pytest.raises(ValueError, match="no TE function with id 999999"):
        ops.te_call((ms.Tensor(np.zeros(2, np.float32)),), kernel=999999)


def test_te_call_in_graph_mode_with_grad():
    # te_call is a registry op, so a jit function compiles it and differentiates it through its
    # bprop (the TE gradient); the reference is the built-in matmul under the same jit + grad.
    rng = np.random.default_rng(2)
    av = ms.Tensor(rng.standard_normal((3, 4)).astype(np.float32))
    bv = ms.Tensor(rng.standard_normal((4, 2)).astype(np.float32))
    mm = ops.Custom(te_matmul, lambda sa, sb: (sa[0], sb[1]), lambda da, db: da)
    mm(av, bv)
    kid = next(iter(mm._cache.values()))[3]["id"]

    @ms.jit
    def loss(a, b):
        return ops.sigmoid(ops.te_call((a, b), kernel=kid)).sum()

    @ms.jit
    def ref(a, b):
        return ops.sigmoid(ops.matmul(a, b)).sum()
    np.testing.assert_allclose(loss(av, bv).asnumpy(), ref(av, bv).asnumpy(), rtol=1e-5)
    ga, gb = ms.grad(loss, grad_position=(0, 1))(av, bv)
    ra, rb = ms.grad(ref, grad_position=(0, 1))(av, bv)
    np.testing.assert_allclose(ga.asnumpy(), ra.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb.asnumpy(), rb.asnumpy(), rtol=1e-5, atol=1e-6)
