"""MindSpore's ops.operations.sparse_ops primitives (COO and batched-CSR arrays) against scipy.sparse
and numpy, each inside a Cell run eagerly and compiled (GRAPH_MODE), plus dynamic shapes through
Cell.set_inputs, gradients against finite differences, and the errors for bad input."""
import numpy as np
import pytest
import scipy.sparse as sp

import mycel as ms
from mycel import Tensor, nn
from mycel.ops.function import csr_softmax
from mycel.ops.operations import sparse_ops as S

MODES = [ms.PYNATIVE_MODE, ms.GRAPH_MODE]
RNG = np.random.default_rng(7)


class _Net(nn.Cell):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, *args):
        return self.op(*args)


class _Net3(_Net):
    def construct(self, a, b, c):
        return self.op(a, b, c)


class _Net6(_Net):
    def construct(self, a, b, c, d, e, f):
        return self.op(a, b, c, d, e, f)


def run(op, *args, mode=ms.PYNATIVE_MODE, dyn=None):
    """op(*args) inside a Cell in `mode`; dyn: set_inputs placeholders (None dims), which need a
    construct with named parameters."""
    ms.set_context(mode=mode)
    try:
        net = _Net(op) if dyn is None else {3: _Net3, 6: _Net6}[len(args)](op)
        if dyn is not None:
            net.set_inputs(*dyn)
        out = net(*[Tensor(a) if isinstance(a, np.ndarray) else a for a in args])
        return tuple(o.asnumpy() for o in out) if isinstance(out, tuple) else out.asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def random_coo(shape, count, dtype=np.float32):
    """(indices in row-major order, values) at `count` distinct positions of a dense shape."""
    flat = np.sort(RNG.choice(int(np.prod(shape)), size=count, replace=False))
    idx = np.stack(np.unravel_index(flat, shape), 1).astype(np.int64)
    vals = RNG.integers(-4, 5, count).astype(dtype) if np.dtype(dtype).kind == "i" else \
        RNG.normal(size=count).astype(dtype)
    return idx, vals


def dense_of(idx, vals, shape):
    out = np.zeros(shape, vals.dtype)
    np.add.at(out, tuple(idx.T), vals)
    return out


