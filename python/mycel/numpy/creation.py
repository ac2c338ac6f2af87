"""Creating tensors (mindspore.numpy): array, zeros, arange, linspace, eye, ..."""
import numpy as _np

from mycel import _mycel
from mycel.common.dtype import bool_, float32, int32
from mycel.common.tensor import Tensor

_ops = _mycel.ops


def _default_dtype(dtype):
    return float32 if dtype is None else dtype


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def array(obj, dtype=None, copy=True, ndmin=0):
    """A Tensor of obj (a Tensor, array, list or number); Python floats become float32."""
    if isinstance(obj, Tensor):
        out = obj if dtype is None or obj.dtype == dtype else _ops.cast(obj, dtype)
        if copy and out is obj:
            out = _ops.identity(obj)
    else:
        a = _np.asarray(obj)
        if not isinstance(obj, _np.ndarray) and a.dtype == _np.float64:
            a = a.astype(_np.float32)
        if a.dtype == _np.int64 and not isinstance(obj, _np.ndarray):
            a = a.astype(_np.int32)  # MindSpore's numpy: Python ints are int32
        out = Tensor(a) if dtype is None else Tensor(a, dtype=dtype)
    while out.ndim < ndmin:
        out = _ops.expand_dims(out, 0)
    return out


def asarray(obj, dtype=None):
    """array(obj, dtype) without copying a Tensor of the right dtype."""
    return array(obj, dtype, copy=False)


def zeros(shape, dtype=None):
    """A tensor of zeros."""
    return _ops.zeros(_shape(shape), _default_dtype(dtype))


def ones(shape, dtype=None):
    """A tensor of ones."""
    return _ops.ones(_shape(shape), _default_dtype(dtype))


def full(shape, fill_value, dtype=None):
    """A tensor filled with fill_value; its dtype from the value when not given (bool, int32 for
    ints as MindSpore's numpy, float32 for floats, a Tensor's own)."""
    if isinstance(fill_value, Tensor):
        value = fill_value if dtype is None else _ops.cast(fill_value, dtype)
        return _ops.broadcast_to(value, _shape(shape))
    if dtype is None:
        dtype = (bool_ if isinstance(fill_value, bool) else
                 int32 if isinstance(fill_value, int) else float32)
    return _ops.fill(dtype, _shape(shape), fill_value)


def empty(shape, dtype=None):
    """A tensor of the shape (zeros: Mycel does not hand out uninitialized memory)."""
    return zeros(shape, dtype)


def zeros_like(a, dtype=None):
    """Zeros of a's shape (and dtype unless given)."""
    return zeros(a.shape, a.dtype if dtype is None else dtype)


def ones_like(a, dtype=None):
    """Ones of a's shape (and dtype unless given)."""
    return ones(a.shape, a.dtype if dtype is None else dtype)


def full_like(a, fill_value, dtype=None):
    """fill_value in a's shape (and dtype unless given)."""
    return _ops.fill(a.dtype if dtype is None else dtype, tuple(a.shape), fill_value)


def empty_like(a, dtype=None):
    """zeros_like (see empty)."""
    return zeros_like(a, dtype)


def arange(start, stop=None, step=1, dtype=None):
    """Evenly spaced values in [start, stop) (numpy.arange); ints give int32 as MindSpore's."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        dtype = float32 if any(isinstance(v, float) for v in (start, stop, step)) else int32
    return _ops.arange(start, stop, step, dtype=dtype)


def linspace(start, stop, num=50, endpoint=True, dtype=None):
    """num evenly spaced values from start to stop (stop included unless endpoint=False)."""
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    if num == 0:
        return zeros((0,), dtype)
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    values = _ops.arange(0, num, 1, dtype=float32) * step + start
    if endpoint and num > 1:
        values = _ops.concat((values[:num - 1], _ops.fill(float32, (1,), float(stop))), 0)
    return values if dtype is None or dtype == float32 else _ops.cast(values, dtype)


def eye(N, M=None, k=0, dtype=None):
    """Ones on the k-th diagonal of an N x M matrix."""
    dtype = _default_dtype(dtype)
    M = N if M is None else M
    if k == 0:
        return _ops.eye(N, M, dtype=dtype)
    return Tensor(_np.eye(N, M, k), dtype=dtype)


def identity(n, dtype=None):
    """The n x n identity."""
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below the k-th diagonal."""
    return _ops.tril(ones((N, N if M is None else M), dtype), k)
