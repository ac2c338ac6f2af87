"""Argument normalization shared by the layers (runs in __init__, never inside construct)."""
import numbers

from mycel.common.initializer import initializer
from mycel.common.parameter import Parameter


def pair(value, who, arg, allow_zero=False):
    """An int or a pair of ints as a pair of ints >= 1 (or >= 0 with allow_zero)."""
    vals = (value, value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else value
    low = 0 if allow_zero else 1
    if not isinstance(vals, (tuple, list)) or len(vals) != 2 or \
            any(isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low for v in vals):
        raise ValueError(f"{who}: '{arg}' must be an int or a pair of ints >= {low}, got {value!r}")
    return tuple(int(v) for v in vals)


def check_int(value, who, arg, low=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{who}: '{arg}' must be an int >= {low}, got {value!r}")
    return int(value)


def check_channels(cell, who, in_channels, out_channels, group):
    """Sets cell.in_channels/out_channels/group, checked: ints >= 1, both divisible by group."""
    cell.in_channels = check_int(in_channels, who, "in_channels")
    cell.out_channels = check_int(out_channels, who, "out_channels")
    cell.group = check_int(group, who, "group")
    if in_channels % group or out_channels % group:
        raise ValueError(f"{who}: in_channels ({in_channels}) and out_channels ({out_channels}) "
                         f"must be divisible by group ({group})")


def check_pad_mode(pad_mode, who):
    if not isinstance(pad_mode, str) or pad_mode.lower() not in ("same", "valid", "pad"):
        raise ValueError(f"{who}: pad_mode must be 'same', 'valid' or 'pad', got {pad_mode!r}")
    return pad_mode.lower()


def window_padding(padding, pad_mode, who, dims, allow_one=False):
    """MindSpore's padding of a `dims`-d window as 2 * dims ints (head, tail per dim): an int, a
    tuple of `dims` (each dim's head = tail), of 2 * dims, or (allow_one: Conv3d's) of one int;
    nonzero only with pad_mode 'pad'."""
    lengths = ((1,) if allow_one else ()) + (dims, 2 * dims)
    if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
        pads = (int(padding),) * (2 * dims)
    elif isinstance(padding, (tuple, list)) and len(padding) in lengths:
        pads = tuple(padding) if len(padding) == 2 * dims else \
            tuple(p for p in (tuple(padding) * dims)[:dims] for _ in range(2))
    else:
        names = ", ".join(str(n) for n in lengths[:-1]) + f" or {lengths[-1]}"
        raise ValueError(f"{who}: padding must be an int or a tuple of {names} ints, got {padding!r}")
    if any(isinstance(p, bool) or not isinstance(p, numbers.Integral) or p < 0 for p in pads):
        raise ValueError(f"{who}: padding must be non-negative ints, got {padding!r}")
    if pad_mode != "pad" and any(pads):
        raise ValueError(f"{who}: padding must be 0 unless pad_mode is 'pad', got padding={padding!r} "
                         f"with pad_mode={pad_mode!r}")
    return tuple(int(p) for p in pads)


def padding4(padding, pad_mode, who):
    """MindSpore's 2-d padding (int, (top/bottom, left/right) or (top, bottom, left, right))."""
    return window_padding(padding, pad_mode, who, 2)


def make_param(init, shape, dtype, name, requires_grad=True):
    """A Parameter of `shape` filled by `init` (an initializer, its name, a number or a Tensor)."""
    return Parameter(initializer(init, shape, dtype), name=name, requires_grad=requires_grad)