def coo_entries(dense, mask):
    idx = np.argwhere(mask)
    return idx, dense[tuple(idx.T)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_sparse_add_against_dense_sum(mode, dtype):
    shape = (4, 5)
    a_idx, a_val = random_coo(shape, 8, dtype)
    b_idx, b_val = random_coo(shape, 7, dtype)
    thresh = np.array(2, dtype)
    idx, val, out_shape = run(S.SparseAdd(), a_idx, a_val, np.array(shape, np.int64), b_idx, b_val,
                              np.array(shape, np.int64), thresh, mode=mode)
    ina, inb = np.zeros(shape, bool), np.zeros(shape, bool)
    ina[tuple(a_idx.T)] = True
    inb[tuple(b_idx.T)] = True
    total = dense_of(a_idx, a_val, shape) + dense_of(b_idx, b_val, shape)
    # a position in both inputs is kept only where |sum| >= thresh; one-sided ones are copied
    keep = (ina ^ inb) | (ina & inb & (np.abs(total) >= thresh))
    want_idx, want_val = coo_entries(total, keep)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_allclose(val, want_val, rtol=1e-6)
    np.testing.assert_array_equal(out_shape, shape)
    assert val.dtype == dtype and idx.dtype == np.int64


@pytest.mark.parametrize("mode", MODES)
def test_sparse_sparse_maximum_minimum(mode):
    shape = (3, 2, 4)
    a_idx, a_val = random_coo(shape, 9)
    b_idx, b_val = random_coo(shape, 10)
    sh = np.array(shape, np.int64)
    union = np.zeros(shape, bool)
    union[tuple(a_idx.T)] = True
    union[tuple(b_idx.T)] = True
    da, db = dense_of(a_idx, a_val, shape), dense_of(b_idx, b_val, shape)
    for op, ref in ((S.SparseSparseMaximum(), np.maximum), (S.SparseSparseMinimum(), np.minimum)):
        idx, val = run(op, a_idx, a_val, sh, b_idx, b_val, sh, mode=mode)
        want_idx, want_val = coo_entries(ref(da, db), union)  # absent entries compare as 0
        np.testing.assert_array_equal(idx, want_idx)
        np.testing.assert_allclose(val, want_val, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_sparse_reorder_and_reshape(mode):
    shape = (2, 3, 6)
    idx, val = random_coo(shape, 10)
    perm = RNG.permutation(10)
    got_idx, got_val = run(S.SparseReorder(), idx[perm], val[perm], np.array(shape, np.int64), mode=mode)
    order = np.lexsort(idx[perm].T[::-1])
    np.testing.assert_array_equal(got_idx, idx[perm][order])
    np.testing.assert_array_equal(got_val, val[perm][order])
    new_idx, new_shape = run(S.SparseReshape(), idx, np.array(shape, np.int64), np.array([9, -1], np.int64),
                             mode=mode)
    np.testing.assert_array_equal(new_shape, [9, 4])
    flat = np.ravel_multi_index(tuple(idx.T), shape)
    np.testing.assert_array_equal(new_idx, np.stack(np.unravel_index(flat, (9, 4)), 1))


@pytest.mark.parametrize("mode", MODES)
def test_sparse_dense_cwise_broadcasts_dense(mode):
    shape = (3, 4)
    idx, val = random_coo(shape, 6)
    x2 = (RNG.normal(size=(4,)) + 3).astype(np.float32)  # broadcast along rows
    full = np.broadcast_to(x2, shape)
    at = full[tuple(idx.T)]
    sh = np.array(shape, np.int64)
    np.testing.assert_allclose(run(S.SparseDenseCwiseAdd(), idx, val, sh, x2, mode=mode), val + at, rtol=1e-6)
    np.testing.assert_allclose(run(S.SparseDenseCwiseMul(), idx, val, sh, x2, mode=mode), val * at, rtol=1e-6)
    np.testing.assert_allclose(run(S.SparseDenseCwiseDiv(), idx, val, sh, x2, mode=mode), val / at, rtol=1e-6)
    col = np.array([[2], [-3], [5]], np.int32)  # (3, 1): broadcast along columns; integer division truncates
    ival = np.array([7, -7, 9, -9, 4, 1], np.int32)[:len(idx)]
    got = run(S.SparseDenseCwiseDiv(), idx, ival, sh, col, mode=mode)
    np.testing.assert_array_equal(got, np.trunc(ival / np.broadcast_to(col, shape)[tuple(idx.T)]).astype(np.int32))


@pytest.mark.parametrize("mode", MODES)
def test_sparse_addmm_against_scipy(mode):
    idx, val = random_coo((3, 4), 5)
    x2 = RNG.normal(size=(4, 2)).astype(np.float32)
    x3 = RNG.normal(size=(3, 2)).astype(np.float32)
    got = run(S.SparseAddmm(), idx.astype(np.int32), val, np.array([3, 4], np.int32), x2, x3,
              np.array([0.5], np.float32), np.array([2.0], np.float32), mode=mode)
    a = sp.coo_matrix((val, (idx[:, 0], idx[:, 1])), shape=(3, 4))
    np.testing.assert_allclose(got, 0.5 * (a @ x2) + 2.0 * x3, rtol=1e-5, atol=1e-6)


def batched_csr(shape, density=0.4, dtype=np.float32):
    """MindSpore's batched CSR arrays of a random (B, M, N) or (M, N) matrix, and its dense form."""
    dense = RNG.normal(size=shape).astype(dtype) * (RNG.random(shape) < density)
    mats = dense.reshape((-1,) + shape[-2:])
    bp, rp, ci, vals = [0], [], [], []
    for m in mats:
        c = sp.csr_matrix(m)
        c.sort_indices()
        bp.append(bp[-1] + c.nnz)
        rp += c.indptr.tolist()
        ci += c.indices.tolist()
        vals += c.data.tolist()
    i32 = np.int32
    return (np.array(shape, i32), np.array(bp, i32), np.array(rp, i32), np.array(ci, i32),
            np.array(vals, dtype)), dense


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(4, 5), (2, 4, 5)])
def test_sparse_matrix_mat_mul_nnz_softmax(mode, shape):
    arrays, dense = batched_csr(shape)
    x2 = RNG.normal(size=shape[:-2] + (shape[-1], 3)).astype(np.float32)
    np.testing.assert_allclose(run(S.SparseMatrixMatMul(), *arrays, x2, mode=mode), dense @ x2, rtol=1e-5, atol=1e-6)
    x2t = np.swapaxes(x2, -1, -2).copy()
    got = run(S.SparseMatrixMatMul(transpose_x2=True, transpose_output=True), *arrays, x2t, mode=mode)
    np.testing.assert_allclose(got, np.swapaxes(dense @ x2, -1, -2), rtol=1e-5, atol=1e-6)
    nnz = run(S.SparseMatrixNNZ(), *arrays, mode=mode)
    np.testing.assert_array_equal(nnz, np.diff(arrays[1]))
    out = run(S.SparseMatrixSoftmax(ms.float32), *arrays, mode=mode)
    for got_a, want_a in zip(out[:4], arrays[:4]):
        np.testing.assert_array_equal(got_a, want_a)
    # each stored row's softmax over its stored entries (absent entries are -inf)
    mask = dense != 0
    e = np.where(mask, np.exp(dense - np.where(mask, dense, -np.inf).max(-1, keepdims=True)), 0)
    soft = np.divide(e, e.sum(-1, keepdims=True), out=np.zeros_like(e), where=e.sum(-1, keepdims=True) > 0)
    np.testing.assert_allclose(out[4], soft[mask], rtol=1e-5)


