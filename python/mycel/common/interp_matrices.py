"""Resampling matrices of ops.interpolate's separable modes (linear, bilinear via the registry's
resize op, trilinear, bicubic, area), built in numpy from shapes (so at compile time in graph
mode: mycel.common is not parsed). Output index j of a dim reads input positions with the
weights in row j; the sampling rules are PyTorch's, which MindSpore's interpolate follows."""
import math

import numpy as np

from mycel.common.tensor import Tensor

_CUBIC_A = -0.75  # the cubic convolution coefficient PyTorch and MindSpore use
_SPATIAL = {"linear": 1, "bicubic": 2, "trilinear": 3}


def _source(j, n, m, align_corners, clamp):
    """Input coordinate of output index j (n inputs, m outputs)."""
    if align_corners:
        return j * (n - 1) / (m - 1) if m > 1 else 0.0
    src = (j + 0.5) * n / m - 0.5
    return max(src, 0.0) if clamp else src


def _linear(n, m, align_corners):
    w = np.zeros((m, n))
    for j in range(m):
        src = _source(j, n, m, align_corners, True)
        i0 = min(int(math.floor(src)), n - 1)
        i1 = min(i0 + 1, n - 1)
        frac = src - i0
        w[j, i0] += 1 - frac
        w[j, i1] += frac
    return w


def _cubic_weights(t):
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _cubic(n, m, align_corners):
    w = np.zeros((m, n))
    for j in range(m):
        src = _source(j, n, m, align_corners, False)
        i = int(math.floor(src))
        for k, wk in enumerate(_cubic_weights(src - i)):
            w[j, min(max(i - 1 + k, 0), n - 1)] += wk  # taps beyond the edge read the edge
    return w


def _area(n, m):
    w = np.zeros((m, n))
    for j in range(m):
        a, b = (j * n) // m, -(-((j + 1) * n) // m)
        w[j, a:b] = 1.0 / (b - a)
    return w


def interp_matrices(mode, shape, size, scale_factor, align_corners):
    """The transposed matrix (n, m) per spatial dim, as float64 Tensors, for `mode` on an input of
    `shape`: linear on (N, C, L), bicubic on (N, C, H, W), trilinear on (N, C, D, H, W), area on
    any of them. The output size is `size` or floor(n * scale_factor) per dim."""
    k = _SPATIAL.get(mode, len(shape) - 2)
    if len(shape) != k + 2 or k < 1:
        want = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}.get(k, "(N, C, ...) with 1 to 3 spatial dims")
        raise ValueError(f"interpolate: mode '{mode}' needs an {want} input, got shape {tuple(shape)}")
    if mode == "area" and align_corners:
        raise ValueError("interpolate: align_corners applies to linear, bilinear, bicubic and trilinear, not 'area'")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    spatial = tuple(shape[2:])
    if size is not None:
        out = (size,) * k if isinstance(size, int) else tuple(size)
    else:
        sf = (scale_factor,) * k if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
        if len(sf) != k or any(s <= 0 for s in sf):
            raise ValueError(f"interpolate: scale_factor must be a positive number or {k} of them, got {scale_factor!r}")
        out = tuple(int(d * s) for d, s in zip(spatial, sf))
    if len(out) != k or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in out):
        raise ValueError(f"interpolate: the output size must be {k} ints >= 1, got {out!r}")
    mats = []
    for n, m in zip(spatial, out):
        w = _area(n, m) if mode == "area" else _cubic(n, m, bool(align_corners)) if mode == "bicubic" else \
            _linear(n, m, bool(align_corners))
        mats.append(Tensor(np.ascontiguousarray(w.T)))
    return tuple(mats)


def swap_last(ndim, axis):
    """The permutation that swaps `axis` with the last axis (its own inverse)."""
    perm = list(range(ndim))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return tuple(perm)
