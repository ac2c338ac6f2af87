"""Window geometry of MindSpore's 3-d pooling options that max_pool3d/avg_pool3d do not take
directly (ceil_mode, divisor_override): evaluated in Python on shapes, so in graph mode at compile
time (mycel.common is not parsed). Paddings are (head, tail, top, bottom, left, right)."""
import numpy as np


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