def test_csr_softmax_function():
    arrays, dense = batched_csr((3, 6))
    logits = ms.CSRTensor(Tensor(arrays[2]), Tensor(arrays[3]), Tensor(arrays[4]), (3, 6))
    out = csr_softmax(logits, ms.float32)
    mask = dense != 0
    e = np.where(mask, np.exp(dense), 0)
    np.testing.assert_allclose(out.values.asnumpy(), (e / np.maximum(e.sum(1, keepdims=True), 1e-30))[mask], rtol=1e-5)
    with pytest.raises(TypeError, match="CSRTensor"):
        csr_softmax(Tensor(dense), ms.float32)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 4)])
def test_sparse_tensor_to_csr_and_transpose_against_scipy(mode, shape):
    idx, val = random_coo(shape, 7)
    perm = RNG.permutation(7)
    out = run(S.SparseTensorToCSRSparseMatrix(), idx[perm], val[perm], np.array(shape, np.int64), mode=mode)
    (dshape, bp, rp, ci, vals), dense = batched_csr_from(idx, val, shape)
    for got, want in zip(out, (dshape, bp, rp, ci, vals)):
        np.testing.assert_allclose(got, want)
    t = run(S.SparseMatrixTranspose(), *out, mode=mode)
    tdense = np.swapaxes(dense, -1, -2)
    (tshape, tbp, trp, tci, tvals), _ = batched_csr_from(np.argwhere(tdense != 0), tdense[tdense != 0], tdense.shape)
    for got, want in zip(t, (tshape, tbp, trp, tci, tvals)):
        np.testing.assert_allclose(got, want)


def batched_csr_from(idx, val, shape):
    dense = dense_of(idx, val, shape)
    mats = dense.reshape((-1,) + shape[-2:])
    bp, rp, ci, vals = [0], [], [], []
    for m in mats:
        c = sp.csr_matrix(m)
        bp.append(bp[-1] + c.nnz)
        rp += c.indptr.tolist()
        ci += c.indices.tolist()
        vals += c.data.tolist()
    return (np.array(shape), np.array(bp), np.array(rp), np.array(ci), np.array(vals)), dense


