"""MindSpore's sparse tensors on Mycel's sparse kernels: CSRTensor.mv/.mm/.sum, ops.csr_mm,
CSR * / dense, COO coalesce and coo_add, the CSR <-> COO <-> dense conversions, against numpy
(scipy-free dense references), gradients against central finite differences in float64, the
methods in graph mode on containers a Cell holds, and the errors for malformed index arrays."""
import numpy as np
import pytest

import mycel
from mycel import COOTensor, CSRTensor, Tensor, nn, ops

MODES = pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
R = np.random.default_rng(14)


def _sparse(m, n, density=0.4, dtype=np.float64):
    d = (R.random((m, n)) < density) * R.standard_normal((m, n))
    d[0, :] = 0  # an empty row
    return d.astype(dtype)


def _csr_arrays(d):
    """indptr, indices, values of a dense matrix (numpy reference, row-major)."""
    rows, cols = np.nonzero(d)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=d.shape[0]))])
    return indptr.astype(np.int32), cols.astype(np.int32), d[rows, cols]


def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def test_csr_arrays_and_conversions_vs_numpy():
    d = _sparse(6, 5)
    ptr, ind, val = _csr_arrays(d)
    csr = CSRTensor(Tensor(ptr), Tensor(ind), Tensor(val), d.shape)
    np.testing.assert_array_equal(csr.to_dense().asnumpy(), d)
    np.testing.assert_array_equal(ops.csr_to_dense(csr).asnumpy(), d)
    coo = ops.csr_to_coo(csr)
    np.testing.assert_array_equal(coo.indices.asnumpy(), np.stack(np.nonzero(d), 1))
    np.testing.assert_array_equal(coo.to_dense().asnumpy(), d)
    back = ops.coo_to_csr(coo)
    np.testing.assert_array_equal(back.indptr.asnumpy(), ptr)
    np.testing.assert_array_equal(back.indices.asnumpy(), ind)
    from_dense = ops.dense_to_sparse_csr(Tensor(d))
    np.testing.assert_array_equal(from_dense.indptr.asnumpy(), ptr)
    np.testing.assert_array_equal(from_dense.values.asnumpy(), val)
    np.testing.assert_array_equal(ops.dense_to_sparse_coo(Tensor(d)).to_dense().asnumpy(), d)
    np.testing.assert_array_equal(Tensor(d).to_csr().indices.asnumpy(), ind)
    np.testing.assert_array_equal(Tensor(d).to_coo().values.asnumpy(), val)
    np.testing.assert_array_equal(ops.csr2coo(Tensor(ptr), length=len(ind)).asnumpy(), np.nonzero(d)[0])
    np.testing.assert_array_equal(ops.coo2csr(Tensor(np.nonzero(d)[0].astype(np.int32)), height=6).asnumpy(), ptr)
    dense = ops.SparseToDense()(coo.indices, coo.values, d.shape)
    np.testing.assert_array_equal(dense.asnumpy(), d)
    # int16 index arrays are accepted (MindSpore allows int16, int32, int64)
    c16 = CSRTensor(Tensor(ptr.astype(np.int16)), Tensor(ind.astype(np.int16)), Tensor(val), d.shape)
    np.testing.assert_array_equal(c16.to_dense().asnumpy(), d)
    assert csr.to_tuple()[3] == d.shape and csr.size == len(val) and csr.ndim == 2


