"""MindSpore's reshuffles and small array ops over the registry ops (so they differentiate and
parse in graph mode): space/batch/depth reshuffles (NCHW, TensorFlow's orders), reverse_sequence,
combinations, unique_with_pad, histogram_fixed_width, invert_permutation, intopk, batch_dot,
nanmedian; bincount (its length depends on the data: eager)."""
import itertools

import numpy as np

from mycel import _mycel
from mycel.common.dtype import bool_, float32, int32, int64
from mycel.common.tensor import Tensor
from mycel.ops.primitive import constexpr

_ops = _mycel.ops


@constexpr
def _pairs(name, arg, v, m):
    """v as m (before, after) int pairs."""
    pairs = tuple(tuple(int(a) for a in p) for p in v)
    if len(pairs) != m or any(len(p) != 2 or min(p) < 0 for p in pairs):
        raise ValueError(f"{name}: {arg} must be {m} pairs of non-negative ints, got {v!r}")
    return pairs


@constexpr
def _blocks(name, block, m):
    b = (int(block),) * m if isinstance(block, int) else tuple(int(v) for v in block)
    if len(b) != m or min(b) < 1:
        raise ValueError(f"{name}: block_shape must be {m} ints >= 1, got {block!r}")
    return b


@constexpr
def _s2b_plan(shape, block_shape, paddings):
    """(flat paddings, split shape, permutation, result shape) of space_to_batch_nd."""
    m = len(shape) - 2
    if m < 1:
        raise ValueError(f"space_to_batch_nd: input must have rank >= 3 (N, C, spatial...), got {len(shape)}")
    b = _blocks("space_to_batch_nd", block_shape, m)
    pads = _pairs("space_to_batch_nd", "paddings", paddings, m)
    n, c = shape[0], shape[1]
    sizes = [shape[2 + d] + pads[d][0] + pads[d][1] for d in range(m)]
    for d in range(m):
        if sizes[d] % b[d]:
            raise ValueError(f"space_to_batch_nd: padded spatial dim {d} ({sizes[d]}) is not divisible by block {b[d]}")
    flat = (0, 0, 0, 0) + tuple(v for p in pads for v in p)
    split = (n, c) + tuple(v for d in range(m) for v in (sizes[d] // b[d], b[d]))
    perm = tuple(3 + 2 * d for d in range(m)) + (0, 1) + tuple(2 + 2 * d for d in range(m))
    out = (n * int(np.prod(b)), c) + tuple(sizes[d] // b[d] for d in range(m))
    return flat, any(flat), split, perm, out


def space_to_batch_nd(input_x, block_shape, paddings):
    """Pads the spatial dims (all after N, C) by `paddings`, splits each into blocks and moves the
    block offsets into the batch: (N, C, H, W) -> (N * b0 * b1, C, H' / b0, W' / b1)."""
    flat, padded, split, perm, out = _s2b_plan(tuple(input_x.shape), block_shape, paddings)
    x = _ops.pad(input_x, flat) if padded else input_x
    return _ops.reshape(_ops.transpose(_ops.reshape(x, split), perm), out)


@constexpr
def _b2s_plan(shape, block_shape, crops):
    """(split shape, permutation, full shape, slice begin, slice size) of batch_to_space_nd."""
    m = len(shape) - 2
    if m < 1:
        raise ValueError(f"batch_to_space_nd: input must have rank >= 3 (N, C, spatial...), got {len(shape)}")
    b = _blocks("batch_to_space_nd", block_shape, m)
    cr = _pairs("batch_to_space_nd", "crops", crops, m)
    total = int(np.prod(b))
    if shape[0] % total:
        raise ValueError(f"batch_to_space_nd: batch {shape[0]} is not divisible by the block product {total}")
    n, c = shape[0] // total, shape[1]
    sizes = shape[2:]
    split = b + (n, c) + tuple(sizes)
    perm = (m, m + 1) + tuple(v for d in range(m) for v in (m + 2 + d, d))
    full = tuple(sizes[d] * b[d] for d in range(m))
    for d in range(m):
        if cr[d][0] + cr[d][1] > full[d]:
            raise ValueError(f"batch_to_space_nd: crops {cr[d]} exceed spatial dim {d} ({full[d]})")
    begin = (0, 0) + tuple(cr[d][0] for d in range(m))
    size = (n, c) + tuple(full[d] - cr[d][0] - cr[d][1] for d in range(m))
    return split, perm, (n, c) + full, begin, size, any(v for p in cr for v in p)


def batch_to_space_nd(input_x, block_shape, crops):
    """The inverse of space_to_batch_nd: block offsets move from the batch back into the spatial
    dims, which are then cropped by `crops`."""
    split, perm, full, begin, size, cropped = _b2s_plan(tuple(input_x.shape), block_shape, crops)
    x = _ops.reshape(_ops.transpose(_ops.reshape(input_x, split), perm), full)
    return _ops.slice(x, begin, size) if cropped else x


def depth_to_space(x, block_size):
    """(N, C * b * b, H, W) -> (N, C, H * b, W * b), TensorFlow's depth order (NCHW)."""
    b = int(block_size)
    n, c, h, w = x.shape
    if b < 2 or c % (b * b):
        raise ValueError(f"DepthToSpace: block_size must be >= 2 and divide the channels as b*b, got {b} for {c}")
    y = _ops.transpose(_ops.reshape(x, (n, b, b, c // (b * b), h, w)), (0, 3, 4, 1, 5, 2))
    return _ops.reshape(y, (n, c // (b * b), h * b, w * b))


def space_to_depth(x, block_size):
    """(N, C, H, W) -> (N, C * b * b, H / b, W / b), the inverse of depth_to_space."""
    b = int(block_size)
    n, c, h, w = x.shape
    if b < 2 or h % b or w % b:
        raise ValueError(f"SpaceToDepth: block_size must be >= 2 and divide H and W, got {b} for {(h, w)}")
    y = _ops.transpose(_ops.reshape(x, (n, c, h // b, b, w // b, b)), (0, 3, 5, 1, 2, 4))
    return _ops.reshape(y, (n, c * b * b, h // b, w // b))


@constexpr
def _along(nd, axis, n):
    """The shape (1, .., n, .., 1) of rank nd with n at axis (a compile-time tuple in graph mode)."""
    return tuple(n if d == axis else 1 for d in range(nd))


def reverse_sequence(x, seq_lengths, seq_dim, batch_dim=0):
    """Reverses the first seq_lengths[i] elements along seq_dim of each slice i of batch_dim."""
    nd = x.ndim
    sd, bd = seq_dim % nd, batch_dim % nd
    if sd == bd:
        raise ValueError(f"reverse_sequence: seq_dim and batch_dim must differ, got {seq_dim} and {batch_dim}")
    t = x.shape[sd]
    pos = _ops.reshape(_ops.arange(0, t, 1, int64), _along(nd, sd, t))
    lengths = _ops.reshape(_ops.cast(seq_lengths, int64), _along(nd, bd, x.shape[bd]))
    idx = _ops.select(_ops.less(pos, lengths), lengths - 1 - pos, pos)
    return _ops.gather_elements(x, _ops.broadcast_to(idx, tuple(x.shape)), sd)


@constexpr
def _combination_index(n, r, with_replacement):
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(n), r))
    return Tensor(np.array(rows, np.int64).reshape(len(rows), r))


def combinations(input, r=2, with_replacement=False):
    """The r-length combinations of a 1-d tensor's elements, one per row (itertools' order)."""
    if input.ndim != 1:
        raise ValueError(f"combinations: input must be 1-d, got shape {tuple(input.shape)}")
    if not isinstance(r, int) or r < 0:
        raise ValueError(f"combinations: r must be a non-negative int, got {r!r}")
    idx = _combination_index(input.shape[0], r, bool(with_replacement))
    return _ops.gather(input, idx, 0)


def unique_with_pad(x, pad_num):
    """(y, idx): x's distinct values in order of first appearance padded to x's length with
    pad_num, and each element's position in y. Static shapes (an n x n comparison)."""
    if x.ndim != 1:
        raise ValueError(f"unique_with_pad: x must be 1-d, got shape {tuple(x.shape)}")
    n = x.shape[0]
    same = _ops.equal(_ops.expand_dims(x, 1), _ops.expand_dims(x, 0))  # same[i, j]: x[i] == x[j]
    earlier = _ops.tril(_ops.ones((n, n), int32), -1)  # j < i
    seen = _ops.greater(_ops.sum(_ops.cast(same, int32) * earlier, (1,)), 0)
    first = _ops.logical_not(seen)
    rank = _ops.cumsum(_ops.cast(first, int32), 0) - 1  # y position of each first occurrence
    owner = _ops.argmax(_ops.cast(same, int32), 1)  # each element's first occurrence
    idx = _ops.gather(rank, owner, 0)
    slot = _ops.select(first, rank, _ops.fill(int32, (n,), n))  # later copies go to a spare slot
    y = _ops.fill(x.dtype, (n + 1,), 0) + _ops.cast(pad_num if isinstance(pad_num, Tensor) else
                                                   Tensor(np.array(pad_num)), x.dtype)
    y = _ops.tensor_scatter_elements(y, _ops.cast(slot, int64), x, 0)
    return _ops.slice(y, (0,), (n,)), idx


def histogram_fixed_width(x, range, nbins=100, dtype=int32):  # noqa: A002  (MindSpore's name)
    """Counts of x in nbins equal bins over [range[0], range[1]); values below or above go to
    the first or last bin (TensorFlow's histogram_fixed_width)."""
    if not isinstance(nbins, int) or nbins < 1:
        raise ValueError(f"histogram_fixed_width: nbins must be an int >= 1, got {nbins!r}")
    if isinstance(range, (tuple, list)):
        lo, hi = float(range[0]), float(range[1])
    else:  # a 2-element tensor
        lo = _ops.cast(_ops.gather(range, Tensor(np.array(0)), 0), float32)
        hi = _ops.cast(_ops.gather(range, Tensor(np.array(1)), 0), float32)
    v = _ops.cast(_ops.reshape(x, (-1,)), float32)
    b = _ops.floor((v - lo) / (hi - lo) * float(nbins))
    b = _ops.cast(_ops.clip_by_value(b, 0.0, float(nbins - 1)), int64)
    counts = _ops.tensor_scatter_add(_ops.zeros((nbins,), int64), _ops.expand_dims(b, -1),
                                     _ops.ones_like(b))
    return _ops.cast(counts, dtype)


def invert_permutation(input_x):
    """y with y[x[i]] = i (a tuple for a tuple input, as MindSpore's InvertPermutation)."""
    if isinstance(input_x, (tuple, list)):
        perm = [int(v) for v in input_x]
        if sorted(perm) != list(range(len(perm))):
            raise ValueError(f"invert_permutation: {input_x!r} is not a permutation of 0..{len(perm) - 1}")
        out = [0] * len(perm)
        for i, p in enumerate(perm):
            out[p] = i
        return tuple(out)
    n = input_x.shape[0]
    pos = _ops.arange(0, n, 1, input_x.dtype)
    return _ops.tensor_scatter_elements(_ops.zeros_like(input_x), input_x, pos, 0)


def intopk(x1, x2, k):
    """Whether each row's target class x2[i] is among the k largest of x1[i] (ties count in, a
    non-finite target is False: TensorFlow's in_top_k)."""
    target = _ops.gather_elements(x1, _ops.expand_dims(_ops.cast(x2, int64), 1), 1)
    above = _ops.sum(_ops.cast(_ops.greater(x1, target), int32), (1,))
    return _ops.logical_and(_ops.less(above, k), _ops.reshape(_ops.isfinite(target), (-1,)))


def batch_dot(x1, x2, axes=None):
    """Per-batch dot products contracting axes[0] of x1 with axes[1] of x2 (keras' batch_dot;
    default: the last axis of x1 with x2's second-to-last, or its last when x2 is 2-d)."""
    if x1.ndim < 2 or x2.ndim < 2:
        raise ValueError(f"batch_dot: inputs must have rank >= 2, got {x1.ndim} and {x2.ndim}")
    if axes is None:
        axes = (x1.ndim - 1, x2.ndim - 1 if x2.ndim == 2 else x2.ndim - 2)
    elif isinstance(axes, int):
        axes = (axes, axes)
    a1, a2 = axes[0] % x1.ndim, axes[1] % x2.ndim
    if a1 == 0 or a2 == 0:
        raise ValueError(f"batch_dot: axes {tuple(axes)} must not be the batch axis 0")
    if x1.shape[0] != x2.shape[0] or x1.shape[a1] != x2.shape[a2]:
        raise ValueError(f"batch_dot: shapes {tuple(x1.shape)} and {tuple(x2.shape)} do not match on the "
                         f"batch or the contracted axes {(a1, a2)}")
    bsz, k = x1.shape[0], x1.shape[a1]
    rest1 = tuple(x1.shape[d] for d in range(1, x1.ndim) if d != a1)
    rest2 = tuple(x2.shape[d] for d in range(1, x2.ndim) if d != a2)
    p1 = (0,) + tuple(d for d in range(1, x1.ndim) if d != a1) + (a1,)
    p2 = (0, a2) + tuple(d for d in range(1, x2.ndim) if d != a2)
    m = 1
    for v in rest1:
        m *= v
    n = 1
    for v in rest2:
        n *= v
    y = _ops.matmul(_ops.reshape(_ops.transpose(x1, p1), (bsz, m, k)),
                    _ops.reshape(_ops.transpose(x2, p2), (bsz, k, n)))
    out = rest1 + rest2
    return _ops.reshape(y, (bsz,) + (out if out else (1,)))


def nanmedian(input, axis=-1, keepdims=False):
    """(values, indices): the lower median of the non-NaN values along axis and its position
    (NaN and index 0 where a line is all NaN)."""
    nan = _ops.isnan(input)
    big = _ops.select(nan, _ops.fill(input.dtype, tuple(input.shape), float("inf")), input)
    # Sort keys: the finite values themselves, infinities past them, NaNs past everything.
    span = _ops.max(_ops.abs(_ops.select(_ops.isfinite(big), big, _ops.zeros_like(big))))
    key = _ops.select(nan, _ops.zeros_like(big) + (span + 1.0) * 4.0 + 1.0, big)
    key = _ops.select(_ops.logical_and(_ops.isinf(big), _ops.logical_not(nan)),
                      _ops.sign(big) * ((span + 1.0) * 2.0 + 1.0), key)
    _, idx = _ops.sort(key, axis)
    valid = _ops.sum(_ops.cast(_ops.logical_not(nan), int64), (axis,), True)
    k = _ops.maximum((valid - 1) // 2, _ops.zeros_like(valid))
    pos = _ops.gather_elements(idx, k, axis % input.ndim)
    val = _ops.gather_elements(input, pos, axis % input.ndim)
    val = _ops.select(_ops.equal(valid, 0), _ops.fill(input.dtype, tuple(val.shape), float("nan")), val)
    if not keepdims:
        val, pos = _ops.squeeze(val, (axis % input.ndim,)), _ops.squeeze(pos, (axis % input.ndim,))
    return val, pos


def bincount(input, weights=None, minlength=0):
    """Counts (or summed weights) of each non-negative integer in a 1-d input; the length is
    max(input) + 1 or minlength (eager: the length depends on the data)."""
    if input.ndim != 1:
        raise ValueError(f"bincount: input must be 1-d, got shape {tuple(input.shape)}")
    vals = input.asnumpy()
    if vals.size and vals.min() < 0:
        raise ValueError("bincount: input must be non-negative")
    n = max(int(vals.max()) + 1 if vals.size else 0, int(minlength))
    w = _ops.ones((input.shape[0],), int64) if weights is None else weights
    return _ops.tensor_scatter_add(_ops.zeros((n,), w.dtype), _ops.expand_dims(_ops.cast(input, int64), -1), w)


def _m_bincount(self, weights=None, minlength=0):
    return bincount(self, weights, minlength)


def _m_nanmedian(self, axis=-1, keepdims=False):
    return nanmedian(self, axis, keepdims)


def _m_reverse_sequence(self, seq_lengths, seq_dim, batch_dim=0):
    return reverse_sequence(self, seq_lengths, seq_dim, batch_dim)


def _m_unique_with_pad(self, pad_num):
    return unique_with_pad(self, pad_num)


TENSOR_METHODS = {"bincount": _m_bincount, "nanmedian": _m_nanmedian,
                  "reverse_sequence": _m_reverse_sequence, "unique_with_pad": _m_unique_with_pad}

__all__ = ["space_to_batch_nd", "batch_to_space_nd", "reverse_sequence", "combinations",
           "unique_with_pad", "histogram_fixed_width", "invert_permutation", "intopk", "batch_dot",
           "nanmedian", "bincount"]
