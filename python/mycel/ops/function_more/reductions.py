"""Reductions, scans and searches of MindSpore 2.x's functional ops."""
import math

import numpy as np

import mycel.ops as _P  # the Python-level ops (masked_fill, assign, ...); this package loads last
from mycel import _mycel
from mycel.common.dtype import (float16, bfloat16, float32, float64, int32, int64, bool_, complex64,
                                complex128)
from mycel.common.parameter import Parameter as _Parameter
from mycel.common.tensor import Tensor
from mycel.ops import tensor_composites as _tc
from mycel.ops.primitive import constexpr
from mycel.ops.function_more._base import _axis, _dims_from, _float_like, _FLOATS, _COMPLEX

_ops = _mycel.ops

# ---- reductions ----------------------------------------------------------------------------------
def nansum(input, axis=None, keepdims=False, *, dtype=None):
    """The sum with NaNs counted as 0."""
    x = _ops.select(_ops.isnan(input), _ops.zeros_like(input), input)
    if dtype is not None:
        x = _ops.cast(x, dtype)
    axes = () if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    return _ops.sum(x, axes, keepdims)


def aminmax(input, *, axis=0, keepdims=False):
    """(min, max) along axis."""
    return _ops.min(input, (axis,), keepdims), _ops.max(input, (axis,), keepdims)


def median(input, axis=-1, keepdims=False):
    """(values, indices) of the median along axis: the lower middle for an even count."""
    d = _axis(input, axis)
    n = input.shape[d]
    values, order = _ops.sort(input, d)
    k = (n - 1) // 2
    v, i = _tc.narrow(values, d, k, 1), _tc.narrow(order, d, k, 1)
    if not keepdims:
        v, i = _ops.squeeze(v, (d,)), _ops.squeeze(i, (d,))
    return v, i


def msort(input):
    """input sorted along its first dimension."""
    return _ops.sort(input, 0)[0]


@constexpr
def _scan_shifts(n):
    """1, 2, 4, ... below n: the steps of a log-step scan."""
    out, s = [], 1
    while s < n:
        out.append(s)
        s *= 2
    return tuple(out)


def _cumulative_extreme(who, x, axis, pick_later):
    """(values, indices) of a running max or min along axis: a log-step scan (Hillis-Steele) of
    (value, index) pairs, the later element winning ties (PyTorch's and MindSpore's rule)."""
    d = _axis(x, axis)
    n = x.shape[d]
    shape = tuple(n if k == d else 1 for k in range(x.ndim))
    v = x
    i = _ops.broadcast_to(_ops.arange(n, dtype=int64).reshape(shape), x.shape)
    for s in _scan_shifts(n):
        ev = _ops.concat((_P.full_like(_tc.narrow(v, d, 0, s), 0), _tc.narrow(v, d, 0, n - s)), d)
        ei = _ops.concat((_tc.narrow(i, d, 0, s), _tc.narrow(i, d, 0, n - s)), d)
        has_earlier = _ops.broadcast_to(_ops.greater_equal(_ops.arange(n, dtype=int64), s).reshape(shape), x.shape)
        later_wins = _ops.logical_or(_ops.logical_not(has_earlier), pick_later(v, ev))
        v = _ops.select(later_wins, v, ev)
        i = _ops.select(later_wins, i, ei)
    return v, i


def cummax(input, axis):
    """(values, indices) of the running maximum along axis."""
    return _cumulative_extreme("cummax", input, axis, _ops.greater_equal)


def cummin(input, axis):
    """(values, indices) of the running minimum along axis."""
    return _cumulative_extreme("cummin", input, axis, _ops.less_equal)


def logcumsumexp(input, axis):
    """log(cumsum(exp(input))) along axis, shifted by the maximum so it does not overflow."""
    m = _ops.stop_gradient(_ops.max(input, (_axis(input, axis),), True))
    return _ops.log(_ops.cumsum(_ops.exp(input - m), axis)) + m


