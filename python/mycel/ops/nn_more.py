"""MindSpore functional ops made of registry ops: softmin, glu, pixel_shuffle, pixel_unshuffle,
dropout1d/2d/3d (whole channels dropped) and interpolate (nearest, linear, bilinear, bicubic,
trilinear, area). Plain compositions, so graph mode parses them
and their gradients come from the ops."""
from mycel import _mycel
from mycel.common.index_geometry import channel_keep_shape, interpolate_size
from mycel.common.interp_matrices import interp_matrices, swap_last

_ops = _mycel.ops


def softmin(x, axis=-1):
    """softmax(-x) along axis."""
    return _ops.softmax(-x, axis)


def glu(x, axis=-1):
    """a * sigmoid(b), with a and b the two halves of x along axis (its size must be even)."""
    size = x.shape[axis]
    if size % 2 != 0:
        raise ValueError(f"glu: the size of axis {axis} must be even, got {size} (shape {tuple(x.shape)})")
    a, b = _ops.split(x, axis=axis, output_num=2)
    return a * _ops.sigmoid(b)


def _check_factor(who, name, r):
    if not isinstance(r, int) or isinstance(r, bool) or r < 1:
        raise ValueError(f"{who}: {name} must be an int >= 1, got {r!r}")


def pixel_shuffle(input, upscale_factor):  # noqa: A002 (MindSpore's argument name)
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r): out[c, h*r+i, w*r+j] = in[c*r*r + i*r + j, h, w]."""
    r = upscale_factor
    _check_factor("pixel_shuffle", "upscale_factor", r)
    s = tuple(input.shape)
    if len(s) < 3 or s[-3] % (r * r) != 0:
        raise ValueError(f"pixel_shuffle: input must be (*, C*r*r, H, W) with r={r}, got shape {s}")
    lead, c, h, w = s[:-3], s[-3] // (r * r), s[-2], s[-1]
    x = _ops.reshape(input, (-1, c, r, r, h, w))
    x = _ops.transpose(x, (0, 1, 4, 2, 5, 3))
    return _ops.reshape(x, lead + (c, h * r, w * r))


def pixel_unshuffle(input, downscale_factor):  # noqa: A002
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), the inverse of pixel_shuffle."""
    r = downscale_factor
    _check_factor("pixel_unshuffle", "downscale_factor", r)
    s = tuple(input.shape)
    if len(s) < 3 or s[-2] % r != 0 or s[-1] % r != 0:
        raise ValueError(f"pixel_unshuffle: input must be (*, C, H*r, W*r) with r={r}, got shape {s}")
    lead, c, h, w = s[:-3], s[-3], s[-2] // r, s[-1] // r
    x = _ops.reshape(input, (-1, c, h, r, w, r))
    x = _ops.transpose(x, (0, 1, 3, 5, 2, 4))
    return _ops.reshape(x, lead + (c * r * r, h, w))


def _channel_dropout(who, x, p, training, spatial):
    if not 0 <= p <= 1:
        raise ValueError(f"{who}: p must be in [0, 1], got {p}")
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ValueError(f"{who}: input must have rank {spatial + 1} or {spatial + 2}, got shape {tuple(x.shape)}")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0
    # one keep/drop draw per (N, C) channel, scaled by 1/(1-p), broadcast over its positions
    mask, _ = _ops.dropout(_ops.ones(channel_keep_shape(x.shape, spatial), x.dtype), keep_prob=1.0 - p)
    return x * mask


def dropout1d(input, p=0.5, training=True):  # noqa: A002
    """Whole channels of (N, C, L) or (C, L) zeroed with probability p, the rest scaled by 1/(1-p)."""
    return _channel_dropout("dropout1d", input, p, training, 1)


def dropout2d(input, p=0.5, training=True):  # noqa: A002
    """Whole channels of (N, C, H, W) or (C, H, W) zeroed with probability p (see dropout1d)."""
    return _channel_dropout("dropout2d", input, p, training, 2)


def dropout3d(input, p=0.5, training=True):  # noqa: A002
    """Whole channels of (N, C, D, H, W) or (C, D, H, W) zeroed with probability p."""
    return _channel_dropout("dropout3d", input, p, training, 3)


def _resample(x, mt, axis):
    """x with dim `axis` resampled by the transposed matrix mt (n, m): a matmul on the last dim."""
    if axis == x.ndim - 1:
        return _ops.matmul(x, _ops.cast(mt, x.dtype))
    perm = swap_last(x.ndim, axis)
    y = _ops.matmul(_ops.transpose(x, perm), _ops.cast(mt, x.dtype))
    return _ops.transpose(y, perm)


def _separable(x, size, scale_factor, mode, align_corners):
    # One constant matrix per spatial dim (mycel.common builds them from shapes, at compile time
    # in graph mode); the gradient is the transposed resampling, from matmul's rule.
    mats = interp_matrices(mode, tuple(x.shape), size, scale_factor, align_corners)
    y = _resample(x, mats[-1], x.ndim - 1)
    if len(mats) > 1:
        y = _resample(y, mats[-2], x.ndim - 2)
    if len(mats) > 2:
        y = _resample(y, mats[-3], x.ndim - 3)
    return y


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,  # noqa: A002
                recompute_scale_factor=None):
    """Resizes the spatial dims of input to `size`, or by `scale_factor` (output floor(n * s)).
    Modes: "nearest" (src = floor(dst * H / H_out)) and "bilinear" on (N, C, H, W); "linear" on
    (N, C, L), "bicubic" on (N, C, H, W) (cubic convolution, a = -0.75, edge taps clamped),
    "trilinear" on (N, C, D, H, W), all with half-pixel centres or align_corners=True; "area"
    (adaptive average pooling) on 3-d to 5-d inputs. As MindSpore and PyTorch."""
    if mode in ("linear", "bicubic", "trilinear", "area"):
        return _separable(input, size, scale_factor, mode, align_corners)
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"interpolate: mode must be 'nearest', 'linear', 'bilinear', 'bicubic', 'trilinear' or "
                         f"'area', got {mode!r}")
    if input.ndim != 4:
        raise ValueError(f"interpolate: mode '{mode}' needs an (N, C, H, W) input, got shape {tuple(input.shape)}")
    if mode == "nearest" and align_corners:
        raise ValueError("interpolate: align_corners applies to 'bilinear' only, not 'nearest'")
    out = interpolate_size("interpolate", tuple(input.shape), size, scale_factor)
    if mode == "nearest":
        return _ops.resize_nearest_neighbor(input, size=out)
    if align_corners:
        return _ops.resize_bilinear(input, size=out, align_corners=True)
    return _ops.resize_bilinear(input, size=out, half_pixel_centers=True)
