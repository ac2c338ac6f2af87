"""MindSpore's `ops.operations.sparse_ops` primitive classes (issue 14): sparse tensors passed as
their arrays (COO: indices (N, rank), values (N,), dense shape (rank,) as a Tensor; batched CSR:
dense_shape, batch_pointers, row_pointers, col_indices, values). Most are composites of registry
ops over those arrays, so they run in both modes; where an output length depends on the values
(unique index sets, union of patterns) the data-dependent registry ops (unique_with_counts,
masked_select) size it at run time (docs/dynamic_shape.md). The four whose sizes come from the
input values themselves (SparseCountSparseOutput, SparseSegmentMeanWithNumSegments,
SparseTensorToCSRSparseMatrix, SparseMatrixTranspose) are registry ops (ops/sparse_arrays.cc).
The COO index order is row-major (numpy's ravel_multi_index order), as MindSpore's CPU kernels
expect and produce."""
import numpy as np

from mycel import _mycel
# registry ops (ops/sparse_arrays.cc), named here as MindSpore imports them
from mycel.ops.operations import (SparseCountSparseOutput, SparseMatrixTranspose,  # noqa: F401
                                  SparseSegmentMeanWithNumSegments, SparseTensorToCSRSparseMatrix)
from mycel.ops.operations.compat_ops import _Composite
from mycel.ops.sparse import SparseTensorDenseMatmul, SparseToDense  # noqa: F401 (MindSpore's names here)

_ops = _mycel.ops
_i64 = _mycel.dtype.int64
_INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _lowest(dtype):
    """The smallest value of a real dtype (-inf for floats): the identity of max."""
    np_t = np.dtype(dtype.name if dtype.name != "bfloat16" else "float32")
    return -np.inf if np_t.kind == "f" else np.iinfo(np_t).min


def _highest(dtype):
    np_t = np.dtype(dtype.name if dtype.name != "bfloat16" else "float32")
    return np.inf if np_t.kind == "f" else np.iinfo(np_t).max


def _strides(shape):
    """Row-major strides (rank,) int64 of a dense shape held in a Tensor."""
    shape = _ops.cast(shape, _i64)
    total = _ops.prod(shape, (0,))
    return _ops.floor_div(total, _ops.cumprod(shape, 0))


def _ravel(indices, shape):
    """The row-major linear position (N,) int64 of each COO index row."""
    return _ops.sum(_ops.mul(_ops.cast(indices, _i64), _ops.reshape(_strides(shape), (1, -1))), (1,))


def _unravel(flat, shape):
    """COO index rows (N, rank) int64 of row-major linear positions."""
    shape = _ops.cast(shape, _i64)
    return _ops.mod(_ops.floor_div(_ops.reshape(flat, (-1, 1)), _ops.reshape(_strides(shape), (1, -1))),
                    _ops.reshape(shape, (1, -1)))


def _select_rows(x, keep):
    """The rows of x (or its entries, 1-d) where the bool keep (N,) is true."""
    return _ops.masked_select(x, keep) if x.ndim == 1 else x[keep]


def _merge(a_indices, a_values, b_indices, b_values, shape):
    """The union of two COO index sets: (sorted unique linear positions, the int64 group of each
    of a's then b's entries, counts per position, the two value arrays concatenated)."""
    idx = _ops.concat((_ops.cast(a_indices, _i64), _ops.cast(b_indices, _i64)))
    flat, inverse, counts = _ops.unique_with_counts(_ravel(idx, shape))
    return flat, _ops.reshape(inverse, (-1, 1)), counts, _ops.concat((a_values, b_values))


def _full_like_index(flat, value, dtype):
    return _ops.add(_ops.cast(_ops.zeros_like(flat), dtype), _mycel.Tensor(np.array(value), dtype))


