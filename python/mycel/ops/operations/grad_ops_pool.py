"""MindSpore's pooling gradient primitives (G.MaxPoolGradWithArgmax, G.MaxPoolGradGrad, ...,
G.PSROIPooling and its grad), named by _grad_ops.py: gathers at window maxima and their vjps, and
position-sensitive ROI pooling as bin-weight ops."""
import math

import numpy as np

from mycel import _mycel
from mycel.common.dtype import int64 as _int64
from mycel.common.tensor import Tensor
from mycel.ops.operations import compat_ops4 as _c4
from mycel.ops.operations._grad_util import VJP as _VJP
from mycel.ops.operations._grad_util import ShapeError as _ShapeError
from mycel.ops.operations._grad_util import check_same_shape as _check_same_shape
from mycel.ops.operations._grad_util import positive_float as _positive_float
from mycel.ops.operations._grad_util import positive_int as _positive_int
from mycel.ops.operations.compat_ops import _Composite
from mycel.ops.primitive import constexpr

_ops = _mycel.ops


# Max pooling with indices: argmax is h * W + w in each (n, c) input plane.

def _gather_planes(x_flat, index):
    return _ops.gather_elements(x_flat, index, dim=1)


def _argmax_scatter(who, x, grad, argmax):
    """dx: each grad value added at its argmax in x's plane, the vjp of the gather of x's
    planes at argmax (gather_elements' registry gradient)."""
    if x.ndim != 4 or grad.ndim != 4:
        raise ValueError(f"{who}: x and grad must be (N, C, H, W), got shapes {tuple(x.shape)} and "
                         f"{tuple(grad.shape)}")
    _check_same_shape(who, "argmax", argmax.shape, "grad", grad.shape)
    n, c, h, w = x.shape
    planes = _ops.reshape(x, (n * c, h * w))
    index = _ops.reshape(_ops.cast(argmax, _int64), (n * c, -1))
    dx = _VJP(_gather_planes)(planes, index, _ops.reshape(grad, (n * c, -1)))
    return _ops.reshape(dx, (n, c, h, w))


def _argmax_gather(who, grad, argmax, per_batch=False):
    """The forward-mode counterpart: each output takes grad (shaped like x) at its argmax, an
    index into its (n, c) plane, or with per_batch into its sample's (C, H, W)."""
    if grad.ndim != 4 or argmax.ndim != 4:
        raise ValueError(f"{who}: grad and argmax must be (N, C, H, W), got shapes {tuple(grad.shape)} "
                         f"and {tuple(argmax.shape)}")
    n, c, h, w = grad.shape
    rows, size = (n, c * h * w) if per_batch else (n * c, h * w)
    index = _ops.reshape(_ops.cast(argmax, _int64), (rows, -1))
    out = _gather_planes(_ops.reshape(grad, (rows, size)), index)
    return _ops.reshape(out, tuple(argmax.shape))


class MaxPoolGradWithArgmax(_Composite):
    """(x, grad, argmax): grad added at argmax in each input plane (MaxPoolWithArgmax's gradient)."""

    def __init__(self, kernel_size=1, strides=1, pad_mode="VALID", data_format="NCHW"):
        who = "MaxPoolGradWithArgmax"
        super().__init__(kernel_size=_c4._pair(who, "kernel_size", kernel_size),
                         strides=_c4._pair(who, "strides", strides),
                         pad_mode=_c4._pad_mode(who, pad_mode, ("valid", "same")), data_format=data_format)

    def _call(self, x, grad, argmax):
        return _argmax_scatter("MaxPoolGradWithArgmax", x, grad, argmax)


class MaxPoolGradWithArgmaxV2(_Composite):
    """(x, grad, argmax): grad added at argmax in each input plane (MaxPoolWithArgmaxV2's gradient)."""

    def __init__(self, kernel_size, strides=None, pads=0, dilation=(1, 1), ceil_mode=False, argmax_type=None):
        who = "MaxPoolGradWithArgmaxV2"
        super().__init__(kernel_size=_c4._pair(who, "kernel_size", kernel_size),
                         strides=_c4._pair(who, "strides", kernel_size if strides is None else strides),
                         pads=pads, dilation=dilation, ceil_mode=bool(ceil_mode), argmax_type=argmax_type)

    def _call(self, x, grad, argmax):
        return _argmax_scatter("MaxPoolGradWithArgmaxV2", x, grad, argmax)


