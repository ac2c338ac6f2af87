"""MindSpore's mindspore.common.sparse_tensor path: CSRTensor, COOTensor and RowTensor (defined in
mycel/_sparse.py), and the Tensor attributes added here: strides, from_numpy, deepcopy."""
import numpy as np

from mycel import _mycel
from mycel._sparse import COOTensor, CSRTensor, RowTensor  # noqa: F401


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