def test_sparse_matrix_transpose_conjugates_complex():
    arrays, dense = batched_csr((3, 4), dtype=np.float64)
    cvals = (arrays[4] + 1j * np.arange(len(arrays[4]))).astype(np.complex64)
    cdense = np.zeros((3, 4), np.complex64)
    cdense[dense != 0] = cvals
    out = S.SparseMatrixTranspose(conjugate=True)(*[Tensor(a) for a in arrays[:4]], Tensor(cvals))
    want = sp.csr_matrix(cdense.conj().T)
    np.testing.assert_array_equal(out[2].asnumpy(), want.indptr)
    np.testing.assert_allclose(out[4].asnumpy(), want.data)


@pytest.mark.parametrize("mode", MODES)
def test_sparse_count_sparse_output(mode):
    idx = np.array([[1, 2], [3, 4], [2, 1], [2, 2], [1, 0], [3, 3], [2, 0], [2, 2]], np.int64)
    values = RNG.integers(0, 9, 8).astype(np.int64)
    weights = RNG.normal(size=8).astype(np.float64)
    dense_shape = np.array([5, 5], np.int64)
    for binary, maxlength in ((False, -1), (True, -1), (False, 4)):
        got = run(S.SparseCountSparseOutput(binary_output=binary, minlength=-1, maxlength=maxlength),
                  idx, values, dense_shape, weights, mode=mode)
        counts = {}
        for (b, _), v, w in zip(idx, values, weights):
            if maxlength > 0 and v >= maxlength:
                continue
            counts[(b, v)] = 1.0 if binary else counts.get((b, v), 0.0) + w
        keys = sorted(counts)
        np.testing.assert_array_equal(got[0], np.array(keys, np.int64).reshape(-1, 2))
        np.testing.assert_allclose(got[1], [counts[k] for k in keys], rtol=1e-12)
        width = maxlength if maxlength > 0 else values.max() + 1
        np.testing.assert_array_equal(got[2], [5, width])


def test_sparse_count_sparse_output_errors():
    op = S.SparseCountSparseOutput(binary_output=False)
    idx = Tensor(np.array([[1, 2], [8, 6]], np.int64))
    with pytest.raises(RuntimeError, match=r"indices\[1\]\[0\] = 8 is out of bounds"):
        op(idx, Tensor(np.array([0, 2], np.int64)), Tensor(np.array([4, 3], np.int64)),
           Tensor(np.array([1, 2], np.int64)))
    with pytest.raises(ValueError, match="'weights' has 3 entries but 'values' has 2"):
        op(idx, Tensor(np.array([0, 2], np.int64)), Tensor(np.array([9, 9], np.int64)),
           Tensor(np.array([1, 2, 3], np.int64)))


@pytest.mark.parametrize("mode", MODES)
def test_sparse_segment_mean_with_num_segments_and_grad(mode):
    x = RNG.normal(size=(5, 3)).astype(np.float64)
    indices = np.array([0, 2, 1, 4, 4], np.int32)
    seg = np.array([0, 0, 2, 2, 3], np.int32)
    got = run(S.SparseSegmentMeanWithNumSegments(), x, indices, seg, np.array([6], np.int32), mode=mode)
    want = np.zeros((6, 3))
    for s in range(6):
        rows = indices[seg == s]
        if rows.size:
            want[s] = x[rows].mean(0)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # gradient of sum(out ** 3) in x (the row count is known only from num_segments' value, so
    # the loss is built from the output alone), against central differences
    op = S.SparseSegmentMeanWithNumSegments()
    f = lambda t: (op(t, Tensor(indices), Tensor(seg), Tensor(np.array([6], np.int32))) ** 3).sum()
    ms.set_context(mode=mode)
    try:
        g = ms.grad(f)(Tensor(x)).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    num = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = 1e-6
        num[i] = (f(Tensor(x + d)).asnumpy() - f(Tensor(x - d)).asnumpy()) / 2e-6
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)


def test_sparse_segment_mean_errors():
    op = S.SparseSegmentMeanWithNumSegments()
    x = Tensor(np.ones((3, 2), np.float32))
    with pytest.raises(RuntimeError, match="sorted in ascending order"):
        op(x, Tensor(np.array([0, 1], np.int32)), Tensor(np.array([1, 0], np.int32)), Tensor(np.array(2, np.int32)))
    with pytest.raises(RuntimeError, match=r"indices\[1\] = 5 is out of range"):
        op(x, Tensor(np.array([0, 5], np.int32)), Tensor(np.array([0, 0], np.int32)), Tensor(np.array(2, np.int32)))
    with pytest.raises(TypeError, match="x"):
        op(Tensor(np.ones((3, 2), np.int32)), Tensor(np.array([0], np.int32)), Tensor(np.array([0], np.int32)),
           Tensor(np.array(1, np.int32)))


