"""MindSpore's var_mean and std_mean: (var, mean) and (std, mean) over the same axes, made of the
registry's var/std and mean. Plain Python, so graph mode parses them and their gradients come
from the ops they call."""
from mycel import _mycel
from mycel.common.validator import not_tensor_error

_ops = _mycel.ops


def _axes(axis):
    """MindSpore's axis (None, an int or a tuple/list) as the registry's tuple (empty: all)."""
    if axis is None:
        return ()
    if isinstance(axis, int):
        return (axis,)
    return tuple(axis)


def _ddof(name, ddof):
    """ddof as an int; MindSpore also takes a bool (True: the unbiased divisor count - 1)."""
    if isinstance(ddof, bool):
        return 1 if ddof else 0
    if not isinstance(ddof, int):
        raise TypeError("[" + name + "] ddof must be an int or a bool, got " + str(ddof))
    return ddof


def var_mean(input, axis=None, ddof=0, keepdims=False):  # noqa: A002 (MindSpore's argument name)
    """(variance, mean) of input over axis (all if None), the variance with divisor count - ddof."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("var_mean", "input", input)
    axes = _axes(axis)
    return (_ops.var(input, axis=axes, keep_dims=keepdims, ddof=_ddof("var_mean", ddof)),
            _ops.mean(input, axis=axes, keep_dims=keepdims))


def std_mean(input, axis=None, ddof=0, keepdims=False):  # noqa: A002
    """(standard deviation, mean) of input over axis (all if None), divisor count - ddof."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("std_mean", "input", input)
    axes = _axes(axis)
    return (_ops.std(input, axis=axes, keep_dims=keepdims, ddof=_ddof("std_mean", ddof)),
            _ops.mean(input, axis=axes, keep_dims=keepdims))