class MaxPoolGradGradWithArgmax(_Composite):
    """(x, grad, argmax): each pooled output takes grad (shaped like x) at its argmax, here an
    index into the sample's C * H * W values (MindSpore's CPU kernel)."""

    def __init__(self, kernel_size=1, strides=1, pad_mode="VALID"):
        who = "MaxPoolGradGradWithArgmax"
        super().__init__(kernel_size=_c4._pair(who, "kernel_size", kernel_size),
                         strides=_c4._pair(who, "strides", strides),
                         pad_mode=_c4._pad_mode(who, pad_mode, ("valid", "same")))

    def _call(self, x, grad, argmax):
        _check_same_shape("MaxPoolGradGradWithArgmax", "grad", grad.shape, "x", x.shape)
        return _argmax_gather("MaxPoolGradGradWithArgmax", grad, argmax, per_batch=True)


class MaxPoolGradGrad(_Composite):
    """(x, origin_output, grad): each pooled output takes grad (shaped like x) where its window's
    first maximum of x is (MaxPoolWithArgmax's windows and padding)."""

    def __init__(self, kernel_size=1, strides=1, pad_mode="VALID", data_format="NCHW"):
        who = "MaxPoolGradGrad"
        if data_format != "NCHW":
            raise ValueError(f"{who}: data_format must be 'NCHW', got {data_format!r}")
        super().__init__(kernel_size=_c4._pair(who, "kernel_size", kernel_size),
                         strides=_c4._pair(who, "strides", strides),
                         pad_mode=_c4._pad_mode(who, pad_mode, ("valid", "same")), data_format=data_format)

    def _call(self, x, origin_output, grad):
        _check_same_shape("MaxPoolGradGrad", "grad", grad.shape, "x", x.shape)
        if x.ndim != 4:
            raise ValueError(f"MaxPoolGradGrad: x must be (N, C, H, W), got shape {tuple(x.shape)}")
        _, argmax = _c4.max_pool2d_with_argmax(x, self.kernel_size, self.strides, self.pad_mode)
        return _argmax_gather("MaxPoolGradGrad", grad, argmax)


# Position-sensitive ROI pooling (R-FCN): the forward is here, as in MindSpore's _grad_ops, and its
# gradient is the forward's vjp (it is linear in x).

@constexpr
def _check_ps_roi_types(who, x_name, x_dtype, rois_dtype):
    for name, dtype in ((x_name, x_dtype), ("rois", rois_dtype)):
        if str(dtype).lower() not in ("float16", "float32"):
            raise TypeError(f"{who}: {name} must be float16 or float32 (MindSpore's CPU kernel), got {dtype}")


@constexpr
def _ps_roi_layout(who, rois_shape, group, out_dim, x_shape=None, dy_shape=None):
    """(rois count R, batch B) with checks; rois is (B, 5, K): (batch index, x1, y1, x2, y2)."""
    if len(rois_shape) != 3 or rois_shape[1] != 5:
        raise _ShapeError(f"{who}: rois must be (batch, 5, rois_num), got shape {tuple(rois_shape)}")
    r = rois_shape[0] * rois_shape[2]
    if x_shape is not None and (len(x_shape) != 4 or x_shape[1] != out_dim * group * group):
        raise _ShapeError(f"{who}: x must be (N, output_dim * group_size ** 2 = {out_dim * group * group}, H, W), "
                          f"got shape {tuple(x_shape)}")
    if dy_shape is not None and tuple(dy_shape) != (r, out_dim, group, group):
        raise _ShapeError(f"{who}: dy must be (batch * rois_num, output_dim, group_size, group_size) = "
                          f"{(r, out_dim, group, group)}, got shape {tuple(dy_shape)}")
    return r, rois_shape[0]


@constexpr
def _ps_grid(n):
    return Tensor(np.arange(n, dtype=np.float32))


def _round_half_away(v):
    return _ops.sign(v) * _ops.floor(_ops.abs(v) + 0.5)


