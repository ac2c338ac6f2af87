"""Padding layers (MindSpore's nn.Pad, ConstantPad1d/2d/3d, ZeroPad2d, ReflectionPad1d/2d/3d,
ReplicationPad1d/2d/3d) and small shape/activation layers (Unflatten, ChannelShuffle, Roll,
Threshold, FastGelu, Softmax2d), each a thin Cell over ops."""
from mycel import ops
from mycel.nn.cell import Cell
from mycel.ops import function_more as _more
from mycel.ops.primitive import constexpr

_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "edge": "edge",
          "symmetric": "symmetric"}


def _symmetric_pad(x, pairs):
    """Mirror padding that repeats the edge element (NumPy's 'symmetric'), dimension by dimension."""
    for d, (before, after) in enumerate(pairs):
        n = x.shape[d]
        if before > n or after > n:
            raise ValueError(f"Pad: SYMMETRIC padding ({before}, {after}) is larger than dimension {d} "
                             f"of size {n}")
        parts = []
        if before:
            parts.append(_more.flip(_more.narrow(x, d, 0, before), (d,)))
        parts.append(x)
        if after:
            parts.append(_more.flip(_more.narrow(x, d, n - after, after), (d,)))
        if len(parts) > 1:
            x = ops.concat(parts, d)
    return x


@constexpr
def _all_pairs(ndim, pairs):
    """pairs preceded by (0, 0) for the leading dimensions."""
    if len(pairs) > ndim:
        raise ValueError(f"Pad: {len(pairs)} padding pairs for a {ndim}-d input")
    return ((0, 0),) * (ndim - len(pairs)) + tuple(pairs)


@constexpr
def _flat(pairs):
    return tuple(v for pair in pairs for v in pair)


def _pad(x, pairs, mode, value):
    """x padded by pairs ((before, after) for each dimension, the leading ones (0, 0))."""
    full = _all_pairs(x.ndim, pairs)
    if mode == "symmetric":
        return _symmetric_pad(x, full)
    return ops.pad(x, _flat(full), mode, value)


def _torch_pairs(who, padding, ndim):
    """PyTorch's padding (an int, or (left, right[, top, bottom[, front, back]])) as (before,
    after) pairs for the last ndim dimensions, first dimension first."""
    if isinstance(padding, int):
        flat = (padding,) * (2 * ndim)
    else:
        flat = tuple(padding)
    if len(flat) != 2 * ndim or any(not isinstance(v, int) or v < 0 for v in flat):
        raise ValueError(f"{who}: padding must be an int or {2 * ndim} ints >= 0, got {padding!r}")
    return [tuple(flat[i:i + 2]) for i in range(0, len(flat), 2)][::-1]


class _TorchPad(Cell):
    _ndim, _mode = 1, "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.pairs = tuple(_torch_pairs(type(self).__name__, padding, self._ndim))
        self.value = float(value)

    def construct(self, x):
        return _pad(x, self.pairs, self._mode, self.value)


class ConstantPad1d(_TorchPad):
    """Pads the last dimension with value: padding int or (left, right)."""
    _ndim = 1


class ConstantPad2d(_TorchPad):
    """Pads the last two dimensions with value: padding int or (left, right, top, bottom)."""
    _ndim = 2


class ConstantPad3d(_TorchPad):
    """Pads the last three dimensions with value: (left, right, top, bottom, front, back)."""
    _ndim = 3


class ZeroPad2d(_TorchPad):
    """Pads the last two dimensions with zeros."""
    _ndim = 2

    def __init__(self, padding):
        super().__init__(padding, 0.0)


def _mirror(name, ndim, mode, doc):
    def __init__(self, padding):
        _TorchPad.__init__(self, padding, 0.0)
    return type(name, (_TorchPad,), {"_ndim": ndim, "_mode": mode, "__init__": __init__, "__doc__": doc})


ReflectionPad1d = _mirror("ReflectionPad1d", 1, "reflect", "Reflects the last dimension (edge not repeated).")
ReflectionPad2d = _mirror("ReflectionPad2d", 2, "reflect", "Reflects the last two dimensions.")
ReflectionPad3d = _mirror("ReflectionPad3d", 3, "reflect", "Reflects the last three dimensions.")
ReplicationPad1d = _mirror("ReplicationPad1d", 1, "edge", "Repeats the edge of the last dimension.")
ReplicationPad2d = _mirror("ReplicationPad2d", 2, "edge", "Repeats the edges of the last two dimensions.")
ReplicationPad3d = _mirror("ReplicationPad3d", 3, "edge", "Repeats the edges of the last three dimensions.")


class Pad(Cell):
    """MindSpore's nn.Pad(paddings, mode="CONSTANT"): paddings ((before, after) per dimension,
    first dimension first; fewer pairs pad the last ones); mode CONSTANT (zeros), REFLECT
    or SYMMETRIC (the edge repeated)."""

    def __init__(self, paddings, mode="CONSTANT"):
        super().__init__()
        m = mode.lower() if isinstance(mode, str) else mode
        if m not in ("constant", "reflect", "symmetric"):
            raise ValueError(f"Pad: mode must be 'CONSTANT', 'REFLECT' or 'SYMMETRIC', got {mode!r}")
        pairs = tuple(tuple(p) for p in paddings)
        if any(len(p) != 2 or any(not isinstance(v, int) or v < 0 for v in p) for p in pairs):
            raise ValueError(f"Pad: paddings must be (before, after) pairs of ints >= 0, got {paddings!r}")
        self.paddings, self.mode = pairs, m

    def construct(self, x):
        return _pad(x, self.paddings, self.mode, 0.0)


@constexpr
def _unflattened(shape, axis, size):
    d = axis % len(shape)
    if _prod(size) != shape[d]:
        raise ValueError(f"Unflatten: dimension {axis} of size {shape[d]} cannot become {size}")
    return tuple(shape[:d]) + tuple(size) + tuple(shape[d + 1:])


def _prod(values):
    out = 1
    for v in values:
        out *= v
    return out


class Unflatten(Cell):
    """Dimension axis split into unflattened_size."""

    def __init__(self, axis, unflattened_size):
        super().__init__()
        self.axis, self.size = axis, tuple(unflattened_size)

    def construct(self, x):
        return x.reshape(_unflattened(x.shape, self.axis, self.size))


class ChannelShuffle(Cell):
    """Channels regrouped across `groups` (ShuffleNet)."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def construct(self, x):
        return _more.channel_shuffle(x, self.groups)


class Roll(Cell):
    """Elements shifted along axis, wrapping around."""

    def __init__(self, shift, axis):
        super().__init__()
        self.shift, self.axis = shift, axis

    def construct(self, x):
        return _more.roll(x, self.shift, self.axis)


class Threshold(Cell):
    """x where x > threshold, else value."""

    def __init__(self, threshold, value):
        super().__init__()
        self.threshold, self.value = threshold, value

    def construct(self, x):
        return _more.threshold(x, self.threshold, self.value)


class FastGelu(Cell):
    """x * sigmoid(1.702 x)."""

    def construct(self, x):
        return _more.fast_gelu(x)


class Softmax2d(Cell):
    """softmax over the channels of (C, H, W) or (N, C, H, W) input."""

    def construct(self, x):
        return ops.softmax(x, -3)


__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad2d", "ReflectionPad1d",
           "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "Pad", "Unflatten", "ChannelShuffle", "Roll", "Threshold", "FastGelu",
           "Softmax2d"]
