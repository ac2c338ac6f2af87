"""CSRTensor, COOTensor and RowTensor (MindSpore's sparse containers): index arrays, values and a
dense shape. Their arithmetic runs on the sparse registry ops (src/mycel/ops/sparse.cc: SpMM,
SDDMM, gathers at the pattern, row conversions) and on registry ops over the index arrays
(coalesce, COO sums), so gradients reach values and dense operands. The containers check their
arrays when built (MindSpore leaves invalid ones undefined). This module lies outside mycel.common
so that graph mode parses its methods (self.csr.mm(x) in a construct compiles the SpMM)."""
import numpy as np

from mycel import _mycel
from mycel.common import records as _records
from mycel.common import sparse_meta as _meta

_ops = _mycel.ops
_INDEX_TYPES = ("int16", "int32", "int64")


def _tensor(x, who, name):
    if isinstance(x, _mycel.Tensor):
        return x
    try:
        return _mycel.Tensor(np.asarray(x))
    except Exception:  # noqa: BLE001 (the message below names the argument)
        raise TypeError(f"{who}: {name} must be a Tensor or array-like, got {type(x).__name__}") from None


def _index(x, who, name):
    t = _tensor(x, who, name)
    if t.dtype.name not in _INDEX_TYPES:
        raise TypeError(f"{who}: {name} must be int16, int32 or int64, got {t.dtype.name}")
    return _ops.cast(t, _mycel.dtype.int32) if t.dtype.name == "int16" else t


def _shape(shape, who):
    if not isinstance(shape, (tuple, list)) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise TypeError(f"{who}: shape must be a tuple of non-negative ints, got {shape!r}")
    return tuple(shape)


def _graph_index(x):
    """An index tensor as the containers keep it (int16 widened to int32), in graph mode."""
    return _ops.cast(x, _mycel.dtype.int32) if x.dtype == _mycel.dtype.int16 else x


def _as_dense_operand(x, dtype, who):
    """A Tensor of the values' dtype from a Tensor, a Python number or an array."""
    if not isinstance(x, _mycel.Tensor):
        x = _meta.dense_constant(x, dtype)
    if x.dtype != dtype:
        raise TypeError(f"{who}: the dense operand must have the values' dtype {dtype.name}, got {x.dtype.name}")
    return x


