"""MindSpore's signatures of the scans: ops.cumsum(x, axis, dtype=None) and
ops.cumprod(input, dim, dtype=None), where dtype casts the input before the scan (so an int
input summed as float32 gives float32, not the registry's int64). The scans themselves are the
registry's cumsum/cumprod (ops/reduce.cc), whose exclusive and reverse stay keywords here."""
from mycel import _mycel

_ops = _mycel.ops


def _cast(x, dtype):
    return x if dtype is None or x.dtype == dtype else _ops.cast(x, dtype)


def cumsum(x, axis, dtype=None, *, exclusive=False, reverse=False):
    """Cumulative sum along axis, computed in dtype when given."""
    return _ops.cumsum(_cast(x, dtype), axis, exclusive=exclusive, reverse=reverse)


def cumprod(input, dim=None, dtype=None, *, axis=None, exclusive=False, reverse=False):  # noqa: A002
    """Cumulative product along dim (MindSpore's name; axis is the registry's), computed in dtype
    when given."""
    if (dim is None) == (axis is None):
        raise TypeError("cumprod: give the scan's dim (or axis), once")
    return _ops.cumprod(_cast(input, dtype), axis if dim is None else dim, exclusive=exclusive,
                        reverse=reverse)


def _with_examples():
    from mycel.ops.linalg import _with_example
    _with_example(cumsum, "cumsum")
    _with_example(cumprod, "cumprod")


_with_examples()


def _tensor_cumsum(self, axis=None, dtype=None):
    """Tensor.cumsum(axis=None, dtype=None): axis None scans the flattened tensor (MindSpore)."""
    if axis is None:
        return cumsum(_ops.reshape(self, (-1,)), 0, dtype)
    return cumsum(self, axis, dtype)


def _tensor_cumprod(self, dim, dtype=None):
    """Tensor.cumprod(dim, dtype=None)."""
    return cumprod(self, dim, dtype)


_mycel.Tensor.cumsum = _tensor_cumsum
_mycel.Tensor.cumprod = _tensor_cumprod
