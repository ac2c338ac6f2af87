"""MindSpore's `ops.functional` (imported as F): the functional ops, plus the tuple and function
helpers MindSpore programs call through F (partial, tuple_len, make_tuple, scalar_to_tensor, ...).
Every op is the registry's `mycel.ops` function; the helpers are plain Python that graph mode
parses like user code."""
import functools

import numpy as _np

from mycel import _mycel
from mycel.common.dtype import float32 as _float32


def _partial_graph(fn, *args):
    # Graph mode: the pair (fn, args), which HyperMap/Map (multitype.py) call as
    # fn(*args, *leaves). A closure would do for one call, but a closure is specialized once,
    # and a map calls it with a different leaf shape each time.
    return (fn, args)


class _Partial:
    """F.partial(fn, *args): fn with its first arguments fixed. Eagerly a functools.partial; in
    graph mode a value for HyperMap and Map to call (calling it directly there is not supported)."""

    def __call__(self, fn, *args):
        return functools.partial(fn, *args)

    @property
    def _mycel_graph_function(self):
        return _partial_graph


partial = _Partial()


def make_tuple(*items):
    """The tuple of the items."""
    return items


def tuple_len(t):
    """len(t) of a tuple."""
    return len(t)


def tuple_getitem(t, i):
    """t[i] of a tuple."""
    return t[i]


def list_getitem(t, i):
    """t[i] of a list."""
    return t[i]


def scalar_to_tensor(x, dtype=_float32):
    """A 0-d Tensor of the Python number x (default float32, as MindSpore's)."""
    return _mycel.Tensor(_np.array(x), dtype=dtype)


def scalar_to_array(x):
    """A 0-d Tensor of the Python number x, its dtype from the number."""
    return _mycel.Tensor(_np.array(x))


def tuple_to_array(t):
    """A 1-d Tensor of a tuple of Python numbers (int64 for ints, float32 for floats)."""
    a = _np.array(t)
    return _mycel.Tensor(a.astype(_np.float32) if a.dtype.kind == "f" else a)


def is_(a, b):
    """`a is b`."""
    return a is b


def is_not(a, b):
    """`a is not b`."""
    return a is not b


def in_dict(key, d):
    """`key in d`."""
    return key in d


def not_in_dict(key, d):
    """`key not in d`."""
    return key not in d


def bool_and(a, b):
    """`a and b`."""
    return a and b


def bool_or(a, b):
    """`a or b`."""
    return a or b


# MindSpore's F spellings of registry ops (F.tensor_add is ops.add).
_ALIASES = {"tensor_add": "add", "tensor_sub": "sub", "tensor_mul": "mul", "tensor_div": "div",
            "tensor_pow": "pow", "tensor_mod": "mod", "tensor_floordiv": "floor_div",
            "tensor_gt": "greater", "tensor_ge": "greater_equal", "tensor_lt": "less",
            "tensor_le": "less_equal", "scalar_cast": "cast", "array_reduce": "reduce",
            "neg_tensor": "neg",
            "reduce_sum": "sum", "reduce_mean": "mean", "reduce_max": "max", "reduce_min": "min"}


def __getattr__(name):
    import mycel.ops
    if name in _ALIASES:
        return getattr(mycel.ops, _ALIASES[name])
    return getattr(mycel.ops, name)