class COOTensor:
    """COOTensor(indices (N, ndims) int, values (N,), shape): dense[indices[i]] = values[i]
    (duplicates add up)."""

    def __init__(self, indices=None, values=None, shape=None, coo_tensor=None):
        if coo_tensor is not None:
            indices, values, shape = coo_tensor.indices, coo_tensor.values, coo_tensor.shape
        self.indices = _index(indices, "COOTensor", "indices")
        self.values = _tensor(values, "COOTensor", "values")
        self.shape = _shape(shape, "COOTensor")
        ind = self.indices.asnumpy()
        if ind.ndim != 2 or ind.shape[1] != len(self.shape):
            raise ValueError(f"COOTensor: indices must be an int tensor of shape (N, {len(self.shape)}), "
                             f"got {ind.dtype} of shape {ind.shape}")
        if self.values.ndim != 1 or self.values.shape[0] != ind.shape[0]:
            raise ValueError(f"COOTensor: values must have shape ({ind.shape[0]},), got {tuple(self.values.shape)}")
        if ((ind < 0) | (ind >= np.array(self.shape))).any():
            bad = ind[((ind < 0) | (ind >= np.array(self.shape))).any(1)][0].tolist()
            raise ValueError(f"COOTensor: indices out of range for shape {self.shape}: {bad}")

    def _mycel_graph_init(self, indices=None, values=None, shape=None, coo_tensor=None):
        # graph mode's __init__: shapes and dtypes are checked at compile time, index values by
        # the registry ops that read them (at run time)
        if coo_tensor is not None:
            indices, values, shape = coo_tensor.indices, coo_tensor.values, coo_tensor.shape
        shape = _meta.check_coo(indices.shape, indices.dtype, values.shape, shape)
        self.indices = _graph_index(indices)
        self.values = values
        self.shape = shape

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def size(self):
        return int(self.values.shape[0])

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def itemsize(self):
        return self.values.itemsize

    def to_tuple(self):
        """(indices, values, shape)."""
        return self.indices, self.values, self.shape

    def astype(self, dtype):
        """The same sparsity with values cast to dtype."""
        return COOTensor(self.indices, self.values.astype(dtype), self.shape)

    def to_dense(self):
        """The dense Tensor (duplicate indices add up); differentiable in values."""
        zeros = _ops.zeros(self.shape, dtype=self.dtype)
        if self.size == 0:
            return zeros
        return _ops.tensor_scatter_add(zeros, self.indices, self.values)

    def coalesce(self):
        """Indices sorted (row-major) and made unique, the values of duplicates summed."""
        indices, values = _coalesce(self.indices, self.values, self.shape)
        return COOTensor(indices, values, self.shape)

    def to_csr(self):
        """The same matrix as a CSRTensor (coalesced first: rows sorted, duplicates summed)."""
        if len(self.shape) != 2:
            raise ValueError(f"COOTensor.to_csr: only 2-d tensors, got shape {self.shape}")
        c = self.coalesce()
        rows = _ops.reshape(_ops.slice(c.indices, (0, 0), (c.size, 1)), (-1,))
        cols = _ops.reshape(_ops.slice(c.indices, (0, 1), (c.size, 1)), (-1,))
        return CSRTensor(_ops.coo2csr(rows, height=self.shape[0]), cols, c.values, self.shape)

    def abs(self):
        """|values| on the same pattern."""
        return COOTensor(self.indices, _ops.abs(self.values), self.shape)

    def __neg__(self):
        return COOTensor(self.indices, _ops.neg(self.values), self.shape)

    def add(self, other, thresh):
        """self + other (COOTensors), dropping sums whose magnitude is below thresh (ops.coo_add)."""
        return coo_add(self, other, thresh)

    def __add__(self, other):
        if isinstance(other, COOTensor):
            return coo_add(self, other, None)
        if isinstance(other, _mycel.Tensor):
            return _ops.add(self.to_dense(), other)
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, (COOTensor, _mycel.Tensor)):
            return self + (-other)
        return NotImplemented

    def __mul__(self, other):
        """Elementwise product with a dense Tensor broadcast to shape (or a number): a COOTensor."""
        d = _ops.broadcast_to(_as_dense_operand(other, self.dtype, "COOTensor.__mul__"), self.shape)
        return COOTensor(self.indices, _ops.mul(self.values, _ops.gather_nd(d, self.indices)), self.shape)

    __rmul__ = __mul__

    def __truediv__(self, other):
        d = _ops.broadcast_to(_as_dense_operand(other, self.dtype, "COOTensor.__truediv__"), self.shape)
        return COOTensor(self.indices, _ops.div(self.values, _ops.gather_nd(d, self.indices)), self.shape)

    def __repr__(self):
        return f"COOTensor(shape={self.shape}, dtype={self.dtype}, nnz={self.size})"