def _ps_roi_bins(rois, r, group, scale, height, width, dtype):
    """Each roi's batch index (R,) and its bins' pixel weights (R, G, G, H, W): 1 / bin area
    over the bin's pixels (0 for an empty bin), MindSpore's rounding and clipping."""
    boxes = _ops.cast(_ops.reshape(_ops.transpose(rois, (0, 2, 1)), (r, 5)), dtype)
    batch = _ops.cast(boxes[:, 0], _int64)
    start_w = _round_half_away(boxes[:, 1] * scale)
    start_h = _round_half_away(boxes[:, 2] * scale)
    bin_w = _ops.maximum(_round_half_away(boxes[:, 3] * scale) - start_w, 0.1) / group
    bin_h = _ops.maximum(_round_half_away(boxes[:, 4] * scale) - start_h, 0.1) / group
    p = _ops.cast(_ps_grid(group), dtype)
    lo_h = _ops.clip_by_value(_ops.floor(p * bin_h[:, None] + start_h[:, None]), 0.0, float(height))
    hi_h = _ops.clip_by_value(_ops.ceil((p + 1.0) * bin_h[:, None] + start_h[:, None]), 0.0, float(height))
    lo_w = _ops.clip_by_value(_ops.floor(p * bin_w[:, None] + start_w[:, None]), 0.0, float(width))
    hi_w = _ops.clip_by_value(_ops.ceil((p + 1.0) * bin_w[:, None] + start_w[:, None]), 0.0, float(width))
    rows = _ops.cast(_ps_grid(height), dtype)
    cols = _ops.cast(_ps_grid(width), dtype)
    in_h = _ops.cast(_ops.logical_and(rows >= lo_h[:, :, None], rows < hi_h[:, :, None]), dtype)  # (R, G, H)
    in_w = _ops.cast(_ops.logical_and(cols >= lo_w[:, :, None], cols < hi_w[:, :, None]), dtype)  # (R, G, W)
    area = (hi_h - lo_h)[:, :, None] * (hi_w - lo_w)[:, None, :]  # (R, G, G)
    inv = _ops.select(area > 0, 1.0 / _ops.maximum(area, 1.0), _ops.zeros_like(area))
    weight = in_h[:, :, None, :, None] * in_w[:, None, :, None, :] * inv[:, :, :, None, None]
    return batch, weight


class PSROIPooling(_Composite):
    """(x, rois) -> (batch * rois_num, output_dim, group_size, group_size): position-sensitive
    average pooling (R-FCN); bin (i, j) of output channel c averages input channel
    (c * group_size + i) * group_size + j over the bin."""

    def __init__(self, spatial_scale, group_size, output_dim):
        who = "PSROIPooling"
        super().__init__(spatial_scale=_positive_float(who, "spatial_scale", spatial_scale),
                         group_size=_positive_int(who, "group_size", group_size),
                         output_dim=_positive_int(who, "output_dim", output_dim))

    def __call__(self, *args):
        if len(args) != 2:  # TypeError here, ValueError for the grad: MindSpore's types
            raise TypeError(f"PSROIPooling: takes 2 inputs (x, rois), got {len(args)}")
        for name, v in zip(("x", "rois"), args):
            if not isinstance(v, Tensor):
                raise TypeError(f"PSROIPooling: {name} must be a Tensor, got {type(v).__name__}")
        return self._call(*args)

    def _call(self, x, rois):
        _check_ps_roi_types("PSROIPooling", "x", x.dtype, rois.dtype)
        g, d = self.group_size, self.output_dim
        r, _ = _ps_roi_layout("PSROIPooling", rois.shape, g, d, x.shape)
        batch, weight = _ps_roi_bins(rois, r, g, self.spatial_scale, x.shape[2], x.shape[3], x.dtype)
        planes = _ops.reshape(_ops.gather(x, batch, 0), (r, d, g, g, x.shape[2], x.shape[3]))
        return _ops.sum(planes * weight[:, None], (4, 5))


class PSROIPoolingGrad(_Composite):
    """(dy, rois) -> dx of shape (batch, output_dim * group_size ** 2, *input_size): the vjp of
    PSROIPooling, dy spread evenly over each bin's pixels of its channel."""

    def __init__(self, input_size, spatial_scale, group_size, output_dim):
        who = "PSROIPoolingGrad"
        if isinstance(input_size, int) and not isinstance(input_size, bool):
            input_size = (input_size, input_size)
        if not isinstance(input_size, tuple) or len(input_size) != 2:
            raise TypeError(f"{who}: input_size must be an int or a tuple (height, width), got {input_size!r}")
        input_size = tuple(_positive_int(who, "input_size", v) for v in input_size)
        super().__init__(input_size=input_size, spatial_scale=_positive_float(who, "spatial_scale", spatial_scale),
                         group_size=_positive_int(who, "group_size", group_size),
                         output_dim=_positive_int(who, "output_dim", output_dim))
        self._forward = PSROIPooling(self.spatial_scale, self.group_size, self.output_dim)

    def __call__(self, *args):
        if len(args) != 2:
            raise ValueError(f"PSROIPoolingGrad: takes 2 inputs (dy, rois), got {len(args)}")
        for name, v in zip(("dy", "rois"), args):
            if not isinstance(v, Tensor):
                raise TypeError(f"PSROIPoolingGrad: {name} must be a Tensor, got {type(v).__name__}")
        return self._call(*args)

    def _call(self, dy, rois):
        _check_ps_roi_types("PSROIPoolingGrad", "dy", dy.dtype, rois.dtype)
        g, d = self.group_size, self.output_dim
        _, b = _ps_roi_layout("PSROIPoolingGrad", rois.shape, g, d, None, dy.shape)
        x = _ops.zeros((b, d * g * g) + self.input_size, dy.dtype)
        return _VJP(self._forward)(x, rois, dy)


