"""MindSpore's functional sparse ops over CSRTensor / COOTensor (mindspore.ops.csr_mm, coo_add,
csr_to_coo, dense_to_sparse_csr, ...) and the SparseToDense primitive. The work is done by the
sparse registry ops (src/mycel/ops/sparse.cc) and the containers' methods."""
import numpy as np

from mycel import _mycel
from mycel._sparse import COOTensor, CSRTensor, RowTensor, coo_add, csr_add, csr_mm, csr_mv  # noqa: F401
from mycel.ops.operations import Primitive

_ops = _mycel.ops


def _expect(x, cls, who):
    if not isinstance(x, cls):
        raise TypeError(f"{who}: expects a {cls.__name__}, got {type(x).__name__}")
    return x


def csr_to_coo(tensor):
    """The COOTensor of a CSRTensor."""
    return _expect(tensor, CSRTensor, "csr_to_coo").to_coo()


def coo_to_csr(tensor):
    """The CSRTensor of a 2-d COOTensor (coalesced: rows sorted, duplicates summed)."""
    return _expect(tensor, COOTensor, "coo_to_csr").to_csr()


def csr_to_dense(csr_tensor):
    """The dense Tensor of a CSRTensor."""
    return _expect(csr_tensor, CSRTensor, "csr_to_dense").to_dense()


def coo_to_dense(coo_tensor):
    """The dense Tensor of a COOTensor (duplicates add up)."""
    return _expect(coo_tensor, COOTensor, "coo_to_dense").to_dense()


def _nonzero_coords(tensor, who):
    if not isinstance(tensor, _mycel.Tensor):
        raise TypeError(f"{who}: expects a Tensor, got {type(tensor).__name__}")
    if tensor.ndim != 2:
        raise ValueError(f"{who}: expects a 2-d Tensor, got shape {tuple(tensor.shape)}")
    coords = _ops.cast(_ops.nonzero(tensor), _mycel.dtype.int64)
    return coords, _ops.gather_nd(tensor, coords)


def dense_to_sparse_coo(tensor):
    """The COOTensor of a 2-d Tensor's nonzero elements (row-major order)."""
    coords, values = _nonzero_coords(tensor, "dense_to_sparse_coo")
    return COOTensor(coords, values, tuple(tensor.shape))


def dense_to_sparse_csr(tensor):
    """The CSRTensor of a 2-d Tensor's nonzero elements."""
    coords, values = _nonzero_coords(tensor, "dense_to_sparse_csr")
    n = int(coords.shape[0])
    rows = _ops.reshape(_ops.slice(coords, (0, 0), (n, 1)), (-1,))
    cols = _ops.reshape(_ops.slice(coords, (0, 1), (n, 1)), (-1,))
    return CSRTensor(_ops.coo2csr(rows, height=tensor.shape[0]), cols, values, tuple(tensor.shape))


def sparse_to_dense(indices, values, sparse_shape):
    """The dense Tensor of COO arrays (indices (N, ndims), values (N,), a shape tuple)."""
    return COOTensor(indices, values, tuple(sparse_shape)).to_dense()


def coo_concat(sp_input, concat_dim=0):
    """The COOTensors of sp_input (a tuple or list, one rank, equal shapes off concat_dim) joined
    along concat_dim: indices shifted by the sizes before them, entries in row-major order (as
    MindSpore's SparseConcat)."""
    if not isinstance(sp_input, (tuple, list)) or len(sp_input) < 1:
        raise TypeError(f"coo_concat: sp_input must be a non-empty tuple or list of COOTensors, got {sp_input!r}")
    for x in sp_input:
        _expect(x, COOTensor, "coo_concat")
    rank = len(sp_input[0].shape)
    if not -rank <= concat_dim < rank:
        raise ValueError(f"coo_concat: concat_dim {concat_dim} is out of range for rank {rank}")
    dim = concat_dim % rank
    for x in sp_input[1:]:
        same = len(x.shape) == rank and all(a == b for d, (a, b) in enumerate(zip(x.shape, sp_input[0].shape))
                                            if d != dim)
        if not same:
            raise ValueError(f"coo_concat: shapes {sp_input[0].shape} and {x.shape} differ off concat_dim {dim}")
    if any(x.values.dtype != sp_input[0].values.dtype for x in sp_input):
        raise TypeError("coo_concat: the values of the inputs must have one dtype")
    index_type = sp_input[0].indices.dtype
    parts, offset = [], 0
    for x in sp_input:
        shift = _mycel.Tensor(np.array([[offset if d == dim else 0 for d in range(rank)]], np.int64))
        parts.append(_ops.add(_ops.cast(x.indices, _mycel.dtype.int64), shift))
        offset += x.shape[dim]
    shape = tuple(offset if d == dim else n for d, n in enumerate(sp_input[0].shape))
    indices = _ops.concat(parts, 0)
    values = _ops.concat([x.values for x in sp_input], 0)
    strides = _mycel.Tensor(np.cumprod((1,) + shape[:0:-1])[::-1].astype(np.int64).reshape(-1, 1))
    order = _ops.argsort(_ops.reshape(_ops.matmul(indices, strides), (-1,)))
    return COOTensor(_ops.cast(_ops.gather(indices, order, 0), index_type), _ops.gather(values, order, 0), shape)


def csr_mul(x, y):
    """A CSRTensor times a dense Tensor broadcast to its shape: a CSRTensor of x's pattern."""
    return _expect(x, CSRTensor, "csr_mul") * y