class CSRTensor:
    """CSRTensor(indptr (rows + 1,), indices (nnz,), values (nnz,), shape (rows, cols))."""

    def __init__(self, indptr=None, indices=None, values=None, shape=None, csr_tensor=None):
        if csr_tensor is not None:
            indptr, indices, values, shape = (csr_tensor.indptr, csr_tensor.indices,
                                              csr_tensor.values, csr_tensor.shape)
        self.indptr = _index(indptr, "CSRTensor", "indptr")
        self.indices = _index(indices, "CSRTensor", "indices")
        self.values = _tensor(values, "CSRTensor", "values")
        self.shape = _shape(shape, "CSRTensor")
        if len(self.shape) != 2:
            raise ValueError(f"CSRTensor: only 2-d shapes are supported, got {self.shape}")
        ptr, ind = self.indptr.asnumpy(), self.indices.asnumpy()
        if ptr.shape != (self.shape[0] + 1,) or ptr[0] != 0 or (np.diff(ptr) < 0).any() or ptr[-1] != ind.size:
            raise ValueError(f"CSRTensor: indptr must be non-decreasing, of length rows + 1 = {self.shape[0] + 1}, "
                             f"from 0 to nnz = {ind.size}; got {ptr.tolist()}")
        if self.values.shape != tuple(ind.shape) or ((ind < 0) | (ind >= self.shape[1])).any():
            raise ValueError(f"CSRTensor: indices and values must have nnz entries with columns in "
                             f"[0, {self.shape[1]}), got indices {ind.tolist()} and values of shape {tuple(self.values.shape)}")

    def _mycel_graph_init(self, indptr=None, indices=None, values=None, shape=None, csr_tensor=None):
        # graph mode's __init__ (see COOTensor's)
        if csr_tensor is not None:
            indptr, indices, values, shape = (csr_tensor.indptr, csr_tensor.indices,
                                              csr_tensor.values, csr_tensor.shape)
        shape = _meta.check_csr(indptr.shape, indptr.dtype, indices.shape, indices.dtype,
                                values.shape, shape)
        self.indptr = _graph_index(indptr)
        self.indices = _graph_index(indices)
        self.values = values
        self.shape = shape

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def size(self):
        return int(self.values.shape[0])

    @property
    def ndim(self):
        return 2

    @property
    def itemsize(self):
        return self.values.itemsize

    def to_tuple(self):
        """(indptr, indices, values, shape)."""
        return self.indptr, self.indices, self.values, self.shape

    def astype(self, dtype):
        """The same sparsity with values cast to dtype."""
        return CSRTensor(self.indptr, self.indices, self.values.astype(dtype), self.shape)

    def _with_values(self, values):
        return CSRTensor(self.indptr, self.indices, values, self.shape)

    def to_dense(self):
        """The dense Tensor (differentiable in values)."""
        return _ops.csr_scatter(self.indptr, self.indices, self.values, shape=self.shape)

    def to_coo(self):
        """The same tensor as a COOTensor."""
        rows = _ops.csr2coo(self.indptr, length=self.size)
        return COOTensor(_ops.stack((rows, self.indices), axis=1), self.values, self.shape)

    def mm(self, matrix):
        """self @ matrix for a dense (cols, K) matrix: a dense (rows, K) Tensor (SpMM; the
        registry op checks the operand, so this also compiles in graph mode); for a CSRTensor
        matrix, the CSRTensor product (csr_spgemm, eager)."""
        if isinstance(matrix, CSRTensor):
            return csr_spgemm(self, matrix)
        return _ops.csr_spmm(self.indptr, self.indices, self.values, matrix, shape=self.shape, transpose_a=False)

    def __matmul__(self, other):
        return self.mm(other)

    def mv(self, dense_vector):
        """self @ dense_vector for a dense (cols, 1) vector: a dense (rows, 1) Tensor."""
        return _ops.csr_spmm(self.indptr, self.indices, self.values, dense_vector, shape=self.shape,
                             transpose_a=False)

    def sum(self, axis):
        """The sum along axis (0 or 1; -2 and -1 count from the end), kept: (1, cols) or (rows, 1),
        as MindSpore's CSRTensor.sum (an SpMM with a ones vector)."""
        if axis in (0, -2):
            ones = _ops.ones((self.shape[0], 1), dtype=self.values.dtype)
            out = _ops.csr_spmm(self.indptr, self.indices, self.values, ones, shape=self.shape, transpose_a=True)
            return _ops.reshape(out, (1, self.shape[1]))
        if axis in (1, -1):
            ones = _ops.ones((self.shape[1], 1), dtype=self.values.dtype)
            return _ops.csr_spmm(self.indptr, self.indices, self.values, ones, shape=self.shape, transpose_a=False)
        raise ValueError(f"CSRTensor.sum: axis must be 0, 1, -2 or -1, got {axis}")

    def abs(self):
        """|values| on the same pattern."""
        return self._with_values(_ops.abs(self.values))

    def __neg__(self):
        return self._with_values(_ops.neg(self.values))

    def _dense_at_pattern(self, other, who):
        d = _ops.broadcast_to(_as_dense_operand(other, self.dtype, who), self.shape)
        return _ops.csr_gather(self.indptr, self.indices, d, shape=self.shape)

    def __mul__(self, other):
        """Elementwise product with a dense Tensor broadcast to shape (or a number): a CSRTensor
        with the same pattern (MindSpore's CSRMul)."""
        return self._with_values(_ops.mul(self.values, self._dense_at_pattern(other, "CSRTensor.__mul__")))

    __rmul__ = __mul__

    def __truediv__(self, other):
        """Elementwise quotient by a dense Tensor broadcast to shape: a CSRTensor (CSRDiv)."""
        return self._with_values(_ops.div(self.values, self._dense_at_pattern(other, "CSRTensor.__truediv__")))

    def __add__(self, other):
        if isinstance(other, CSRTensor):
            return csr_add(self, other, 1, 1)
        if isinstance(other, _mycel.Tensor):
            return _ops.add(self.to_dense(), other)
        return NotImplemented

    def __sub__(self, other):
        if isinstance(other, CSRTensor):
            return csr_add(self, other, 1, -1)
        if isinstance(other, _mycel.Tensor):
            return _ops.sub(self.to_dense(), other)
        return NotImplemented

    def add(self, b, alpha, beta):
        """alpha * self + beta * b for CSRTensors b (ops.csr_add)."""
        return csr_add(self, b, alpha, beta)

    def __repr__(self):
        return f"CSRTensor(shape={self.shape}, dtype={self.dtype}, nnz={self.size})"