@constexpr
def _same_pads_nd(shape, kernel, stride, pad_mode):
    """Flat (before, after) pads of the window dims, TensorFlow's 'same' or none ('valid')."""
    pads = []
    for size, k, st in zip(shape, kernel, stride):
        if pad_mode == "same":
            pads += list(_c4._same_pads(size, k, st))
        else:
            pads += [0, 0]
    return tuple(pads)


@constexpr
def _window_slices(shape, kernel, stride, pads):
    """(begin, end, strides) of strided_slice over the padded shape, one per kernel offset; the
    full-rank paddings, and whether there are any."""
    nd, lead = len(kernel), len(shape) - len(kernel)
    sizes = [shape[lead + i] + pads[2 * i] + pads[2 * i + 1] for i in range(nd)]
    outs = [(sizes[i] - kernel[i]) // stride[i] + 1 for i in range(nd)]
    if any(o < 1 for o in outs):
        raise ValueError(f"MaxPool3DGradGrad: a {kernel} window does not fit the input {tuple(shape[lead:])}")
    offsets = [()]
    for k in kernel:
        offsets = [o + (i,) for o in offsets for i in range(k)]
    slices = tuple(((0,) * lead + off,
                    tuple(shape[:lead]) + tuple(off[i] + stride[i] * (outs[i] - 1) + 1 for i in range(nd)),
                    (1,) * lead + tuple(stride)) for off in offsets)
    return slices, (0, 0) * lead + tuple(pads), any(pads)


def _window_stack(x, kernel, stride, pads, fill):
    """The pooling windows of x's last len(kernel) dims as one strided slice per kernel offset,
    stacked on a new axis 0 (x padded by pads with fill)."""
    slices, full_pads, padded = _window_slices(x.shape, kernel, stride, pads)
    if padded:
        x = _ops.pad(x, full_pads, value=fill)
    views = []
    for begin, end, strides in slices:
        views.append(_ops.strided_slice(x, begin=begin, end=end, strides=strides))
    return _ops.stack(views, 0)


class MaxPool3DGradGrad(_Composite):
    """(x, origin_output, grad): the forward-mode derivative of MaxPool3D at x in direction grad:
    each output takes grad where its window's first maximum of x is (pad_mode 'valid' or
    'same', NCDHW)."""

    def __init__(self, kernel_size=(1, 1, 1), strides=(1, 1, 1), pad_mode="VALID", data_format="NCDHW"):
        who = "MaxPool3DGradGrad"
        if data_format != "NCDHW":
            raise ValueError(f"{who}: data_format must be 'NCDHW', got {data_format!r}")
        super().__init__(kernel_size=_c4._pair(who, "kernel_size", kernel_size, 3),
                         strides=_c4._pair(who, "strides", strides, 3),
                         pad_mode=_c4._pad_mode(who, pad_mode, ("valid", "same")), data_format=data_format)

    def _call(self, x, origin_output, grad):
        _check_same_shape("MaxPool3DGradGrad", "grad", grad.shape, "x", x.shape)
        if x.ndim != 5:
            raise ValueError(f"MaxPool3DGradGrad: x must be (N, C, D, H, W), got shape {tuple(x.shape)}")
        pads = _same_pads_nd(tuple(x.shape[2:]), self.kernel_size, self.strides, self.pad_mode)
        values = _window_stack(x, self.kernel_size, self.strides, pads, -math.inf)
        tangents = _window_stack(grad, self.kernel_size, self.strides, pads, 0.0)
        first = _ops.argmax(values, 0, True)
        return _ops.gather_elements(tangents, first, dim=0)[0]