class SparseAdd(_Composite):
    """SparseAdd()(x1_indices, x1_values, x1_shape, x2_indices, x2_values, x2_shape, thresh):
    the COO sum (indices, values, shape). Positions present in both inputs add up, and such a sum
    is kept only where |sum| >= thresh; positions present in one input are copied (TensorFlow's
    and MindSpore's rule). The output indices are int64 in row-major order."""

    def _call(self, x1_indices, x1_values, x1_shape, x2_indices, x2_values, x2_shape, thresh):
        if x1_values.dtype != x2_values.dtype:
            raise TypeError(f"SparseAdd: x1_values ({x1_values.dtype.name}) and x2_values "
                            f"({x2_values.dtype.name}) must have one dtype")
        flat, inverse, counts, vals = _merge(x1_indices, x1_values, x2_indices, x2_values, x1_shape)
        summed = _ops.tensor_scatter_add(_ops.cast(_ops.zeros_like(flat), vals.dtype), inverse, vals)
        big = _ops.greater_equal(_ops.abs(summed), _ops.cast(thresh, summed.dtype))
        keep = _ops.logical_or(_ops.equal(counts, 1), _ops.reshape(big, (-1,)))
        return (_unravel(_select_rows(flat, keep), x1_shape), _select_rows(summed, keep),
                _ops.cast(x1_shape, _i64))


class _SparseSparseExtremum(_Composite):
    """The elementwise max/min of two COO tensors of one shape over the union of their patterns;
    a position held by one input compares its value with the implicit zero of the other."""
    _take_max = True

    def _call(self, x1_indices, x1_values, x1_shape, x2_indices, x2_values, x2_shape):
        who = type(self).__name__
        if x1_values.dtype != x2_values.dtype:
            raise TypeError(f"{who}: x1_values ({x1_values.dtype.name}) and x2_values "
                            f"({x2_values.dtype.name}) must have one dtype")
        flat, inverse, counts, vals = _merge(x1_indices, x1_values, x2_indices, x2_values, x1_shape)
        if self._take_max:
            start = _full_like_index(flat, _lowest(vals.dtype), vals.dtype)
            y = _ops.tensor_scatter_max(start, inverse, vals)
            lone = _ops.maximum(y, _ops.zeros_like(y))
        else:
            start = _full_like_index(flat, _highest(vals.dtype), vals.dtype)
            y = _ops.tensor_scatter_min(start, inverse, vals)
            lone = _ops.minimum(y, _ops.zeros_like(y))
        return _unravel(flat, x1_shape), _ops.select(_ops.equal(counts, 1), lone, y)


class SparseSparseMaximum(_SparseSparseExtremum):
    """SparseSparseMaximum()(x1_indices, x1_values, x1_shape, x2_indices, x2_values, x2_shape):
    (indices, values) of max(x1, x2) over the union of the two patterns (absent entries are 0)."""
    _take_max = True


class SparseSparseMinimum(_SparseSparseExtremum):
    """SparseSparseMinimum()(x1_indices, x1_values, x1_shape, x2_indices, x2_values, x2_shape):
    (indices, values) of min(x1, x2) over the union of the two patterns (absent entries are 0)."""
    _take_max = False


class SparseReorder(_Composite):
    """SparseReorder()(indices, values, shape): (indices, values) sorted into row-major order."""

    def _call(self, indices, values, shape):
        order = _ops.argsort(_ravel(indices, shape))
        return _ops.gather(indices, order, 0), _ops.gather(values, order, 0)


class SparseReshape(_Composite):
    """SparseReshape()(indices, shape, new_shape): (new indices, the new shape) of a COO tensor
    reshaped row-major; one entry of new_shape may be -1 (inferred from the element count)."""

    def _call(self, indices, shape, new_shape):
        shape, new_shape = _ops.cast(shape, _i64), _ops.cast(new_shape, _i64)
        total = _ops.prod(shape, (0,))
        unknown = _ops.equal(new_shape, -1)
        known = _ops.prod(_ops.select(unknown, _ops.ones_like(new_shape), new_shape), (0,))
        resolved = _ops.select(unknown, _ops.floor_div(total, _ops.maximum(known, _ops.ones_like(known)))
                               + _ops.zeros_like(new_shape), new_shape)
        return _unravel(_ravel(indices, shape), resolved), resolved


def _dense_broadcast_index(indices, dense):
    """The index into `dense` (broadcast to the sparse shape, numpy's rule) of each COO row."""
    rank, k = indices.shape[1], dense.ndim
    tail = _ops.cast(indices[:, rank - k:], _i64)
    cols = []
    for d in range(k):  # a size-1 dim of dense is read at 0
        cols.append(_ops.minimum(tail[:, d:d + 1], dense.shape[d] - 1))
    return _ops.concat(cols, 1)