class RowTensor:
    """RowTensor(indices (K,), values (K, ...), dense_shape): the rows `indices` of a dense tensor
    of dense_shape, the other rows zero -- MindSpore's form of a sparse embedding gradient
    (RowTensorInner in MindSpore 2.x). Repeated rows add up."""

    def __init__(self, indices=None, values=None, dense_shape=None, row_tensor=None):
        if row_tensor is not None:
            indices, values, dense_shape = row_tensor.indices, row_tensor.values, row_tensor.dense_shape
        self.indices = _index(indices, "RowTensor", "indices")
        self.values = _tensor(values, "RowTensor", "values")
        self.dense_shape = _shape(dense_shape, "RowTensor")
        if self.indices.ndim != 1:
            raise ValueError(f"RowTensor: indices must be 1-d, got shape {tuple(self.indices.shape)}")
        want = (self.indices.shape[0],) + self.dense_shape[1:]
        if not self.dense_shape or tuple(self.values.shape) != want:
            raise ValueError(f"RowTensor: values must have shape (len(indices),) + dense_shape[1:] = {want}, "
                             f"got {tuple(self.values.shape)} for dense_shape {self.dense_shape}")
        ind = self.indices.asnumpy()
        if ((ind < 0) | (ind >= self.dense_shape[0])).any():
            raise ValueError(f"RowTensor: row indices must be in [0, {self.dense_shape[0]}), got {ind.tolist()}")

    def _mycel_graph_init(self, indices=None, values=None, dense_shape=None, row_tensor=None):
        # graph mode's __init__ (see COOTensor's)
        if row_tensor is not None:
            indices, values, dense_shape = row_tensor.indices, row_tensor.values, row_tensor.dense_shape
        dense_shape = _meta.check_row(indices.shape, indices.dtype, values.shape, dense_shape)
        self.indices = _graph_index(indices)
        self.values = values
        self.dense_shape = dense_shape

    @property
    def dtype(self):
        return self.values.dtype

    def to_dense(self):
        """The dense Tensor of dense_shape (repeated rows add up; differentiable in values)."""
        zeros = _ops.zeros(self.dense_shape, dtype=self.dtype)
        if self.indices.shape[0] == 0:
            return zeros
        return _ops.scatter_add(zeros, self.indices, self.values)

    def __mul__(self, other):
        """Values scaled by a number or a Tensor broadcasting against one row."""
        return RowTensor(self.indices, _ops.mul(self.values, other), self.dense_shape)

    __rmul__ = __mul__

    def __neg__(self):
        return RowTensor(self.indices, _ops.neg(self.values), self.dense_shape)

    def __add__(self, other):
        if isinstance(other, RowTensor):
            if other.dense_shape != self.dense_shape:
                raise ValueError(f"RowTensor.__add__: dense shapes {self.dense_shape} and {other.dense_shape} differ")
            return RowTensor(_ops.concat((self.indices, _ops.cast(other.indices, self.indices.dtype))),
                             _ops.concat((self.values, other.values)), self.dense_shape)
        if isinstance(other, _mycel.Tensor):
            return _ops.scatter_add(other, self.indices, self.values)
        return NotImplemented

    __radd__ = __add__

    def __repr__(self):
        return f"RowTensor(dense_shape={self.dense_shape}, dtype={self.dtype}, rows={self.indices.shape[0]})"