def count_nonzero(x, axis=(), keep_dims=False, dtype=int32):
    """The number of nonzero elements along axis (all of them for ())."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return _ops.cast(_ops.sum(_ops.cast(_ops.not_equal(x, 0), int32), axes, keep_dims), dtype)


def histc(input, bins=100, min=0., max=0.):  # noqa: A002 (MindSpore's argument names)
    """Counts of input in `bins` equal bins over [min, max] (the data's range when both are 0);
    values outside are ignored. Not differentiable."""
    x = _ops.stop_gradient(_ops.cast(input, float32)).reshape((-1,))
    lo, hi = float(min), float(max)
    if lo == hi == 0.0:
        lo, hi = float(_ops.min(x).asnumpy()), float(_ops.max(x).asnumpy())
    if hi == lo:
        lo, hi = lo - 1.0, hi + 1.0
    inside = _ops.logical_and(_ops.greater_equal(x, lo), _ops.less_equal(x, hi))
    idx = _ops.cast(_ops.floor((x - lo) * (bins / (hi - lo))), int32)
    idx = _ops.clip_by_value(idx, 0, bins - 1)
    hits = _ops.one_hot(idx, bins) * _ops.expand_dims(_ops.cast(inside, float32), 1)
    return _ops.cast(_ops.sum(hits, (0,)), input.dtype)


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None):
    """For each value, the index where inserting it keeps sorted_sequence's last dimension sorted:
    before equal elements (side 'left'), or after them (right=True or side 'right')."""
    if side is not None:
        if side not in ("left", "right"):
            raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
        right = side == "right"
    seq = sorted_sequence if sorter is None else _ops.gather_elements(sorted_sequence, sorter, dim=-1)
    s = _ops.expand_dims(seq, -2)                  # (..., 1, n)
    v = _ops.expand_dims(values, -1)               # (..., m, 1)
    before = _ops.less_equal(s, v) if right else _ops.less(s, v)
    return _ops.cast(_ops.sum(_ops.cast(before, int32), (-1,)), int32 if out_int32 else int64)


def nanmean(input, axis=None, keepdims=False, *, dtype=None):
    """The mean ignoring NaNs."""
    valid = _ops.logical_not(_ops.isnan(input))
    total = nansum(input, axis, keepdims, dtype=dtype)
    axes = () if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    count = _ops.sum(_ops.cast(valid, total.dtype), axes, keepdims)
    return total / count


def ptp(input, axis=None, keepdims=False):
    """max - min (over axis, or all elements)."""
    axes = () if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    return _ops.max(input, axes, keepdims) - _ops.min(input, axes, keepdims)


@constexpr
def _filler(kind, dtype):
    """The empty segment's value ("lowest", "highest" or "one") as a 0-d tensor of dtype, exactly
    (fill's float attribute would round an int64 or uint64 extreme)."""
    value = {"lowest": _lowest, "highest": _highest}[kind](dtype) if kind != "one" else 1
    return Tensor(np.array(value, dtype=np.dtype(dtype.name)))


def _segment_reduce(x, segment_ids, num_segments, reduce, empty, who):
    """out[s] = reduce over x's slices whose id is s (`empty` where none is): a (segments, N)
    membership mask, so memory grows with segments x N. An id >= num_segments is a
    RuntimeError, as in MindSpore's CPU kernel (negative ids are skipped)."""
    ids = segment_ids.reshape((-1,))
    if _ops.any(_ops.greater_equal(ids, num_segments)):
        raise RuntimeError(f"{who}: segment_ids values must be in [0, num_segments), found one >= num_segments")
    n = ids.shape[0]
    rows = x.reshape((n,) + _dims_from(x.shape, segment_ids.ndim))
    member = _ops.equal(_ops.expand_dims(_ops.arange(num_segments, dtype=ids.dtype), 1), _ops.expand_dims(ids, 0))
    member = member.reshape((num_segments, n) + (1,) * (rows.ndim - 1))
    filled = _ops.select(_ops.broadcast_to(member, (num_segments,) + tuple(rows.shape)),
                         _ops.broadcast_to(_ops.expand_dims(rows, 0), (num_segments,) + tuple(rows.shape)),
                         _ops.broadcast_to(_filler(empty, x.dtype), (num_segments,) + tuple(rows.shape)))
    return reduce(filled, (1,))


def _lowest(dtype):
    return float(np.finfo(np.dtype(dtype.name)).min) if dtype in _FLOATS else int(np.iinfo(np.dtype(dtype.name)).min)


def _highest(dtype):
    return float(np.finfo(np.dtype(dtype.name)).max) if dtype in _FLOATS else int(np.iinfo(np.dtype(dtype.name)).max)


def unsorted_segment_max(x, segment_ids, num_segments):
    """The maximum of each segment (the dtype's lowest value for an empty one, as MindSpore)."""
    return _segment_reduce(x, segment_ids, num_segments, _ops.max, "lowest", "unsorted_segment_max")


def unsorted_segment_min(x, segment_ids, num_segments):
    """The minimum of each segment (the dtype's highest value for an empty one)."""
    return _segment_reduce(x, segment_ids, num_segments, _ops.min, "highest", "unsorted_segment_min")


def unsorted_segment_prod(x, segment_ids, num_segments):
    """The product of each segment (1 for an empty one)."""
    return _segment_reduce(x, segment_ids, num_segments, _ops.prod, "one", "unsorted_segment_prod")