class _SparseDenseCwise(_Composite):
    """x1 (COO arrays) op x2 (dense, broadcast to x1's shape) at x1's entries: the (N,) values."""

    def _call(self, x1_indices, x1_values, x1_shape, x2):
        who = type(self).__name__
        if x2.ndim > x1_indices.shape[1]:
            raise ValueError(f"{who}: x2 of rank {x2.ndim} does not broadcast to the rank "
                             f"{x1_indices.shape[1]} of x1")
        if x1_values.dtype != x2.dtype:
            raise TypeError(f"{who}: x1_values ({x1_values.dtype.name}) and x2 ({x2.dtype.name}) "
                            f"must have one dtype")
        if x2.ndim == 0:
            picked = _ops.add(_ops.zeros_like(x1_values), x2)
        else:
            picked = _ops.gather_nd(x2, _dense_broadcast_index(x1_indices, x2))
        return self._apply(x1_values, picked)


class SparseDenseCwiseAdd(_SparseDenseCwise):
    """SparseDenseCwiseAdd()(x1_indices, x1_values, x1_shape, x2): x1's values plus the dense x2
    (broadcast to x1_shape) at x1's entries."""

    def _apply(self, a, b):
        return _ops.add(a, b)


class SparseDenseCwiseMul(_SparseDenseCwise):
    """SparseDenseCwiseMul()(x1_indices, x1_values, x1_shape, x2): x1's values times x2 there."""

    def _apply(self, a, b):
        return _ops.mul(a, b)


class SparseDenseCwiseDiv(_SparseDenseCwise):
    """SparseDenseCwiseDiv()(x1_indices, x1_values, x1_shape, x2): x1's values divided by x2 there
    (integers: truncated toward zero, as MindSpore's CPU kernel)."""

    def _apply(self, a, b):
        if a.dtype.name not in _INT_TYPES:
            return _ops.div(a, b)
        q = _ops.floor_div(a, b)
        # floor -> truncation: add one where the division is inexact and the signs differ
        fix = _ops.logical_and(_ops.not_equal(_ops.mul(q, b), a), _ops.less(_ops.mul(a, b), _ops.zeros_like(a)))
        return _ops.add(q, _ops.cast(fix, q.dtype))


class SparseAddmm(_Composite):
    """SparseAddmm()(x1_indices, x1_values, x1_shape, x2, x3, alpha, beta): alpha * (x1 @ x2) +
    beta * x3 for a 2-d COO x1 and dense x2, x3 (x3 fixes the output shape)."""

    def _call(self, x1_indices, x1_values, x1_shape, x2, x3, alpha, beta):
        if x2.ndim != 2 or x3.ndim != 2:
            raise ValueError(f"SparseAddmm: x2 and x3 must be 2-d, got shapes {tuple(x2.shape)} and "
                             f"{tuple(x3.shape)}")
        idx = _ops.cast(x1_indices, _i64)
        rows, cols = idx[:, 0:1], idx[:, 1]
        terms = _ops.mul(_ops.reshape(x1_values, (-1, 1)), _ops.gather(x2, cols, 0))
        product = _ops.tensor_scatter_add(_ops.zeros_like(x3), rows, terms)
        return _ops.add(_ops.mul(product, _ops.cast(alpha, x3.dtype)), _ops.mul(x3, _ops.cast(beta, x3.dtype)))


def _csr_coordinates(batch_pointers, row_pointers, col_indices):
    """(batch, row) int64 of each entry of a batched CSR matrix, and rows + 1: batch_pointers
    (B + 1,) cut the entries into batches, row_pointers (B * (rows + 1),) hold each batch's own
    indptr. A 0-d batch_pointers (MindSpore's tests pass the entry count) means one batch. Written
    with comparisons over the pointer arrays, no reshape by a run-time size, so it compiles when
    every length is dynamic."""
    k = _ops.sub(_ops.cumsum(_ops.ones_like(_ops.cast(col_indices, _i64)), 0), 1)  # entry number
    rp = _ops.cast(row_pointers, _i64)
    if batch_pointers.ndim == 0:
        batch, local, stride = _ops.zeros_like(k), k, rp.shape[0]
    else:
        bp = _ops.cast(batch_pointers, _i64)
        starts_after = _ops.less_equal(_ops.reshape(bp[1:], (1, -1)), _ops.reshape(k, (-1, 1)))
        batch = _ops.sum(_ops.cast(starts_after, _i64), (1,))
        local = _ops.sub(k, _ops.gather(bp, batch, 0))
        stride = rp.shape[0] // (bp.shape[0] - 1)  # rows + 1
    p = _ops.sub(_ops.cumsum(_ops.ones_like(rp), 0), 1)  # position in row_pointers
    owner = _ops.floor_div(p, stride)
    is_end = _ops.not_equal(_ops.mod(p, stride), 0)  # a row's end, not a batch's leading 0
    hits = _ops.logical_and(_ops.logical_and(_ops.equal(_ops.reshape(owner, (1, -1)), _ops.reshape(batch, (-1, 1))),
                                             _ops.reshape(is_end, (1, -1))),
                            _ops.less_equal(_ops.reshape(rp, (1, -1)), _ops.reshape(local, (-1, 1))))
    row = _ops.sum(_ops.cast(hits, _i64), (1,))
    return batch, row, stride, is_end