COOTensor._mycel_fields = ("indices", "values", "shape")
CSRTensor._mycel_fields = ("indptr", "indices", "values", "shape")
RowTensor._mycel_fields = ("indices", "values", "dense_shape")
for _cls in (COOTensor, CSRTensor, RowTensor):
    _records.register(_cls)


def _coalesce(indices, values, shape):
    """(sorted unique int64 indices (K, ndims), summed values (K,)) of COO arrays."""
    idx = _ops.cast(indices, _mycel.dtype.int64)
    strides = np.cumprod((1,) + tuple(shape[:0:-1]))[::-1].astype(np.int64)
    lin = _ops.sum(_ops.mul(idx, _mycel.Tensor(strides)), (1,))
    uniq, inverse, _ = _ops.unique_with_counts(lin)
    zeros = _ops.cast(_ops.zeros_like(uniq), values.dtype)
    summed = _ops.tensor_scatter_add(zeros, _ops.reshape(inverse, (-1, 1)), values)
    dims = _mycel.Tensor(np.array(shape, np.int64))
    coords = _ops.mod(_ops.floor_div(_ops.reshape(uniq, (-1, 1)), _mycel.Tensor(strides)), dims)
    return coords, summed


def _check_pair(a, b, cls, who):
    if not isinstance(a, cls) or not isinstance(b, cls):
        raise TypeError(f"{who}: expects two {cls.__name__}s, got {type(a).__name__} and {type(b).__name__}")
    if a.shape != b.shape:
        raise ValueError(f"{who}: shapes {a.shape} and {b.shape} differ")
    if a.dtype != b.dtype:
        raise TypeError(f"{who}: values dtypes {a.dtype.name} and {b.dtype.name} differ")


def coo_add(x1, x2, thresh):
    """x1 + x2 for COOTensors of one shape: indices merged and sorted, the values at equal indices
    summed; sums whose magnitude is below thresh (a 0-d Tensor or number; None keeps all) are
    dropped, as MindSpore's SparseAdd."""
    _check_pair(x1, x2, COOTensor, "coo_add")
    idx = _ops.concat((_ops.cast(x1.indices, _mycel.dtype.int64), _ops.cast(x2.indices, _mycel.dtype.int64)))
    indices, values = _coalesce(idx, _ops.concat((x1.values, x2.values)), x1.shape)
    if thresh is not None:
        if isinstance(thresh, _mycel.Tensor) and thresh.ndim != 0:
            raise ValueError(f"coo_add: thresh must be a 0-d Tensor, got shape {tuple(thresh.shape)}")
        keep = _ops.greater_equal(_ops.abs(values), _ops.cast(_mycel.Tensor(thresh) if not isinstance(
            thresh, _mycel.Tensor) else thresh, values.dtype))
        values = _ops.masked_select(values, keep)
        mask2 = _ops.broadcast_to(_ops.reshape(keep, (-1, 1)), tuple(indices.shape))
        indices = _ops.reshape(_ops.masked_select(indices, mask2), (-1, len(x1.shape)))
    return COOTensor(indices, values, x1.shape)


def csr_add(a, b, alpha, beta):
    """alpha * a + beta * b for CSRTensors of one shape (alpha, beta numbers or 0-d Tensors): a
    CSRTensor with the union of the two patterns (ops.csr_add)."""
    _check_pair(a, b, CSRTensor, "csr_add")
    ca, cb = a.to_coo(), b.to_coo()
    scaled = COOTensor(_ops.concat((_ops.cast(ca.indices, _mycel.dtype.int64), _ops.cast(cb.indices, _mycel.dtype.int64))),
                       _ops.concat((_ops.mul(ca.values, alpha), _ops.mul(cb.values, beta))), a.shape)
    return scaled.to_csr()


