"""Window geometry of MindSpore's pooling options that the registry's pooling ops do not take
directly (ceil_mode, divisor_override, count_include_pad with them): evaluated in Python on
shapes, so in graph mode at compile time (mycel.common is not parsed)."""
import numpy as np

from mycel.common.tensor import Tensor


def _out_len(n, k, s, lo, hi, ceil_mode):
    span = n + lo + hi - k
    out = -(-span // s) + 1 if ceil_mode else span // s + 1
    if ceil_mode and (out - 1) * s >= n + lo:  # the last window must start inside input or left pad
        out -= 1
    return max(out, 0)


def ceil_pads(shape, kernel, stride, pads, ceil_mode):
    """(top, bottom, left, right) padding that gives the ceil_mode output size with plain floor
    arithmetic: the explicit padding plus the overhang at the bottom and the right."""
    (kh, kw), (sh, sw), (t, b, l, r) = kernel, stride, pads
    h, w = shape[-2], shape[-1]
    oh, ow = _out_len(h, kh, sh, t, b, ceil_mode), _out_len(w, kw, sw, l, r, ceil_mode)
    extra_h = max((oh - 1) * sh + kh - (h + t + b), 0)
    extra_w = max((ow - 1) * sw + kw - (w + l + r), 0)
    return (t, b + extra_h, l, r + extra_w)


def window_counts(shape, kernel, stride, pads, total_pads, count_include_pad):
    """(OH, OW) float array: how many positions of each window lie in the input (and in the
    explicit padding when count_include_pad), the divisor of an average pool."""
    (kh, kw), (sh, sw), (t, _, l, _) = kernel, stride, pads
    h, w = shape[-2], shape[-1]
    tt, tb, tl, tr = total_pads
    oh = (h + tt + tb - kh) // sh + 1
    ow = (w + tl + tr - kw) // sw + 1
    lo_h, hi_h = (-t, h + pads[1]) if count_include_pad else (0, h)
    lo_w, hi_w = (-l, w + pads[3]) if count_include_pad else (0, w)
    rows = np.array([max(0, min(i * sh - tt + kh, hi_h) - max(i * sh - tt, lo_h)) for i in range(oh)])
    cols = np.array([max(0, min(j * sw - tl + kw, hi_w) - max(j * sw - tl, lo_w)) for j in range(ow)])
    return np.maximum(np.outer(rows, cols), 1).astype(np.float32)


def flat_pads(ndim, pads):
    """ops.pad's flat (before, after) per dimension for (top, bottom, left, right) on the last two."""
    t, b, l, r = pads
    return (0, 0) * (ndim - 2) + (t, b, l, r)


def window_origins(shape, kernel, stride, total_pads):
    """(OH, OW, rows, cols): the output size of a pool over the padded input and, per output row
    and column, the input row/column where its window starts (negative inside the padding), as
    int64 Tensors of shape (OH, 1) and (1, OW)."""
    (kh, kw), (sh, sw), (t, b, l, r) = kernel, stride, total_pads
    h, w = shape[-2], shape[-1]
    oh = (h + t + b - kh) // sh + 1
    ow = (w + l + r - kw) // sw + 1
    rows = (np.arange(oh) * sh - t).astype(np.int64).reshape(oh, 1)
    cols = (np.arange(ow) * sw - l).astype(np.int64).reshape(1, ow)
    return oh, ow, Tensor(rows), Tensor(cols)
