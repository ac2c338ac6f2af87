"""MindSpore's DeformableOffsets (P.DeformableOffsets, nn_ops) and G.DeformableOffsetsGrad: the
sampling step of deformable convolution v2 as bilinear gathers, so its gradient in x and in the
offsets is the forward's vjp (gather_elements' and the weights' registry gradients)."""
import numpy as np

from mycel import _mycel
from mycel.common.autodiff import GradOperation
from mycel.common.dtype import float32 as _float32
from mycel.common.dtype import int64 as _int64
from mycel.common.tensor import Tensor
from mycel.ops.operations._grad_util import positive_int as _positive_int
from mycel.ops.operations.compat_ops import _Composite
from mycel.ops.primitive import constexpr

_ops = _mycel.ops
_VJP_ALL = GradOperation(get_all=True, sens_param=True)


def _four(who, name, value, hw_axes, nonneg=False):
    vals = tuple(value) if isinstance(value, (tuple, list)) else None
    if vals is None or len(vals) != 4 or any(isinstance(v, bool) or not isinstance(v, int) for v in vals):
        raise TypeError(f"{who}: {name} must be a tuple of 4 ints, got {value!r}")
    if any(v < 0 if nonneg else v < 1 for v in vals):
        raise ValueError(f"{who}: {name} must hold ints >= {0 if nonneg else 1}, got {value!r}")
    if hw_axes is not None and any(vals[a] != 1 for a in range(4) if a not in hw_axes):
        raise ValueError(f"{who}: {name} must be 1 on the N and C dims, got {value!r}")
    return vals


@constexpr
def _geometry(who, x_shape, off_shape, ksize, strides, pads, dilations, groups, strict):
    """Output (OH, OW) and each sample's base position: by (kh, OH), bx (kw, OW) as tensors.
    strict: offsets must cover the convolution's output; else (the grad, as MindSpore's kernel)
    their (OH, OW) is taken as given, up to that size."""
    n, c, h, w = x_shape
    kh, kw = ksize
    sh, sw = strides
    dh, dw = dilations
    pt, pb, pl, pr = pads
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (w + pl + pr - (kw - 1) * dw - 1) // sw + 1
    if oh < 1 or ow < 1:
        raise ValueError(f"{who}: a {ksize} kernel does not fit the {h}x{w} input")
    if c % groups:
        raise ValueError(f"{who}: the {c} channels do not split into {groups} deformable groups")
    if not strict and len(off_shape) == 4 and 1 <= off_shape[2] <= oh and 1 <= off_shape[3] <= ow:
        oh, ow = off_shape[2], off_shape[3]
    want = (n, 3 * groups * kh * kw, oh, ow)
    if tuple(off_shape) != want:
        raise ValueError(f"{who}: offsets must have shape {want} (N, 3 * deformable_groups * kh * kw, OH, "
                         f"OW in NCHW), got {tuple(off_shape)}")
    by = np.arange(oh)[None, :] * sh + np.arange(kh)[:, None] * dh - pt
    bx = np.arange(ow)[None, :] * sw + np.arange(kw)[:, None] * dw - pl
    return oh, ow, Tensor(by.astype(np.float32)), Tensor(bx.astype(np.float32))


@constexpr
def _is_half(dtype):
    return str(dtype).lower() in ("float16", "bfloat16")


