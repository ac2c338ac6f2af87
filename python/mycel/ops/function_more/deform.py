"""MindSpore's deformable_conv2d (Deformable ConvNets v1/v2) as a composition: each kernel tap
of each output position samples the input bilinearly at its offset position (vision.py's
_bilinear), v2 scales the samples by the modulation mask, and a grouped matmul with the weight
does the rest. Gradients for x, weight, offsets and mask come from the ops used."""
import numpy as np

from mycel import _mycel
from mycel.common.tensor import Tensor
from mycel.ops.primitive import constexpr
from mycel.ops.function_more.nn2 import _check_rank
from mycel.ops.function_more.vision import _bilinear

_ops = _mycel.ops


@constexpr
def _deform_plan(x_shape, w_shape, off_shape, kernel_size, strides, padding, dilations, groups, deformable_groups):
    """Checks the arguments; returns (kh, kw, oh, ow) and the undeformed tap positions (K, P)."""
    who = "deformable_conv2d"

    def four(v, arg):
        v = tuple(v)
        if len(v) != 4 or any(not isinstance(k, int) or k < 1 for k in v) or (arg != "padding" and v[:2] != (1, 1)):
            raise ValueError(f"{who}: {arg} must be 4 ints >= 1 in NCHW order with N and C set to 1, got {v!r}")
        return v
    kh, kw = tuple(kernel_size)
    _, _, sh, sw = four(strides, "strides")
    _, _, dh, dw = four(dilations, "dilations")
    pads = tuple(padding)
    if len(pads) != 4 or any(not isinstance(p, int) or p < 0 for p in pads):
        raise ValueError(f"{who}: padding must be 4 ints >= 0 (top, bottom, left, right), got {padding!r}")
    n, c, h, w = x_shape
    cout = w_shape[0]
    if c % groups or cout % groups or c % deformable_groups:
        raise ValueError(f"{who}: channels {c} and out channels {cout} must divide by groups {groups}, and {c} by "
                         f"deformable_groups {deformable_groups}")
    if tuple(w_shape) != (cout, c // groups, kh, kw):
        raise ValueError(f"{who}: weight must be {(cout, c // groups, kh, kw)}, got {tuple(w_shape)}")
    oh = (h + pads[0] + pads[1] - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w + pads[2] + pads[3] - (dw * (kw - 1) + 1)) // sw + 1
    if oh < 1 or ow < 1:
        raise ValueError(f"{who}: the kernel does not fit the padded input {h}x{w}")
    want = (n, 3 * deformable_groups * kh * kw, oh, ow)
    if tuple(off_shape) != want:
        raise ValueError(f"{who}: offsets must be {want} (offset_x, offset_y, mask blocks), got {tuple(off_shape)}")
    i, j, r, q = np.meshgrid(np.arange(kh), np.arange(kw), np.arange(oh), np.arange(ow), indexing="ij")
    ys = (r * sh - pads[0] + i * dh).reshape(kh * kw, oh * ow).astype(np.float32)
    xs = (q * sw - pads[2] + j * dw).reshape(kh * kw, oh * ow).astype(np.float32)
    return kh, kw, oh, ow, Tensor(ys), Tensor(xs)


def deformable_conv2d(x, weight, offsets, kernel_size, strides, padding, bias=None, dilations=(1, 1, 1, 1),
                      groups=1, deformable_groups=1, modulated=True):
    """2-d deformable convolution of x (N, C, H, W) by weight (C_out, C / groups, kh, kw):
    tap k of output p reads x at p's tap position plus (offset_y, offset_x) (bilinear, zero
    outside), times the mask when modulated (v2). offsets (N, 3 * deformable_groups * kh * kw,
    H_out, W_out) holds the x offsets, the y offsets and the masks, in that order."""
    _check_rank("deformable_conv2d", "x", x.ndim, (4,))
    _check_rank("deformable_conv2d", "weight", weight.ndim, (4,))
    _check_rank("deformable_conv2d", "offsets", offsets.ndim, (4,))
    kh, kw, oh, ow, base_y, base_x = _deform_plan(tuple(x.shape), tuple(weight.shape), tuple(offsets.shape),
                                                  kernel_size, strides, padding, dilations, groups, deformable_groups)
    n, c, h, w = x.shape
    dg, k, p = deformable_groups, kh * kw, oh * ow
    off = _ops.reshape(_ops.cast(offsets, x.dtype), (n, 3, dg, k, p))
    dx = _ops.reshape(_ops.slice(off, (0, 0, 0, 0, 0), (n, 1, dg, k, p)), (n * dg, k * p))
    dy = _ops.reshape(_ops.slice(off, (0, 1, 0, 0, 0), (n, 1, dg, k, p)), (n * dg, k * p))
    ys = _ops.reshape(_ops.cast(base_y, x.dtype), (1, k * p)) + dy
    xs = _ops.reshape(_ops.cast(base_x, x.dtype), (1, k * p)) + dx
    vals = _bilinear(_ops.reshape(x, (n * dg, c // dg, h, w)), ys, xs)             # (N * dg, C / dg, K * P)
    vals = _ops.reshape(vals, (n, dg, c // dg, k, p))
    if modulated:
        mask = _ops.slice(off, (0, 2, 0, 0, 0), (n, 1, dg, k, p))                  # (N, 1, dg, K, P)
        vals = vals * _ops.reshape(mask, (n, dg, 1, k, p))
    cout = weight.shape[0]
    cols = _ops.reshape(vals, (n, groups, (c // groups) * k, p))
    wg = _ops.broadcast_to(_ops.reshape(weight, (1, groups, cout // groups, (c // groups) * k)),
                           (n, groups, cout // groups, (c // groups) * k))
    out = _ops.reshape(_ops.matmul(wg, cols), (n, cout, oh, ow))
    if bias is not None:
        out = out + _ops.reshape(bias, (1, cout, 1, 1))
    return out


__all__ = ["deformable_conv2d"]