def test_dynamic_shapes_compile_once():
    """GRAPH_MODE with set_inputs None dims: the value-sized outputs and the composites run."""
    i64, f32 = ms.int64, ms.float32
    dyn = (Tensor(shape=[None, None], dtype=i64), Tensor(shape=[None], dtype=f32), Tensor(shape=[None], dtype=i64))
    for count in (5, 9):
        idx, val = random_coo((2, 3, 4), count)
        out = run(S.SparseTensorToCSRSparseMatrix(), idx, val, np.array([2, 3, 4], np.int64), mode=ms.GRAPH_MODE,
                  dyn=dyn)
        assert [o.shape for o in out] == [(3,), (3,), (8,), (count,), (count,)]
        got = run(S.SparseReorder(), idx[::-1].copy(), val[::-1].copy(), np.array([2, 3, 4], np.int64),
                  mode=ms.GRAPH_MODE, dyn=dyn)
        np.testing.assert_array_equal(got[0], idx)
    arrays, dense = batched_csr((4, 5))
    dyn5 = [Tensor(shape=[None], dtype=ms.int32)] * 4 + [Tensor(shape=[None], dtype=f32),
                                                         Tensor(shape=[None, 3], dtype=f32)]
    x2 = RNG.normal(size=(5, 3)).astype(np.float32)
    np.testing.assert_allclose(run(S.SparseMatrixMatMul(), *arrays, x2, mode=ms.GRAPH_MODE, dyn=dyn5), dense @ x2,
                               rtol=1e-5, atol=1e-6)


def test_composite_gradients_reach_values_and_dense():
    """SparseAddmm differentiates in the values and the dense operands (finite differences)."""
    idx, val = random_coo((3, 4), 5, np.float64)
    x2 = RNG.normal(size=(4, 2))
    x3 = RNG.normal(size=(3, 2))
    op = S.SparseAddmm()

    def f(v, b):
        return op(Tensor(idx), v, Tensor(np.array([3, 4], np.int64)), b, Tensor(x3), Tensor(np.array([1.5])),
                  Tensor(np.array([1.0]))).sum()
    gv, gb = ms.grad(f, grad_position=(0, 1))(Tensor(val), Tensor(x2))
    a = dense_of(idx, val, (3, 4))
    np.testing.assert_allclose(gb.asnumpy(), 1.5 * a.T @ np.ones((3, 2)), rtol=1e-12)
    np.testing.assert_allclose(gv.asnumpy(), 1.5 * x2[idx[:, 1]].sum(1), rtol=1e-12)


def test_bad_input_errors():
    with pytest.raises(TypeError, match="SparseAdd: x1_values .* one dtype"):
        S.SparseAdd()(Tensor(np.zeros((1, 2), np.int64)), Tensor(np.ones(1, np.float32)), Tensor(np.array([2, 2])),
                      Tensor(np.zeros((1, 2), np.int64)), Tensor(np.ones(1, np.float64)), Tensor(np.array([2, 2])),
                      Tensor(np.float32(0)))
    with pytest.raises(NotImplementedError, match="transpose_x1"):
        S.SparseMatrixMatMul(transpose_x1=True)
    with pytest.raises(TypeError, match="float32 or float64"):
        S.SparseMatrixSoftmax(ms.int32)
    with pytest.raises(ValueError, match="does not broadcast"):
        S.SparseDenseCwiseAdd()(Tensor(np.zeros((1, 2), np.int64)), Tensor(np.ones(1, np.float32)),
                                Tensor(np.array([2, 2])), Tensor(np.ones((1, 1, 2), np.float32)))