class SparseMatrixNNZ(_Composite):
    """SparseMatrixNNZ()(dense_shape, batch_pointers, row_pointers, col_indices, values): the
    int32 number of entries of each batch."""

    def _call(self, x_dense_shape, x_batch_pointers, x_row_pointers, x_col_indices, x_values):
        bp = _ops.cast(x_batch_pointers, _mycel.dtype.int32)
        if bp.ndim == 0:  # the entry count of one batch
            return _ops.reshape(bp, (1,))
        return _ops.sub(bp[1:], bp[:-1])


class SparseMatrixMatMul(_Composite):
    """SparseMatrixMatMul(transpose_x1=False, transpose_x2=False, adjoint_x1=False,
    adjoint_x2=False, transpose_output=False, conjugate_output=False)(x1_dense_shape,
    x1_batch_pointers, x1_row_pointers, x1_col_indices, x1_values, x2_dense): a batched CSR
    matrix (rank 2 or 3) times a dense one, dense. transpose_x1/adjoint_x1 are not supported (the
    product's row count would be read from x1_dense_shape's values)."""

    def __init__(self, transpose_x1=False, transpose_x2=False, adjoint_x1=False, adjoint_x2=False,
                 transpose_output=False, conjugate_output=False):
        if transpose_x1 or adjoint_x1:
            raise NotImplementedError("SparseMatrixMatMul: transpose_x1/adjoint_x1 are not supported; "
                                      "transpose the CSR matrix first (SparseMatrixTranspose) or use "
                                      "ops.csr_mm(..., trans_a=True)")
        if transpose_x2 and adjoint_x2:
            raise ValueError("SparseMatrixMatMul: transpose_x2 and adjoint_x2 cannot both be True")
        super().__init__(transpose_x1=bool(transpose_x1), transpose_x2=bool(transpose_x2),
                         adjoint_x1=bool(adjoint_x1), adjoint_x2=bool(adjoint_x2),
                         transpose_output=bool(transpose_output), conjugate_output=bool(conjugate_output))

    def _call(self, x1_dense_shape, x1_batch_pointers, x1_row_pointers, x1_col_indices, x1_values, x2_dense):
        if x2_dense.ndim not in (2, 3):
            raise ValueError(f"SparseMatrixMatMul: x2_dense must be 2-d or 3-d, got shape {tuple(x2_dense.shape)}")
        if x1_values.dtype != x2_dense.dtype:
            raise TypeError(f"SparseMatrixMatMul: x1_values ({x1_values.dtype.name}) and x2_dense "
                            f"({x2_dense.dtype.name}) must have one dtype")
        x2 = x2_dense if x2_dense.ndim == 3 else _ops.expand_dims(x2_dense, 0)
        if self.transpose_x2 or self.adjoint_x2:
            x2 = _ops.transpose(x2, (0, 2, 1))
            if self.adjoint_x2 and x2.dtype.name.startswith("complex"):
                x2 = _ops.conj(x2)
        batch, row, stride, is_end = _csr_coordinates(x1_batch_pointers, x1_row_pointers, x1_col_indices)
        n, k = x2.shape[1], x2.shape[2]
        col = _ops.add(_ops.mul(batch, n), _ops.cast(x1_col_indices, _i64))
        terms = _ops.mul(_ops.reshape(x1_values, (-1, 1)), _ops.gather(_ops.reshape(x2, (-1, k)), col, 0))
        # (B * rows, K) zeros: one row per row end in the pointers, x2's columns
        ends = _ops.cast(_ops.zeros_like(_ops.masked_select(x1_row_pointers, is_end)), x2.dtype)
        zeros = _ops.mul(_ops.reshape(ends, (-1, 1)), _ops.zeros_like(x2[0, 0:1, :]))
        flat = _ops.add(_ops.mul(batch, stride - 1), row)
        y = _ops.tensor_scatter_add(zeros, _ops.reshape(flat, (-1, 1)), terms)
        y = _ops.expand_dims(y, 0) if x2_dense.ndim == 2 else _ops.reshape(y, (x2.shape[0], -1, k))
        if self.transpose_output:
            y = _ops.transpose(y, (0, 2, 1))
        if self.conjugate_output and y.dtype.name.startswith("complex"):
            y = _ops.conj(y)
        return y if x2_dense.ndim == 3 else y[0]