def csr_div(x, y):
    """A CSRTensor divided by a dense Tensor broadcast to its shape: a CSRTensor of x's pattern."""
    return _expect(x, CSRTensor, "csr_div") / y


def csr_reduce_sum(x, axis):
    """CSRTensor.sum(axis) in functional form."""
    return _expect(x, CSRTensor, "csr_reduce_sum").sum(axis)


def _elementwise(name, fn, cls):
    def op(x):
        _expect(x, cls, name)
        v = fn(x.values)
        return CSRTensor(x.indptr, x.indices, v, x.shape) if cls is CSRTensor else COOTensor(x.indices, v, x.shape)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"{fn.__name__} of the values of a {cls.__name__} (zeros stay zero)."
    return op


# MindSpore's value-wise functions that keep zeros zero (f(0) = 0).
for _f in ("abs", "neg", "relu", "sin", "tan", "tanh", "sqrt", "square", "sinh", "asin", "atan",
           "asinh", "atanh", "expm1", "log1p", "sign", "floor", "ceil", "round"):
    if hasattr(_ops, _f):
        globals()[f"csr_{_f}"] = _elementwise(f"csr_{_f}", getattr(_ops, _f), CSRTensor)
        globals()[f"coo_{_f}"] = _elementwise(f"coo_{_f}", getattr(_ops, _f), COOTensor)


# MindSpore's F helpers that build and read the containers (F.make_row_tensor, ...).
def make_row_tensor(indices, values, dense_shape):
    """RowTensor(indices, values, dense_shape)."""
    return RowTensor(indices, values, dense_shape)


def make_coo_tensor(indices, values, shape):
    """COOTensor(indices, values, shape)."""
    return COOTensor(indices, values, shape)


def make_csr_tensor(indptr, indices, values, shape):
    """CSRTensor(indptr, indices, values, shape)."""
    return CSRTensor(indptr, indices, values, shape)


def _getter(cls, attr):
    def get(x):
        return getattr(_expect(x, cls, f"{cls.__name__} {attr}"), attr)
    get.__doc__ = f"The {attr} of a {cls.__name__}."
    return get


row_tensor_get_indices = _getter(RowTensor, "indices")
row_tensor_get_values = _getter(RowTensor, "values")
row_tensor_get_dense_shape = _getter(RowTensor, "dense_shape")
coo_tensor_get_indices = _getter(COOTensor, "indices")
coo_tensor_get_values = _getter(COOTensor, "values")
coo_tensor_get_dense_shape = _getter(COOTensor, "shape")
csr_tensor_get_indptr = _getter(CSRTensor, "indptr")
csr_tensor_get_indices = _getter(CSRTensor, "indices")
csr_tensor_get_values = _getter(CSRTensor, "values")
csr_tensor_get_dense_shape = _getter(CSRTensor, "shape")


def row_tensor_add(x, y):
    """x + y for RowTensors of one dense shape (rows concatenated; repeated rows add up when
    densified), or a RowTensor added into a dense Tensor."""
    return _expect(x, RowTensor, "row_tensor_add") + y


def _scatter_to_dense(indices, values, sparse_shape):
    """The dense Tensor of COO arrays for a shape tuple: values added at their indices into
    zeros (duplicates add up; the gradient in values gathers the sensitivities back)."""
    if values.dtype == _mycel.dtype.bool:  # no bool scatter-add: set the entries as uint8
        zeros = _ops.zeros(tuple(sparse_shape), dtype=_mycel.dtype.uint8)
        hits = _ops.tensor_scatter_add(zeros, indices, _ops.cast(values, _mycel.dtype.uint8))
        return _ops.cast(hits, _mycel.dtype.bool)
    zeros = _ops.zeros(tuple(sparse_shape), dtype=values.dtype)
    return _ops.tensor_scatter_add(zeros, indices, values)


class SparseToDense(Primitive):
    """SparseToDense()(indices, values, sparse_shape): the dense Tensor of COO arrays (the shape
    a tuple; both modes, differentiable in values)."""

    def __init__(self):
        super().__init__("SparseToDense")

    def __call__(self, indices, values, sparse_shape):
        if isinstance(sparse_shape, _mycel.Tensor):  # eager: the shape's values
            sparse_shape = tuple(int(d) for d in sparse_shape.asnumpy().reshape(-1))
        COOTensor(indices, values, tuple(sparse_shape))  # checks the arrays against the shape
        return _scatter_to_dense(indices, values, sparse_shape)

    @property
    def _mycel_graph_function(self):
        return _scatter_to_dense


class SparseTensorDenseMatmul(Primitive):
    """SparseTensorDenseMatmul(adjoint_st=False, adjoint_dt=False)(indices, values, sparse_shape,
    dense): COO arrays times a dense matrix (a dense Tensor)."""

    def __init__(self, adjoint_st=False, adjoint_dt=False):
        super().__init__("SparseTensorDenseMatmul")
        self.adjoint_st, self.adjoint_dt = bool(adjoint_st), bool(adjoint_dt)

    def __call__(self, indices, values, sparse_shape, dense):
        from mycel.nn.layer.sparse import coo_dense_matmul
        return coo_dense_matmul(indices, values, tuple(sparse_shape), dense, self.adjoint_st, self.adjoint_dt)


# MindSpore's Tensor.to_coo() / Tensor.to_csr(): the sparse form of a 2-d Tensor's nonzeros.
_mycel.Tensor.to_coo = dense_to_sparse_coo
_mycel.Tensor.to_csr = dense_to_sparse_csr
