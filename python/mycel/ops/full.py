"""MindSpore 2.x's ops.full and ops.full_like (numpy's full): plain Python over the `fill` op,
so in graph mode they parse like user code (a shape naming a dynamic dim becomes dynamic_fill)."""
from mycel import _mycel
from mycel.common.dtype import bool_, float32, int64
from mycel.common.validator import not_tensor_error


def _dtype_of_value(fill_value):
    """numpy's choice for a Python value: bool, int64 for ints, float32 otherwise."""
    if isinstance(fill_value, bool):
        return bool_
    if isinstance(fill_value, int):
        return int64
    return float32


def full(size, fill_value, *, dtype=None):
    """A tensor of shape `size` (an int or a tuple) filled with `fill_value`."""
    shape = (size,) if isinstance(size, int) else tuple(size)
    value = float(fill_value)  # fill's value attribute is a float (exact for bools and small ints)
    return _mycel.ops.fill(_dtype_of_value(fill_value) if dtype is None else dtype, shape, value)


def full_like(input, fill_value, *, dtype=None):  # noqa: A002 (MindSpore's argument name)
    """A tensor of input's shape (and dtype unless given) filled with `fill_value`."""
    if not isinstance(input, _mycel.Tensor):
        raise not_tensor_error("full_like", "input", input)
    return _mycel.ops.fill(input.dtype if dtype is None else dtype, input.shape, float(fill_value))