def _segment_softmax(values, segment):
    """softmax of the values within each segment (segment: (N,) int64 ids, any order)."""
    _, group, _ = _ops.unique_with_counts(segment)
    slot = _ops.reshape(group, (-1, 1))
    start = _full_like_index(segment, _lowest(values.dtype), values.dtype)  # N slots >= groups
    # the shift by the segment's max keeps exp finite; softmax does not depend on it
    top = _ops.stop_gradient(_ops.gather(_ops.tensor_scatter_max(start, slot, values), group, 0))
    e = _ops.exp(_ops.sub(values, top))
    total = _ops.tensor_scatter_add(_ops.zeros_like(e), slot, e)
    return _ops.div(e, _ops.gather(total, group, 0))


class SparseMatrixSoftmax(_Composite):
    """SparseMatrixSoftmax(dtype)(x_dense_shape, x_batch_pointers, x_row_pointers,
    x_col_indices, x_values): the batched CSR matrix with each row's values replaced by their
    softmax (the absent entries count as -inf, so they stay absent). dtype: float32 or float64."""

    def __init__(self, dtype):
        if getattr(dtype, "name", None) not in ("float32", "float64"):
            raise TypeError(f"SparseMatrixSoftmax: dtype must be float32 or float64, got {dtype!r}")
        super().__init__(dtype=dtype)

    def _call(self, x_dense_shape, x_batch_pointers, x_row_pointers, x_col_indices, x_values):
        if x_values.dtype.name not in ("float32", "float64"):
            raise TypeError(f"SparseMatrixSoftmax: x_values must be float32 or float64, got {x_values.dtype.name}")
        batch, row, stride, _ = _csr_coordinates(x_batch_pointers, x_row_pointers, x_col_indices)
        segment = _ops.add(_ops.mul(batch, stride), row)
        return (x_dense_shape, x_batch_pointers, x_row_pointers, x_col_indices,
                _segment_softmax(x_values, segment))


class SparseSegmentMean(_Composite):
    """SparseSegmentMean()(x, indices, segment_ids): the mean of the rows x[indices[j]] per sorted
    segment id, segment_ids[-1] + 1 segments (empty ones 0): the registry op
    sparse_segment_mean_with_num_segments with that count (its gradient too)."""

    def _call(self, x, indices, segment_ids):
        count = _ops.add(segment_ids[-1:], _ops.ones_like(segment_ids[-1:]))
        return _ops.sparse_segment_mean_with_num_segments(x, indices, segment_ids, count)


def sparse_segment_mean(x, indices, segment_ids):
    """ops.sparse_segment_mean: SparseSegmentMean()(x, indices, segment_ids)."""
    return SparseSegmentMean()(x, indices, segment_ids)


def csr_softmax(logits, dtype):
    """MindSpore's ops.function.csr_softmax: the CSRTensor with each row's values replaced by
    their softmax (SparseMatrixSoftmax on a CSRTensor)."""
    from mycel._sparse import CSRTensor
    if not isinstance(logits, CSRTensor):
        raise TypeError(f"csr_softmax: logits must be a CSRTensor, got {type(logits).__name__}")
    nnz = logits.values.shape[0]
    out = SparseMatrixSoftmax(dtype)(_mycel.Tensor(np.array(logits.shape, np.int64)),
                                     _mycel.Tensor(np.array([0, nnz], np.int64)),
                                     logits.indptr, logits.indices, logits.values)
    return CSRTensor(logits.indptr, logits.indices, out[4], logits.shape)
