"""MindSpore's PadV3: constant, reflect, edge or circular padding of the last dims, negative
paddings cropping. Each padded axis is one gather of a constant index table (so the gradient is
the registry's); constant padding selects the value where the table points outside."""
import numpy as np

from mycel import _mycel
from mycel.common.tensor import Tensor
from mycel.ops.operations.compat_ops import _Composite

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


def _pairs(paddings, ndim, contiguous, who):
    """(before, after) per dim, first dim first, from MindSpore's list (last dim first)."""
    if isinstance(paddings, Tensor):
        paddings = paddings.asnumpy()  # its values size the output: read eagerly
    p = [int(v) for v in np.asarray(paddings).reshape(-1)]
    if len(p) % 2 or len(p) // 2 > ndim:
        raise ValueError(f"{who}: 'paddings' must hold pairs for at most {ndim} dims, got {len(p)} values")
    k = len(p) // 2
    pairs = [(p[2 * i], p[2 * i + 1]) for i in range(k)] if contiguous else [(p[i], p[k + i]) for i in range(k)]
    return [(0, 0)] * (ndim - k) + pairs[::-1]


class PadV3(_Composite):
    """x padded (or cropped, for a negative amount) on its last len(paddings) // 2 dims."""

    def __init__(self, mode="constant", paddings_contiguous=True):
        if mode not in _MODES:
            raise ValueError(f"PadV3: 'mode' must be one of {_MODES}, got {mode!r}")
        if not isinstance(paddings_contiguous, bool):
            raise TypeError(f"PadV3: 'paddings_contiguous' must be a bool, got {type(paddings_contiguous).__name__}")
        super().__init__(mode=mode, paddings_contiguous=paddings_contiguous)

    def _call(self, x, paddings, constant_value=None):
        if self.mode != "constant" and constant_value is not None:
            raise ValueError(f"PadV3: 'constant_value' is for mode 'constant', not {self.mode!r}")
        out = x
        for axis, (before, after) in enumerate(_pairs(paddings, x.ndim, self.paddings_contiguous, "PadV3")):
            if before == 0 and after == 0:
                continue
            n = out.shape[axis]
            kept = n - max(-before, 0) - max(-after, 0)
            if kept <= 0 or (self.mode == "reflect" and max(before, after) >= kept):
                raise ValueError(f"PadV3: paddings ({before}, {after}) do not fit dim {axis} of size {n} in mode "
                                 f"{self.mode!r}")
            pos = _positions(n, before, after, self.mode)
            taken = _ops.gather(out, Tensor(np.maximum(pos, 0).astype(np.int64)), axis)
            if self.mode == "constant" and (pos < 0).any():
                shape = [1] * out.ndim
                shape[axis] = len(pos)
                inside = _ops.broadcast_to(Tensor((pos >= 0).reshape(shape)), tuple(taken.shape))
                value = 0 if constant_value is None else constant_value
                fill = _ops.cast(_ops.broadcast_to(_ops.cast(value, x.dtype) if isinstance(value, Tensor)
                                                   else Tensor(np.array(value, np.dtype(x.dtype.name))),
                                                   tuple(taken.shape)), x.dtype)
                taken = _ops.select(inside, taken, fill)
            out = taken
        return out


COMPOSITES = ["PadV3"]