def test_tensor_index_bounds_a_slice():
    """A one-element integer Tensor bounds a slice (MindSpore's Tensor.__index__)."""
    x = Tensor(np.arange(6, dtype=np.float32))
    start, n = Tensor(np.array(1, np.int64)), Tensor(np.array(3, np.int32))
    np.testing.assert_array_equal(x[start:start + n].asnumpy(), [1, 2, 3])
    assert list(range(6))[n] == 3
    with pytest.raises(TypeError, match="single element"):
        list(range(6))[Tensor(np.array([1, 2]))]
    with pytest.raises(TypeError, match="integer tensors"):
        list(range(6))[Tensor(np.array(1.0, np.float32))]


def _csr(m):
    c = sp.csr_matrix(m)
    return ms.CSRTensor(Tensor(c.indptr.astype(np.int32)), Tensor(c.indices.astype(np.int32)), Tensor(c.data),
                        c.shape)


@pytest.mark.parametrize("trans", [(False, False), (True, False), (False, True), (True, True)])
def test_csr_times_csr_against_scipy(trans):
    a = sp.random(4, 6, density=0.4, random_state=1).toarray()
    b = sp.random(6, 5, density=0.4, random_state=2).toarray()
    a_in, b_in = (a.T.copy() if trans[0] else a), (b.T.copy() if trans[1] else b)
    c = ms.ops.csr_mm(_csr(a_in), _csr(b_in), trans_a=trans[0], trans_b=trans[1])
    want = sp.csr_matrix(a) @ sp.csr_matrix(b)
    assert isinstance(c, ms.CSRTensor) and c.shape == (4, 5)
    np.testing.assert_allclose(c.to_dense().asnumpy(), want.toarray(), rtol=1e-12)
    # the structural pattern: every (i, c) some a[i, k] b[k, c] reaches, columns ascending per row
    pattern = ((a != 0).astype(int) @ (b != 0).astype(int)) > 0
    np.testing.assert_array_equal(c.indptr.asnumpy(), np.r_[0, np.cumsum(pattern.sum(1))])
    np.testing.assert_array_equal(c.indices.asnumpy(), np.nonzero(pattern)[1])