def deformable_offsets(x, offsets, ksize, strides, pads, dilations, groups, strict=True):
    """NCHW x (N, C, H, W) and offsets (N, 3 * G * kh * kw, OH, OW): [x offsets, y offsets, mask]
    -> (N, C, OH * kh, OW * kw): each kernel tap of each output pixel, x bilinearly sampled at
    its position plus offset (zero outside), times the mask."""
    who = "DeformableOffsets"
    n, c, h, w = x.shape
    kh, kw = ksize
    oh, ow, by, bx = _geometry(who, tuple(x.shape), tuple(offsets.shape), ksize, strides, pads, dilations, groups,
                               strict)
    cg, k = c // groups, kh * kw * oh * ow
    out_dtype = x.dtype
    if _is_half(out_dtype):  # positions in float32: float16 would round 2.1 to 2.0996
        x, offsets = _ops.cast(x, _float32), _ops.cast(offsets, _float32)
    off = _ops.reshape(offsets, (n, 3, groups, kh, kw, oh, ow))
    dtype = x.dtype
    sx = _ops.cast(_ops.reshape(bx, (1, 1, 1, kw, 1, ow)), dtype) + off[:, 0]
    sy = _ops.cast(_ops.reshape(by, (1, 1, kh, 1, oh, 1)), dtype) + off[:, 1]
    inside = _ops.logical_and(_ops.logical_and(sy > -1.0, sy < float(h)), _ops.logical_and(sx > -1.0, sx < float(w)))
    left, top = _ops.floor(sx), _ops.floor(sy)
    lw, tw = sx - left, sy - top
    planes = _ops.reshape(x, (n, groups, cg, h * w))

    def corner(row, col, weight):
        ok = _ops.logical_and(_ops.logical_and(row >= 0.0, row <= float(h - 1)),
                              _ops.logical_and(col >= 0.0, col <= float(w - 1)))
        index = _ops.cast(_ops.clip_by_value(row, 0.0, float(h - 1)) * float(w)
                          + _ops.clip_by_value(col, 0.0, float(w - 1)), _int64)
        index = _ops.broadcast_to(_ops.reshape(index, (n, groups, 1, k)), (n, groups, cg, k))
        value = _ops.gather_elements(planes, index, dim=3)
        return value * _ops.reshape(_ops.cast(ok, dtype) * weight, (n, groups, 1, k))

    sample = (corner(top, left, (1.0 - lw) * (1.0 - tw)) + corner(top, left + 1.0, lw * (1.0 - tw))
              + corner(top + 1.0, left, (1.0 - lw) * tw) + corner(top + 1.0, left + 1.0, lw * tw))
    scale = _ops.reshape(_ops.cast(inside, dtype) * off[:, 2], (n, groups, 1, k))
    out = _ops.reshape(sample * scale, (n, groups, cg, kh, kw, oh, ow))
    out = _ops.transpose(out, (0, 1, 2, 5, 3, 6, 4))  # tap (ky, kx) of pixel (py, px) at (py*kh+ky, px*kw+kx)
    return _ops.cast(_ops.reshape(out, (n, c, oh * kh, ow * kw)), out_dtype)


class DeformableOffsets(_Composite):
    """(x, offsets) -> (N, C, OH * kh, OW * kw) (NHWC in and out with data_format 'NHWC'):
    deformable convolution v2's sampled taps; strides, pads (top, bottom, left, right) and
    dilations are 4-tuples in the data format's dim order."""
    _strict = True

    def __init__(self, strides, pads, ksize, dilations=(1, 1, 1, 1), data_format="NCHW", deformable_groups=1,
                 modulated=True):
        who = type(self).__name__
        if data_format not in ("NCHW", "NHWC"):
            raise ValueError(f"{who}: data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
        hw = (2, 3) if data_format == "NCHW" else (1, 2)
        strides = _four(who, "strides", strides, hw)
        dilations = _four(who, "dilations", dilations, hw)
        pads = _four(who, "pads", pads, None, nonneg=True)
        ksize = tuple(ksize) if isinstance(ksize, (tuple, list)) else (ksize, ksize)
        if len(ksize) != 2:
            raise TypeError(f"{who}: ksize must be an int or a tuple of 2 ints, got {ksize!r}")
        ksize = tuple(_positive_int(who, "ksize", v) for v in ksize)
        if not modulated:
            raise ValueError(f"{who}: only modulated=True (deformable convolution v2) is supported, as MindSpore's")
        super().__init__(strides=(strides[hw[0]], strides[hw[1]]), pads=pads, ksize=ksize,
                         dilations=(dilations[hw[0]], dilations[hw[1]]), data_format=data_format,
                         deformable_groups=_positive_int(who, "deformable_groups", deformable_groups),
                         modulated=True)

    def _call(self, x, offsets):
        if x.ndim != 4 or offsets.ndim != 4:
            raise ValueError(f"DeformableOffsets: x and offsets must have rank 4, got shapes {tuple(x.shape)} "
                             f"and {tuple(offsets.shape)}")
        if self.data_format == "NHWC":
            out = deformable_offsets(_ops.transpose(x, (0, 3, 1, 2)), _ops.transpose(offsets, (0, 3, 1, 2)),
                                     self.ksize, self.strides, self.pads, self.dilations, self.deformable_groups,
                                     self._strict)
            return _ops.transpose(out, (0, 2, 3, 1))
        return deformable_offsets(x, offsets, self.ksize, self.strides, self.pads, self.dilations,
                                  self.deformable_groups, self._strict)


class DeformableOffsetsGrad(DeformableOffsets):
    """(dout, x, offsets) -> (dx, d_offsets): the vjp of DeformableOffsets."""

    def __init__(self, strides, pads, ksize, dilations=(1, 1, 1, 1), data_format="NCHW", deformable_groups=1,
                 modulated=True):
        super().__init__(strides, pads, ksize, dilations, data_format, deformable_groups, modulated)
        self._forward = DeformableOffsets(strides, pads, ksize, dilations, data_format, deformable_groups, modulated)
        self._forward._strict = False  # the output size is dout's, as MindSpore's grad kernel reads it

    def _call(self, dout, x, offsets):
        return _VJP_ALL(self._forward)(x, offsets, dout)