def _check_dense(csr, dense, who, vector):
    if not isinstance(csr, CSRTensor):
        raise TypeError(f"{who}: expects a CSRTensor first, got {type(csr).__name__}")
    if isinstance(dense, CSRTensor):
        raise TypeError(f"{who}: the right operand must be a dense Tensor, got a CSRTensor (ops.csr_mm "
                        f"multiplies two CSRTensors)")
    if not isinstance(dense, _mycel.Tensor):
        raise TypeError(f"{who}: the right operand must be a Tensor, got {type(dense).__name__}")
    cols = csr.shape[1]
    if dense.ndim != 2 or dense.shape[0] != cols or (vector and dense.shape[1] != 1):
        want = f"({cols}, 1)" if vector else f"({cols}, K)"
        raise ValueError(f"{who}: the dense operand must have shape {want} for a CSRTensor of shape "
                         f"{csr.shape}, got {tuple(dense.shape)}")
    if dense.dtype != csr.dtype:
        raise TypeError(f"{who}: the dense operand's dtype {dense.dtype.name} differs from the values' "
                        f"{csr.dtype.name}")


def _csr_transpose(x, conjugate):
    """The CSRTensor of x's transpose (conjugated with `conjugate`): sparse_matrix_transpose."""
    dims = _mycel.Tensor(np.array(x.shape, np.int64))
    ptr = _ops.cast(x.indptr, _mycel.dtype.int64)
    batch = _mycel.Tensor(np.array([0, x.size], np.int64))
    out = _ops.sparse_matrix_transpose(dims, batch, ptr, _ops.cast(x.indices, _mycel.dtype.int64), x.values,
                                       conjugate=bool(conjugate))
    return CSRTensor(out[2], out[3], out[4], (x.shape[1], x.shape[0]))


def csr_spgemm(a, b, trans_a=False, trans_b=False, adjoint_a=False, adjoint_b=False):
    """a @ b for two CSRTensors: a CSRTensor with every position some a[i, k] b[k, c] reaches
    (Gustavson's product, registry op csr_spgemm; gradients reach both values). Eager: the
    product's nnz is known only when it has run."""
    if trans_a or adjoint_a:
        a = _csr_transpose(a, adjoint_a)
    if trans_b or adjoint_b:
        b = _csr_transpose(b, adjoint_b)
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"csr_mm: the shapes {a.shape} and {b.shape} do not multiply (a's columns must be "
                         f"b's rows)")
    if a.dtype != b.dtype:
        raise TypeError(f"csr_mm: the values dtypes {a.dtype.name} and {b.dtype.name} differ")
    ptr, ind, val = _ops.csr_spgemm(a.indptr, a.indices, a.values, b.indptr, _ops.cast(b.indices, a.indices.dtype),
                                    b.values, shape=a.shape, shape_b=b.shape)
    return CSRTensor(ptr, ind, val, (a.shape[0], b.shape[1]))


def csr_mm(a, b, trans_a=False, trans_b=False, adjoint_a=False, adjoint_b=False):
    """a @ b for a CSRTensor a and a dense Tensor b: dense (rows, K) (SpMM, ops.csr_mm); trans_a
    multiplies by a's transpose, trans_b by b's. A CSRTensor b gives a CSRTensor (csr_spgemm)."""
    if isinstance(a, CSRTensor) and isinstance(b, CSRTensor):
        return csr_spgemm(a, b, trans_a, trans_b, adjoint_a, adjoint_b)
    if trans_b or adjoint_b:
        b = _ops.transpose(b, (1, 0))
    t = bool(trans_a or adjoint_a)
    if t:
        if not isinstance(a, CSRTensor) or not isinstance(b, _mycel.Tensor) or b.ndim != 2 or b.shape[0] != a.shape[0]:
            raise ValueError(f"csr_mm: with trans_a the dense operand must have shape ({a.shape[0]}, K), "
                             f"got {getattr(b, 'shape', b)}")
        return _ops.csr_spmm(a.indptr, a.indices, a.values, b, shape=a.shape, transpose_a=True)
    _check_dense(a, b, "csr_mm", False)
    return _ops.csr_spmm(a.indptr, a.indices, a.values, b, shape=a.shape, transpose_a=False)


def csr_mv(csr_tensor, vector):
    """csr_tensor @ vector for a dense (cols, 1) vector: dense (rows, 1) (ops.csr_mv)."""
    _check_dense(csr_tensor, vector, "csr_mv", True)
    return _ops.csr_spmm(csr_tensor.indptr, csr_tensor.indices, csr_tensor.values, vector,
                         shape=csr_tensor.shape, transpose_a=False)
