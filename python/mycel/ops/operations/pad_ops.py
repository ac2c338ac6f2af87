"""MindSpore's PadV3: constant, reflect, edge or circular padding of the last dims, negative
paddings cropping. Each padded axis is one gather of a constant index table (so the gradient is
the registry's); constant padding selects the value where the table points outside."""
import numpy as np

from mycel import _mycel
from mycel.common.tensor import Tensor
from mycel.ops.operations.compat_ops import _Composite
from mycel.ops.primitive import constexpr

_ops = _mycel.ops

_MODES = ("constant", "reflect", "edge", "circular")


def _positions(n, before, after, mode):
    """Source index per output position along an axis of size n (-1: outside, constant mode).
    Negative amounts crop first; the padding then wraps or reflects within what is left (what
    MindSpore's kernel computes: circular (1, -1) of [a, b, c] is [b, a, b])."""
    lo, hi = max(-before, 0), n - max(-after, 0)
    pos = _padded(hi - lo, max(before, 0), max(after, 0), mode)
    return np.where(pos >= 0, pos + lo, -1)


def _padded(n, before, after, mode):
    pos = np.arange(-before, n + after)
    if mode == "constant":
        return np.where((pos >= 0) & (pos < n), pos, -1)
    if mode == "edge":
        return np.clip(pos, 0, n - 1)
    if mode == "circular":
        return np.mod(pos, n)
    period = 2 * (n - 1)  # reflect without repeating the edge
    if n == 1:
        return np.zeros_like(pos)
    folded = np.mod(pos, period)
    return np.where(folded < n, folded, period - folded)


def _pairs(paddings, ndim, contiguous):
    """(before, after) per dim, first dim first, from MindSpore's list (last dim first)."""
    p = [int(v) for v in np.asarray(paddings).reshape(-1)]
    if len(p) % 2 or len(p) // 2 > ndim:
        raise ValueError(f"PadV3: 'paddings' must hold pairs for at most {ndim} dims, got {len(p)} values")
    k = len(p) // 2
    pairs = [(p[2 * i], p[2 * i + 1]) for i in range(k)] if contiguous else [(p[i], p[k + i]) for i in range(k)]
    return [(0, 0)] * (ndim - k) + pairs[::-1]


@constexpr
def _plan(shape, paddings, contiguous, mode):
    """Per padded axis: (axis, source index table, mask of the positions inside or None)."""
    plan = []
    shape = list(shape)
    for axis, (before, after) in enumerate(_pairs(paddings, len(shape), contiguous)):
        if before == 0 and after == 0:
            continue
        n = shape[axis]
        kept = n - max(-before, 0) - max(-after, 0)
        if kept <= 0 or (mode == "reflect" and max(before, after) >= kept):
            raise ValueError(f"PadV3: paddings ({before}, {after}) do not fit dim {axis} of size {n} in mode {mode!r}")
        pos = _positions(n, before, after, mode)
        mask_shape = [1] * len(shape)
        mask_shape[axis] = len(pos)
        inside = Tensor((pos >= 0).reshape(mask_shape)) if (pos < 0).any() else None
        plan.append((axis, Tensor(np.maximum(pos, 0).astype(np.int64)), inside))
        shape[axis] = len(pos)
    return tuple(plan)


@constexpr
def _fill_value(value, dtype):
    return Tensor(np.array(value, np.dtype(dtype.name)))


class PadV3(_Composite):
    """x padded (or cropped, for a negative amount) on its last len(paddings) // 2 dims."""

    def __init__(self, mode="constant", paddings_contiguous=True):
        if mode not in _MODES:
            raise ValueError(f"PadV3: 'mode' must be one of {_MODES}, got {mode!r}")
        if not isinstance(paddings_contiguous, bool):
            raise TypeError(f"PadV3: 'paddings_contiguous' must be a bool, got {type(paddings_contiguous).__name__}")
        super().__init__(mode=mode, paddings_contiguous=paddings_contiguous)

    def __call__(self, x, paddings, constant_value=None):
        if isinstance(paddings, Tensor):  # eager: its values size the output
            paddings = tuple(int(v) for v in paddings.asnumpy().reshape(-1))
        return self._call(x, paddings, constant_value)

    def _call(self, x, paddings, constant_value=None):
        if isinstance(paddings, Tensor):
            raise TypeError("PadV3: in graph mode 'paddings' must be a tuple (its values size the output)")
        if self.mode != "constant" and constant_value is not None:
            raise ValueError("PadV3: 'constant_value' is only for mode 'constant'")
        out = x
        for axis, index, inside in _plan(x.shape, paddings, self.paddings_contiguous, self.mode):
            taken = _ops.gather(out, index, axis)
            if inside is not None:
                if constant_value is None:
                    fill = _fill_value(0, x.dtype)
                elif isinstance(constant_value, Tensor):
                    fill = _ops.cast(constant_value, x.dtype)
                else:
                    fill = _fill_value(constant_value, x.dtype)
                taken = _ops.select(_ops.broadcast_to(inside, taken.shape), taken, _ops.broadcast_to(fill, taken.shape))
            out = taken
        return out


COMPOSITES = ["PadV3"]
