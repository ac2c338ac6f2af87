"""Reductions (mindspore.numpy): sum, mean, amax, std, argmax, ... with numpy's axis/keepdims."""
from mycel import _mycel
from mycel.common.dtype import bool_
from mycel.numpy.math import _t

_ops = _mycel.ops


def _axes(axis):
    if axis is None:
        return ()
    return (axis,) if isinstance(axis, int) else tuple(axis)


def _reduce(op, a, axis, keepdims, dtype=None):
    a = _t(a)
    if dtype is not None:
        a = _ops.cast(a, dtype)
    return op(a, _axes(axis), keepdims)


def sum(a, axis=None, dtype=None, keepdims=False, initial=None):  # noqa: A001 (numpy's name)
    """Sum over axis (all when None), plus initial."""
    out = _reduce(_ops.sum, a, axis, keepdims, dtype)
    return out if initial is None else out + initial


def mean(a, axis=None, keepdims=False, dtype=None):
    """Mean over axis."""
    return _reduce(_ops.mean, a, axis, keepdims, dtype)


def amax(a, axis=None, keepdims=False):
    """Maximum over axis."""
    return _reduce(_ops.max, a, axis, keepdims)


def amin(a, axis=None, keepdims=False):
    """Minimum over axis."""
    return _reduce(_ops.min, a, axis, keepdims)


max = amax  # noqa: A001
min = amin  # noqa: A001


def prod(a, axis=None, keepdims=False, dtype=None):
    """Product over axis."""
    return _reduce(_ops.prod, a, axis, keepdims, dtype)


def std(a, axis=None, ddof=0, keepdims=False):
    """Standard deviation over axis (divisor n - ddof)."""
    return _ops.std(_t(a), _axes(axis), keepdims, ddof)


def var(a, axis=None, ddof=0, keepdims=False):
    """Variance over axis (divisor n - ddof)."""
    return _ops.var(_t(a), _axes(axis), keepdims, ddof)


def argmax(a, axis=None):
    """Index of the first maximum (of the flattened tensor when axis is None)."""
    a = _t(a)
    if axis is None:
        return _ops.argmax(_ops.reshape(a, (-1,)), 0)
    return _ops.argmax(a, axis)


def argmin(a, axis=None):
    """Index of the first minimum (of the flattened tensor when axis is None)."""
    a = _t(a)
    if axis is None:
        return _ops.argmin(_ops.reshape(a, (-1,)), 0)
    return _ops.argmin(a, axis)


def all(a, axis=None, keepdims=False):  # noqa: A001
    """Whether every element (over axis) is true."""
    return _ops.all(_ops.cast(_t(a), bool_), _axes(axis), keepdims)


def any(a, axis=None, keepdims=False):  # noqa: A001
    """Whether some element (over axis) is true."""
    return _ops.any(_ops.cast(_t(a), bool_), _axes(axis), keepdims)


def average(a, axis=None, weights=None):
    """Mean over axis, weighted by `weights` (same shape as a) when given."""
    a = _t(a)
    if weights is None:
        return mean(a, axis)
    w = _t(weights)
    return sum(a * w, axis) / sum(w, axis)
