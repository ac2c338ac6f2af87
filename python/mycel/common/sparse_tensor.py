"""CSRTensor and COOTensor (MindSpore's sparse containers): indices, values and a dense shape,
with to_dense, astype and the attributes MindSpore's tutorials read. They hold Tensors; the ops
that take them are the dense ones after to_dense (Mycel has no sparse kernels)."""
import numpy as np

from mycel import _mycel


def _tensor(x, who, name):
    if isinstance(x, _mycel.Tensor):
        return x
    try:
        return _mycel.Tensor(np.asarray(x))
    except Exception:  # noqa: BLE001 (the message below names the argument)
        raise TypeError(f"{who}: {name} must be a Tensor or array-like, got {type(x).__name__}") from None


def _shape(shape, who):
    if not isinstance(shape, (tuple, list)) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise TypeError(f"{who}: shape must be a tuple of non-negative ints, got {shape!r}")
    return tuple(shape)


class COOTensor:
    """COOTensor(indices (N, ndims) int, values (N,), shape)."""

    def __init__(self, indices, values, shape):
        self.indices = _tensor(indices, "COOTensor", "indices")
        self.values = _tensor(values, "COOTensor", "values")
        self.shape = _shape(shape, "COOTensor")
        ind = self.indices.asnumpy()
        if ind.ndim != 2 or ind.shape[1] != len(self.shape) or ind.dtype.kind not in "iu":
            raise ValueError(f"COOTensor: indices must be an int tensor of shape (N, {len(self.shape)}), "
                             f"got {ind.dtype} of shape {ind.shape}")
        if self.values.ndim != 1 or self.values.shape[0] != ind.shape[0]:
            raise ValueError(f"COOTensor: values must have shape ({ind.shape[0]},), got {tuple(self.values.shape)}")
        if ((ind < 0) | (ind >= np.array(self.shape))).any():
            raise ValueError(f"COOTensor: indices out of range for shape {self.shape}")

    @property
    def dtype(self):
        return self.values.dtype

    def astype(self, dtype):
        """The same sparsity with values cast to dtype."""
        return COOTensor(self.indices, self.values.astype(dtype), self.shape)

    def to_dense(self):
        """The dense Tensor (duplicate indices add up)."""
        out = np.zeros(self.shape, dtype=self.values.asnumpy().dtype)
        np.add.at(out, tuple(self.indices.asnumpy().T), self.values.asnumpy())
        return _mycel.Tensor(out, dtype=self.dtype)

    def __repr__(self):
        return f"COOTensor(shape={self.shape}, dtype={self.dtype}, nnz={self.values.shape[0]})"


class CSRTensor:
    """CSRTensor(indptr (rows + 1,), indices (nnz,), values (nnz,), shape (rows, cols))."""

    def __init__(self, indptr, indices, values, shape):
        self.indptr = _tensor(indptr, "CSRTensor", "indptr")
        self.indices = _tensor(indices, "CSRTensor", "indices")
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

    @property
    def dtype(self):
        return self.values.dtype

    def astype(self, dtype):
        """The same sparsity with values cast to dtype."""
        return CSRTensor(self.indptr, self.indices, self.values.astype(dtype), self.shape)

    def to_dense(self):
        """The dense Tensor."""
        ptr, ind, val = self.indptr.asnumpy(), self.indices.asnumpy(), self.values.asnumpy()
        out = np.zeros(self.shape, dtype=val.dtype)
        rows = np.repeat(np.arange(self.shape[0]), np.diff(ptr))
        np.add.at(out, (rows, ind), val)
        return _mycel.Tensor(out, dtype=self.dtype)

    def to_coo(self):
        """The same tensor as a COOTensor."""
        ptr, ind = self.indptr.asnumpy(), self.indices.asnumpy()
        rows = np.repeat(np.arange(self.shape[0]), np.diff(ptr))
        return COOTensor(_mycel.Tensor(np.stack([rows, ind], 1).astype(np.int64)), self.values, self.shape)

    def __repr__(self):
        return f"CSRTensor(shape={self.shape}, dtype={self.dtype}, nnz={self.values.shape[0]})"


def _strides(self):
    """Bytes to step along each dimension (row-major, as numpy's strides)."""
    step, out = self.itemsize, []
    for d in reversed(self.shape):
        out.append(step)
        step *= d
    return tuple(reversed(out))


def _from_numpy(array):
    """A Tensor sharing memory with the numpy array (MindSpore's Tensor.from_numpy)."""
    from mycel.common.tensor import from_dlpack
    if not isinstance(array, np.ndarray):
        raise TypeError(f"Tensor.from_numpy: expects a numpy.ndarray, got {type(array).__name__}")
    return from_dlpack(np.ascontiguousarray(array))


def _deepcopy(self, memo):
    """A Tensor with a copy of the values (its own storage)."""
    out = _mycel.Tensor(np.array(self.asnumpy()), dtype=self.dtype)
    memo[id(self)] = out
    return out


_mycel.Tensor.strides = property(_strides)
_mycel.Tensor.__deepcopy__ = _deepcopy
_mycel.Tensor.from_numpy = staticmethod(_from_numpy)