def test_spmm_mv_sum_and_elementwise_vs_numpy():
    d = _sparse(7, 9, dtype=np.float32)
    csr = ops.dense_to_sparse_csr(Tensor(d))
    b = R.standard_normal((9, 4)).astype(np.float32)
    np.testing.assert_allclose(csr.mm(Tensor(b)).asnumpy(), d @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ops.csr_mm(csr, Tensor(b)).asnumpy(), d @ b, rtol=1e-5, atol=1e-5)
    bt = R.standard_normal((7, 3)).astype(np.float32)
    np.testing.assert_allclose(ops.csr_mm(csr, Tensor(bt), trans_a=True).asnumpy(), d.T @ bt, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ops.csr_mm(csr, Tensor(b.T.copy()), trans_b=True).asnumpy(), d @ b, rtol=1e-5, atol=1e-5)
    v = b[:, :1]
    np.testing.assert_allclose(csr.mv(Tensor(v)).asnumpy(), d @ v, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ops.csr_mv(csr, Tensor(v)).asnumpy(), d @ v, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(csr.sum(1).asnumpy(), d.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(csr.sum(0).asnumpy(), d.sum(0, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ops.csr_reduce_sum(csr, -1).asnumpy(), d.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    row = R.uniform(1, 2, (1, 9)).astype(np.float32)
    col = R.uniform(1, 2, (7, 1)).astype(np.float32)
    np.testing.assert_allclose((csr * Tensor(row)).to_dense().asnumpy(), d * row, rtol=1e-6)
    np.testing.assert_allclose(ops.csr_mul(csr, Tensor(col)).to_dense().asnumpy(), d * col, rtol=1e-6)
    np.testing.assert_allclose((csr / Tensor(col)).to_dense().asnumpy(), d / col, rtol=1e-6)
    np.testing.assert_allclose(ops.csr_div(csr, Tensor(row)).to_dense().asnumpy(), d / row, rtol=1e-6)
    np.testing.assert_allclose((csr * 3.0).to_dense().asnumpy(), d * 3, rtol=1e-6)
    np.testing.assert_allclose(csr.abs().to_dense().asnumpy(), np.abs(d))
    np.testing.assert_allclose(ops.csr_relu(csr).to_dense().asnumpy(), np.maximum(d, 0))
    np.testing.assert_allclose((-csr).to_dense().asnumpy(), -d)
    e = _sparse(7, 9, dtype=np.float32)
    other = ops.dense_to_sparse_csr(Tensor(e))
    np.testing.assert_allclose((csr + other).to_dense().asnumpy(), d + e, rtol=1e-6)
    np.testing.assert_allclose((csr - other).to_dense().asnumpy(), d - e, rtol=1e-6)
    np.testing.assert_allclose(ops.csr_add(csr, other, Tensor(np.float32(2)), Tensor(np.float32(-0.5))).to_dense().asnumpy(),
                               2 * d - 0.5 * e, rtol=1e-6, atol=1e-6)


def test_spmm_large_parallel_vs_numpy():
    d = _sparse(300, 200, density=0.05)
    csr = ops.dense_to_sparse_csr(Tensor(d))
    b = R.standard_normal((200, 64))
    np.testing.assert_allclose(csr.mm(Tensor(b)).asnumpy(), d @ b, rtol=1e-10, atol=1e-10)
    bt = R.standard_normal((300, 64))
    np.testing.assert_allclose(ops.csr_mm(csr, Tensor(bt), trans_a=True).asnumpy(), d.T @ bt, rtol=1e-10, atol=1e-10)


def test_coo_coalesce_and_add_vs_numpy():
    idx = np.array([[2, 1], [0, 3], [2, 1], [1, 0], [0, 3]], np.int64)
    val = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    coo = COOTensor(Tensor(idx), Tensor(val), (3, 4))
    c = coo.coalesce()
    np.testing.assert_array_equal(c.indices.asnumpy(), [[0, 3], [1, 0], [2, 1]])
    np.testing.assert_array_equal(c.values.asnumpy(), [7.0, 4.0, 4.0])
    np.testing.assert_array_equal(c.to_dense().asnumpy(), coo.to_dense().asnumpy())
    # MindSpore's documented example of ops.coo_add
    x1 = COOTensor(Tensor(np.array([[0, 1], [1, 2]], np.int64)), Tensor(np.array([1, 2], np.int32)), (3, 4))
    x2 = COOTensor(Tensor(np.array([[0, 0], [1, 1]], np.int64)), Tensor(np.array([3, 4], np.int32)), (3, 4))
    s = ops.coo_add(x1, x2, Tensor(0, mycel.int32))
    np.testing.assert_array_equal(s.indices.asnumpy(), [[0, 0], [0, 1], [1, 1], [1, 2]])
    np.testing.assert_array_equal(s.values.asnumpy(), [3, 1, 4, 2])
    # values whose magnitude is below thresh are dropped; cancelling pairs too
    a = COOTensor(Tensor(np.array([[0, 0], [1, 1], [2, 2]], np.int64)), Tensor(np.array([0.5, 2.0, -3.0])), (3, 3))
    b = COOTensor(Tensor(np.array([[1, 1], [2, 0]], np.int64)), Tensor(np.array([-2.0, -0.1])), (3, 3))
    t = a.add(b, Tensor(np.float64(0.3)))
    np.testing.assert_array_equal(t.indices.asnumpy(), [[0, 0], [2, 2]])
    np.testing.assert_array_equal(t.values.asnumpy(), [0.5, -3.0])
    np.testing.assert_allclose((a + b).to_dense().asnumpy(), a.to_dense().asnumpy() + b.to_dense().asnumpy())
    dense = R.standard_normal((3, 3))
    np.testing.assert_allclose((a + Tensor(dense)).asnumpy(), a.to_dense().asnumpy() + dense)
    np.testing.assert_allclose((a * Tensor(dense)).to_dense().asnumpy(), a.to_dense().asnumpy() * dense)
    np.testing.assert_allclose(ops.coo_abs(a).to_dense().asnumpy(), np.abs(a.to_dense().asnumpy()))


def test_gradients_vs_finite_differences():
    d = _sparse(5, 6)
    ptr, ind, val = _csr_arrays(d)
    b = R.standard_normal((6, 3))
    w = R.standard_normal((5, 3))
    scale = R.uniform(1, 2, (1, 6))

    def f_np(v, dense):
        a = np.zeros(d.shape)
        a[np.repeat(np.arange(5), np.diff(ptr)), ind] = v
        return float(((a @ dense) * w).sum() + ((a * scale) ** 2).sum() + (a / scale).sum(0).sum() ** 2)

    def f(v, dense):
        a = CSRTensor(Tensor(ptr), Tensor(ind), v, d.shape)
        mm = ops.sum(a.mm(dense) * Tensor(w))
        scaled = ops.sum((a * Tensor(scale)).values ** 2)
        return mm + scaled + ops.sum((a / Tensor(scale)).sum(0)) ** 2

    gv, gd = mycel.grad(f, grad_position=(0, 1))(Tensor(val), Tensor(b))
    np.testing.assert_allclose(gv.asnumpy(), _numeric_grad(lambda v: f_np(v, b), val), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gd.asnumpy(), _numeric_grad(lambda x: f_np(val, x), b), rtol=1e-6, atol=1e-6)

    # COO: to_dense, coalesce and dense products carry gradients to the values
    idx = np.array([[0, 1], [2, 2], [0, 1], [1, 0]], np.int64)
    cv = R.standard_normal(4)
    m = R.standard_normal((3, 3))

    def g_np(v):
        a = np.zeros((3, 3))
        np.add.at(a, tuple(idx.T), v)
        return float((a * m).sum() + (a ** 2).sum())

    def g(v):
        c = COOTensor(Tensor(idx), v, (3, 3))
        return ops.sum(c.to_dense() * Tensor(m)) + ops.sum(c.coalesce().values ** 2)

    np.testing.assert_allclose(mycel.grad(g)(Tensor(cv)).asnumpy(), _numeric_grad(g_np, cv), rtol=1e-6, atol=1e-6)


def test_second_order_gradient_through_spmm():
    # d/dv of sum((d(f)/d dense)^2): the SpMM bprop is made of sparse ops, so it differentiates again.
    d = _sparse(4, 5)
    ptr, ind, val = _csr_arrays(d)
    b = R.standard_normal((5, 2))
    w = R.standard_normal((4, 2))

    def inner(v, dense):
        # the registry op: a second derivative is taken by graph mode, where CSRTensor is not built
        return ops.sum(ops.csr_spmm(Tensor(ptr), Tensor(ind), v, dense, shape=d.shape) * Tensor(w))

    def outer(v, dense):
        return ops.sum(mycel.grad(inner, grad_position=1)(v, dense) ** 2)

    def outer_np(v):
        a = np.zeros(d.shape)
        a[np.repeat(np.arange(4), np.diff(ptr)), ind] = v
        return float(((a.T @ w) ** 2).sum())

    got = mycel.grad(outer)(Tensor(val), Tensor(b)).asnumpy()
    np.testing.assert_allclose(got, _numeric_grad(outer_np, val), rtol=1e-6, atol=1e-6)


class _SparseNet(nn.Cell):
    """Holds a CSRTensor and a COOTensor; its construct calls their dense-result methods."""

    def __init__(self, csr, coo):
        super().__init__()
        self.csr, self.coo = csr, coo

    def construct(self, x, v):
        mm = self.csr.mm(x)
        mv = self.csr.mv(v)
        return mm, mv, self.csr.sum(0), self.csr.sum(1), self.csr.to_dense(), self.coo.to_dense()


class _ValuesNet(nn.Cell):
    """SpMM through the registry op with the values as an input (graph mode differentiates it)."""

    def __init__(self, csr):
        super().__init__()
        self.indptr, self.indices, self.shape = csr.indptr, csr.indices, csr.shape

    def construct(self, values, x):
        y = ops.csr_spmm(self.indptr, self.indices, values, x, shape=self.shape)
        return ops.sum(y * y) + ops.sum(values * values)


@MODES
def test_sparse_cell_both_modes_vs_numpy(mode):
    mycel.set_context(mode=mode)
    try:
        d = _sparse(6, 4)
        csr = ops.dense_to_sparse_csr(Tensor(d))
        coo = csr.to_coo()
        x = R.standard_normal((4, 3))
        v = R.standard_normal((4, 1))
        mm, mv, s0, s1, dense, cdense = _SparseNet(csr, coo)(Tensor(x), Tensor(v))
        np.testing.assert_allclose(mm.asnumpy(), d @ x, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(mv.asnumpy(), d @ v, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(s0.asnumpy(), d.sum(0, keepdims=True), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(s1.asnumpy(), d.sum(1, keepdims=True), rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(dense.asnumpy(), d)
        np.testing.assert_array_equal(cdense.asnumpy(), d)

        net = _ValuesNet(csr)
        val = csr.values.asnumpy()
        gv, gx = mycel.grad(net, grad_position=(0, 1))(Tensor(val), Tensor(x))
        ptr, ind = csr.indptr.asnumpy(), csr.indices.asnumpy()

        def f_np(vals, dense):
            a = np.zeros(d.shape)
            a[np.repeat(np.arange(6), np.diff(ptr)), ind] = vals
            return float(((a @ dense) ** 2).sum() + (vals ** 2).sum())

        np.testing.assert_allclose(gv.asnumpy(), _numeric_grad(lambda t: f_np(t, x), val), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(gx.asnumpy(), _numeric_grad(lambda t: f_np(val, t), x), rtol=1e-6, atol=1e-6)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_malformed_sparse_input_errors():
    with pytest.raises(ValueError, match="indptr must be non-decreasing"):
        CSRTensor(Tensor(np.array([0, 2, 1], np.int32)), Tensor(np.array([0], np.int32)), Tensor([1.0]), (2, 2))
    with pytest.raises(ValueError, match=r"columns in \[0, 2\)"):
        CSRTensor(Tensor(np.array([0, 1, 1], np.int32)), Tensor(np.array([5], np.int32)), Tensor([1.0]), (2, 2))
    with pytest.raises(ValueError, match="indices out of range"):
        COOTensor(Tensor(np.array([[0, 4]])), Tensor([1.0]), (3, 4))
    with pytest.raises(TypeError, match="int16, int32 or int64"):
        CSRTensor(Tensor(np.array([0, 1.0])), Tensor(np.array([0], np.int32)), Tensor([1.0]), (1, 2))
    ptr, ind = Tensor(np.array([0, 1, 2], np.int32)), Tensor(np.array([0, 1], np.int32))
    val = Tensor(np.array([1.0, 2.0]))
    # the kernels check the arrays themselves (the registry ops take raw arrays)
    with pytest.raises(ValueError, match=r"\[csr_spmm\] indptr must be non-decreasing"):
        ops.csr_spmm(Tensor(np.array([0, 2, 1, 2], np.int32)), ind, val, Tensor(np.ones((2, 1))), shape=(3, 2))
    with pytest.raises(ValueError, match=r"\[csr_scatter\] column index 7"):
        ops.csr_scatter(ptr, Tensor(np.array([0, 7], np.int32)), val, shape=(2, 2))
    with pytest.raises(ValueError, match="'indptr' must have rows \\+ 1 = 4"):
        ops.csr_spmm(ptr, ind, val, Tensor(np.ones((2, 1))), shape=(3, 2))
    with pytest.raises(ValueError, match=r"\[coo2csr\] row indices must be sorted"):
        ops.coo2csr(Tensor(np.array([1, 0], np.int32)), height=2)
    with pytest.raises(ValueError, match=r"\[coo2csr\] row index 3"):
        ops.coo2csr(Tensor(np.array([0, 3], np.int32)), height=2)
    csr = CSRTensor(ptr, ind, val, (2, 2))
    with pytest.raises(ValueError, match="csr_spmm"):
        csr.mm(Tensor(np.ones((3, 1))))
    with pytest.raises(ValueError, match=r"shape \(2, 1\)"):
        ops.csr_mv(csr, Tensor(np.ones((2, 2))))
    with pytest.raises(TypeError, match="dtype"):
        csr * Tensor(np.ones((2, 2), np.float32))
    with pytest.raises(ValueError, match="do not multiply"):  # CSR x CSR (csr_spgemm) checks the shapes
        ops.csr_mm(csr, CSRTensor(Tensor(np.array([0, 1, 1, 1], np.int32)), ind[:1], val[:1], (3, 2)))
    with pytest.raises(ValueError, match=r"\[csr_spgemm\] indptr must be non-decreasing"):
        ops.csr_spgemm(Tensor(np.array([0, 2, 1, 2], np.int32)), ind, val, ptr, ind, val, shape=(3, 2), shape_b=(2, 2))
    with pytest.raises(ValueError, match="shapes"):
        ops.coo_add(COOTensor(Tensor(np.array([[0, 0]])), val[:1], (2, 2)),
                    COOTensor(Tensor(np.array([[0, 0]])), val[:1], (3, 2)), None)
    with pytest.raises(ValueError, match="axis"):
        csr.sum(2)



class _CooMatmul(nn.Cell):
    def __init__(self, adjoint_st, adjoint_dt):
        super().__init__()
        self.mm = nn.SparseTensorDenseMatmul(adjoint_st, adjoint_dt)

    def construct(self, indices, values, dense):
        return self.mm(indices, values, (4, 3), dense)


@MODES
def test_sparse_tensor_dense_matmul_both_modes(mode):
    mycel.set_context(mode=mode)
    try:
        idx = np.array([[0, 1], [3, 2], [0, 1], [2, 0]], np.int64)
        val = R.standard_normal(4)
        a = np.zeros((4, 3))
        np.add.at(a, tuple(idx.T), val)
        for st, dt in ((False, False), (True, False), (False, True), (True, True)):
            left = a.T if st else a
            dense = R.standard_normal((left.shape[1], 2))
            given = dense.T.copy() if dt else dense
            out = _CooMatmul(st, dt)(Tensor(idx), Tensor(val), Tensor(given))
            np.testing.assert_allclose(out.asnumpy(), left @ dense, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(
            ops.SparseTensorDenseMatmul()(Tensor(idx), Tensor(val), (4, 3), Tensor(np.eye(3))).asnumpy(), a)
        net, tidx = _CooMatmul(False, False), Tensor(idx)
        gv = mycel.grad(lambda v, d: ops.sum(net(tidx, v, d) ** 2), grad_position=(0, 1))(Tensor(val),
                                                                                         Tensor(np.ones((3, 2))))
        want_v = np.array([2 * (a @ np.ones((3, 2)))[r].sum() for r, _ in idx])  # d/dv_j = sum_k 2 y[r_j, k] * 1
        np.testing.assert_allclose(gv[0].asnumpy(), want_v, rtol=1e-10)
        np.testing.assert_allclose(gv[1].asnumpy(), 2 * a.T @ a @ np.ones((3, 2)), rtol=1e-10)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    coo = COOTensor(Tensor(np.array([[0, 1]])), Tensor([2.0]), (2, 2))
    np.testing.assert_array_equal(nn.SparseToDense()(coo).asnumpy(), [[0, 2], [0, 0]])


def test_vmap_of_spmm_over_dense_operands():
    d = _sparse(5, 4)
    ptr, ind, val = (Tensor(a) for a in _csr_arrays(d))
    stack = R.standard_normal((3, 4, 2))
    assert mycel._mycel.graph.batching_rule("csr_spmm") == "own"
    for axis, given in ((0, stack), (2, np.moveaxis(stack, 0, 2))):
        out = ops.vmap(lambda x: ops.csr_spmm(ptr, ind, val, x, shape=d.shape), in_axes=axis)(Tensor(given))
        np.testing.assert_allclose(out.asnumpy(), np.stack([d @ s for s in stack]), rtol=1e-12, atol=1e-12)
    vals = R.standard_normal((3, len(val.asnumpy())))  # batched values: one call per item

    first = Tensor(stack[0])

    def f(v):
        return ops.csr_spmm(ptr, ind, v, first, shape=d.shape)

    want = []
    for v in vals:
        a = np.zeros(d.shape)
        a[np.nonzero(d)] = v
        want.append(a @ stack[0])
    np.testing.assert_allclose(ops.vmap(f)(Tensor(vals)).asnumpy(), np.stack(want), rtol=1e-12, atol=1e-12)