def test_csr_matmul_operator_and_gradient():
    a = sp.random(3, 4, density=0.5, random_state=3).toarray()
    b = sp.random(4, 3, density=0.5, random_state=4).toarray()
    ca, cb = _csr(a), _csr(b)
    np.testing.assert_allclose((ca @ cb).to_dense().asnumpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose((ca @ Tensor(b)).asnumpy(), a @ b, rtol=1e-12)  # dense right operand: SpMM
    w = RNG.normal(size=(3, 3))

    def loss(av, bv):
        x = ms.CSRTensor(ca.indptr, ca.indices, av, ca.shape)
        y = ms.CSRTensor(cb.indptr, cb.indices, bv, cb.shape)
        return (ms.ops.csr_mm(x, y).to_dense() * Tensor(w)).sum()
    ga, gb = ms.grad(loss, grad_position=(0, 1))(ca.values, cb.values)
    # d/dA sum(W * (A B)) = W B^T at A's pattern; d/dB = A^T W at B's pattern
    ra, rb = np.nonzero(a), np.nonzero(b)
    np.testing.assert_allclose(ga.asnumpy(), (w @ b.T)[ra], rtol=1e-12)
    np.testing.assert_allclose(gb.asnumpy(), (a.T @ w)[rb], rtol=1e-12)
    with pytest.raises(ValueError, match="do not multiply"):
        ms.ops.csr_mm(ca, ca)


@pytest.mark.parametrize("mode", MODES)
def test_sparse_segment_mean_function(mode):
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    indices = np.array([3, 0, 1, 1, 2], np.int32)
    seg = np.array([0, 0, 2, 5, 5], np.int32)
    got = run(S.SparseSegmentMean(), x, indices, seg, mode=mode)
    want = np.zeros((6, 3), np.float32)
    for s in np.unique(seg):
        want[s] = x[indices[seg == s]].mean(0)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(ms.ops.sparse_segment_mean(Tensor(x), Tensor(indices), Tensor(seg)).asnumpy(), want,
                               rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_sparse_to_dense_primitive_and_gradient(mode):
    idx = np.array([[0, 1, 0], [1, 2, 1], [2, 3, 2], [0, 2, 3]], np.int32)
    vals = np.array([6.5, 7.5, 9.5, 10.5], np.float32)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.op = ms.ops.operations.SparseToDense()

        def construct(self, i, v):
            return self.op(i, v, (3, 4, 4))
    net = Net()
    sens = np.arange(48, dtype=np.float32).reshape(3, 4, 4)
    ms.set_context(mode=mode)
    try:
        out = net(Tensor(idx), Tensor(vals)).asnumpy()
        g = ms.grad(lambda v: (net(Tensor(idx), v) * Tensor(sens)).sum())(Tensor(vals)).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_array_equal(out, dense_of(idx.astype(np.int64), vals, (3, 4, 4)))
    np.testing.assert_array_equal(g, sens[tuple(idx.T)])  # d/dvalues: the sensitivities at the indices
    flags = ms.ops.operations.SparseToDense()(Tensor(idx[:2]), Tensor(np.array([True, False])), (3, 4, 4))
    assert flags.asnumpy().sum() == 1 and flags.asnumpy()[0, 1, 0]


def test_coo_concat_against_dense_concatenate():
    a = sp.random(3, 4, density=0.4, random_state=5).toarray().astype(np.float32)
    b = sp.random(3, 2, density=0.5, random_state=6).toarray().astype(np.float32)
    c = sp.random(3, 5, density=0.3, random_state=7).toarray().astype(np.float32)

    def coo(m):
        idx = np.argwhere(m)[::-1].copy()  # any order in
        return ms.COOTensor(Tensor(idx.astype(np.int32)), Tensor(m[tuple(idx.T)]), m.shape)
    out = ms.ops.coo_concat((coo(a), coo(b), coo(c)), 1)
    want = np.concatenate([a, b, c], 1)
    assert out.shape == want.shape and out.indices.dtype == ms.int32
    np.testing.assert_array_equal(out.indices.asnumpy(), np.argwhere(want))  # row-major order
    np.testing.assert_array_equal(out.values.asnumpy(), want[want != 0])
    rows = ms.ops.coo_concat([coo(a), coo(a.copy())], 0)
    np.testing.assert_array_equal(rows.to_dense().asnumpy(), np.concatenate([a, a], 0))
    with pytest.raises(ValueError, match="differ off concat_dim"):
        ms.ops.coo_concat((coo(a), coo(b)), 0)


@pytest.mark.parametrize("mode", MODES)
def test_csr_conversion_gradients_return_to_the_entries(mode):
    """d/dvalues of sum(w * out_values) for SparseTensorToCSRSparseMatrix and SparseMatrixTranspose:
    w permuted back to the input's entry order (the conversions only move values)."""
    shape = (2, 3, 4)
    idx, val = random_coo(shape, 9, np.float64)
    perm = RNG.permutation(9)
    idx, val = idx[perm], val[perm]
    w = RNG.normal(size=9)
    dims = Tensor(np.array(shape, np.int64))
    to_csr, transpose = S.SparseTensorToCSRSparseMatrix(), S.SparseMatrixTranspose()

    def f(v):
        return (to_csr(Tensor(idx), v, dims)[4] * Tensor(w)).sum()

    def g(v):
        out = to_csr(Tensor(idx), v, dims)
        return (transpose(out[0], out[1], out[2], out[3], out[4])[4] * Tensor(w)).sum()
    ms.set_context(mode=mode)
    try:
        gf = ms.grad(f)(Tensor(val)).asnumpy()
        gg = ms.grad(g)(Tensor(val)).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    order = np.lexsort(idx.T[::-1])  # CSR position i holds COO entry order[i]
    want = np.zeros(9)
    want[order] = w
    np.testing.assert_allclose(gf, want, rtol=1e-12)
    # the transpose orders by (batch, column, row)
    torder = np.lexsort((idx[:, 1], idx[:, 2], idx[:, 0]))
    want_t = np.zeros(9)
    want_t[torder] = w
    np.testing.assert_allclose(gg, want_t, rtol=1e-12)
