"""Checks of the sparse containers' shapes and dtypes when graph-mode code builds them (run at
compile time: the index values are only known at run time, where the sparse registry ops check
them). The messages are those of the eager constructors (mycel/_sparse.py)."""

_INDEX_TYPES = ("int16", "int32", "int64")


def _dims(shape, who, name):
    if shape is None or any(d is None for d in shape):
        raise NotImplementedError(f"{who} in graph mode: {name} must have a static shape, got {shape}")
    return tuple(shape)


def _index_dtype(dtype, who, name):
    if dtype.name not in _INDEX_TYPES:
        raise TypeError(f"{who}: {name} must be int16, int32 or int64, got {dtype.name}")


def dense_constant(x, dtype):
    """A Python number or array as a Tensor of the values' dtype (a dense operand)."""
    import numpy as np
    from mycel import _mycel
    return _mycel.Tensor(np.asarray(x, dtype=np.dtype(dtype.name)))


def dense_shape(shape, who):
    """The dense shape argument: a tuple of non-negative ints."""
    if not isinstance(shape, (tuple, list)) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise TypeError(f"{who}: shape must be a tuple of non-negative ints, got {shape!r}")
    return tuple(shape)


def check_csr(indptr_shape, indptr_dtype, indices_shape, indices_dtype, values_shape, shape):
    """CSRTensor(indptr, indices, values, shape): returns the dense shape."""
    shape = dense_shape(shape, "CSRTensor")
    if len(shape) != 2:
        raise ValueError(f"CSRTensor: only 2-d shapes are supported, got {shape}")
    _index_dtype(indptr_dtype, "CSRTensor", "indptr")
    _index_dtype(indices_dtype, "CSRTensor", "indices")
    ptr = _dims(indptr_shape, "CSRTensor", "indptr")
    ind = _dims(indices_shape, "CSRTensor", "indices")
    val = _dims(values_shape, "CSRTensor", "values")
    if ptr != (shape[0] + 1,):
        raise ValueError(f"CSRTensor: indptr must have length rows + 1 = {shape[0] + 1}, got shape {ptr}")
    if len(ind) != 1 or val != ind:
        raise ValueError(f"CSRTensor: indices and values must be 1-d with nnz entries each, got shapes "
                         f"{ind} and {val}")
    return shape


def check_coo(indices_shape, indices_dtype, values_shape, shape):
    """COOTensor(indices, values, shape): returns the dense shape."""
    shape = dense_shape(shape, "COOTensor")
    _index_dtype(indices_dtype, "COOTensor", "indices")
    ind = _dims(indices_shape, "COOTensor", "indices")
    val = _dims(values_shape, "COOTensor", "values")
    if len(ind) != 2 or ind[1] != len(shape):
        raise ValueError(f"COOTensor: indices must be an int tensor of shape (N, {len(shape)}), got shape {ind}")
    if val != (ind[0],):
        raise ValueError(f"COOTensor: values must have shape ({ind[0]},), got {val}")
    return shape


def check_row(indices_shape, indices_dtype, values_shape, dense_shape_):
    """RowTensor(indices, values, dense_shape): returns the dense shape."""
    shape = dense_shape(dense_shape_, "RowTensor")
    _index_dtype(indices_dtype, "RowTensor", "indices")
    ind = _dims(indices_shape, "RowTensor", "indices")
    val = _dims(values_shape, "RowTensor", "values")
    if len(ind) != 1:
        raise ValueError(f"RowTensor: indices must be 1-d, got shape {ind}")
    want = (ind[0],) + shape[1:]
    if not shape or val != want:
        raise ValueError(f"RowTensor: values must have shape (len(indices),) + dense_shape[1:] = {want}, "
                         f"got {val} for dense_shape {shape}")
    return shape
