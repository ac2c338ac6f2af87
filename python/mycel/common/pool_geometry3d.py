"""Window geometry of MindSpore's 3-d pooling options that max_pool3d/avg_pool3d do not take
directly (ceil_mode, divisor_override): evaluated in Python on shapes, so in graph mode at compile
time (mycel.common is not parsed). Paddings are (head, tail, top, bottom, left, right)."""
import numpy as np

from mycel.common.tensor import Tensor


def _out_len(n, k, s, lo, hi, ceil_mode):
    span = n + lo + hi - k
    out = -(-span // s) + 1 if ceil_mode else span // s + 1
    if ceil_mode and (out - 1) * s >= n + lo:  # the last window must start inside input or head pad
        out -= 1
    return max(out, 0)


def ceil_pads3(shape, kernel, stride, pads, ceil_mode):
    """The 6 paddings that give the ceil_mode output size with floor arithmetic: the explicit
    padding plus the overhang after each dim."""
    out = list(pads)
    for i in range(3):
        n = shape[-3 + i]
        o = _out_len(n, kernel[i], stride[i], pads[2 * i], pads[2 * i + 1], ceil_mode)
        out[2 * i + 1] += max((o - 1) * stride[i] + kernel[i] - (n + pads[2 * i] + pads[2 * i + 1]), 0)
    return tuple(out)


def window_counts3(shape, kernel, stride, pads, total, include_pad):
    """(OD, OH, OW) float32 array: positions of each window inside the input (and the explicit
    padding when include_pad), the divisor of an average pool."""
    axes = []
    for i in range(3):
        n, k, s = shape[-3 + i], kernel[i], stride[i]
        lo_pad, t0, t1 = pads[2 * i], total[2 * i], total[2 * i + 1]
        o = (n + t0 + t1 - k) // s + 1
        lo, hi = (-lo_pad, n + pads[2 * i + 1]) if include_pad else (0, n)
        axes.append(np.array([max(0, min(j * s - t0 + k, hi) - max(j * s - t0, lo)) for j in range(o)]))
    counts = axes[0][:, None, None] * axes[1][None, :, None] * axes[2][None, None, :]
    return np.maximum(counts, 1).astype(np.float32)


def flat_pads3(ndim, pads):
    """ops.pad's flat (before, after) per dimension for 6 paddings on the last three dims."""
    return (0, 0) * (ndim - 3) + tuple(pads)


def dilated_taps3(shape, kernel, stride, dilation, pad_mode, pads, ceil_mode):
    """The taps of a 3-d max pool with dilation (MaxPool3d's general path): (pads6, taps, base,
    offsets). pads6 pads the input (explicit padding, "same" padding (less before, as
    max_pool3d's) and the ceil_mode overhang after); taps[t] = (begin, end, strides) of the last
    input read by tap t (every leading dim whole), each (..., OD, OH, OW); base (OD, OH, OW) int64 and
    offsets (taps,) int64 Tensors give a tap's flat index into the unpadded D*H*W (base + offsets[t])."""
    lo, hi, out = [], [], []
    for i in range(3):
        n, k, s, d = shape[-3 + i], kernel[i], stride[i], dilation[i]
        ke = d * (k - 1) + 1
        if pad_mode == "same":
            o = -(-n // s)
            total = max((o - 1) * s + ke - n, 0)
            a, b = total // 2, total - total // 2
        else:
            a, b = (pads[2 * i], pads[2 * i + 1]) if pad_mode == "pad" else (0, 0)
            o = _out_len(n, ke, s, a, b, ceil_mode)
            b += max((o - 1) * s + ke - (n + a + b), 0)
        lo.append(a)
        hi.append(b)
        out.append(o)
    taps, offsets = [], []
    size = (shape[-3], shape[-2], shape[-1])
    for kd in range(kernel[0]):
        for kh in range(kernel[1]):
            for kw in range(kernel[2]):
                begin = (kd * dilation[0], kh * dilation[1], kw * dilation[2])
                end = tuple(begin[i] + (out[i] - 1) * stride[i] + 1 for i in range(3))
                lead = len(shape) - 3  # full-rank strided_slice arguments: the leading dims whole
                taps.append(((0,) * lead + begin, tuple(shape[:lead]) + end, (1,) * lead + tuple(stride)))
                offsets.append((begin[0] * size[1] + begin[1]) * size[2] + begin[2])
    coords = [np.arange(out[i]) * stride[i] - lo[i] for i in range(3)]
    base = (coords[0][:, None, None] * size[1] + coords[1][None, :, None]) * size[2] + coords[2][None, None, :]
    pads6 = (lo[0], hi[0], lo[1], hi[1], lo[2], hi[2])
    return pads6, tuple(taps), Tensor(base.astype(np.int64)), Tensor(np.array(offsets, np.int64))
