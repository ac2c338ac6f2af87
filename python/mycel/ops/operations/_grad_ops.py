"""MindSpore's internal gradient primitives (`ops.operations._grad_ops`, imported as G): the
backward of one forward op, called with the forward's tensors and the output sensitivity.

One place per gradient: each class computes what Mycel's own backward of that op computes.
* Where MindSpore passes the forward's inputs (ACosGrad(x, dy), SoftplusGrad(dy, x), ...), the
  class is the vector-Jacobian product of the forward primitive through GradOperation: the
  registry's bprop rules, eager (recorded) and in graph mode (the J transform) alike.
* Where the bprop calls a backward registry op (strided_slice_grad, resize_*_grad,
  layer_norm_grad, conv2d_backprop_filter, pad for slice), the class calls that op with
  MindSpore's arguments converted.
* Where MindSpore passes the forward's output instead of its input (SqrtGrad(y, dy),
  InvGrad(y, dy), EluGrad(dy, y), AsinhGrad(y, dy), AcoshGrad(y, dy)), the input is not at hand;
  the class is the derivative written on y, the form unary.cc's rules for sqrt, reciprocal and
  elu use (they read the saved output too). KLDivLossGrad is MindSpore's formula (its forward and
  grad disagree for negative targets).
The pooling ones (max pooling with argmax, PSROIPooling) are in grad_ops_pool.py."""
import numpy as np

from mycel import _mycel
from mycel.common.dtype import float64 as _float64
from mycel.common.tensor import Tensor
from mycel.ops.operations import compat_ops as _c1
from mycel.ops.operations import compat_ops2 as _c2
from mycel.ops.operations._grad_util import VJP as _VJP
from mycel.ops.operations._grad_util import check_float as _float
from mycel.ops.operations._grad_util import check_same_shape as _check_same_shape
from mycel.ops.operations.compat_ops import _Composite
from mycel.ops.primitive import constexpr

_ops = _mycel.ops


class _VjpGrad(_Composite):
    """dx = the vjp of self._forward at x for dy: the forward's registry gradient. MindSpore's
    input order is (x, dy), or (dy, x) where _dy_first."""
    _dy_first = False

    def _call(self, a, b):
        x, dy = (b, a) if self._dy_first else (a, b)
        _check_same_shape(type(self).__name__, "dy", dy.shape, "x", x.shape)
        return _VJP(self._forward)(x, dy)


# GradOperation differentiates functions and Cells, not a bare registry op.
def _relu6(x):
    return _ops.relu6(x)


def _softplus(x):
    return _ops.softplus(x)


class ACosGrad(_VjpGrad):
    """-dy / sqrt(1 - x^2): the gradient of ACos at x."""

    def __init__(self):
        super().__init__()
        self._forward = _c2.ACos()


class AsinGrad(_VjpGrad):
    """dy / sqrt(1 - x^2): the gradient of Asin at x."""

    def __init__(self):
        super().__init__()
        self._forward = _c2.Asin()


@constexpr
def _is_complex(dtype):
    return str(dtype).lower().startswith("complex")


class AtanGrad(_VjpGrad):
    """dy / (1 + x^2): the gradient of Atan at x; of complex x, dy / conj(1 + x^2) (Mycel's
    complex convention, bprop_complex.h; Atan itself is real-only, so this is its one place)."""

    def __init__(self):
        super().__init__()
        self._forward = _c2.Atan()

    def _call(self, x, dy):
        if _is_complex(x.dtype):
            _check_same_shape("AtanGrad", "dy", dy.shape, "x", x.shape)
            return dy / _ops.conj(1.0 + x * x)
        _check_same_shape("AtanGrad", "dy", dy.shape, "x", x.shape)
        return _VJP(self._forward)(x, dy)


class ReLU6Grad(_VjpGrad):
    """ReLU6Grad(y_grad, x): y_grad where 0 < x <= 6, else 0."""
    _dy_first = True

    def __init__(self):
        super().__init__()
        self._forward = _relu6


class SoftplusGrad(_VjpGrad):
    """SoftplusGrad(gradients, features): gradients * sigmoid(features)."""
    _dy_first = True

    def __init__(self):
        super().__init__()
        self._forward = _softplus


class SoftShrinkGrad(_VjpGrad):
    """SoftShrinkGrad(input_grad, input_x): input_grad where |x| > lambd, else 0."""
    _dy_first = True

    def __init__(self, lambd=0.5):
        lambd = _float("SoftShrinkGrad", "lambd", lambd)
        if lambd < 0:
            raise ValueError(f"SoftShrinkGrad: lambd must be >= 0, got {lambd}")
        super().__init__(lambd=lambd)
        self._forward = _c2.SoftShrink(lambd)


class HShrinkGrad(_VjpGrad):
    """HShrinkGrad(gradients, features): gradients where |features| > lambd, else 0."""
    _dy_first = True

    def __init__(self, lambd=0.5):
        lambd = _float("HShrinkGrad", "lambd", lambd)
        if lambd < 0:
            raise ValueError(f"HShrinkGrad: lambd must be >= 0, got {lambd}")
        super().__init__(lambd=lambd)
        self._forward = _c2.HShrink(lambd)


class SigmoidCrossEntropyWithLogitsGrad(_VjpGrad):
    """(x, y, dout): dout * (sigmoid(x) - y), the gradient of SigmoidCrossEntropyWithLogits."""

    def __init__(self):
        super().__init__()
        self._forward = _c1.SigmoidCrossEntropyWithLogits()

    def _call(self, x, y, dout):
        _check_same_shape("SigmoidCrossEntropyWithLogitsGrad", "dout", dout.shape, "x", x.shape)
        return _VJP(self._forward)(x, y, dout)


class L2NormalizeGrad(_VjpGrad):
    """(input_x, out, dout): the gradient of L2Normalize(axis, epsilon) at input_x (out, the
    forward's output, is recomputed)."""

    def __init__(self, axis=0, epsilon=1e-4):
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise ValueError(f"L2NormalizeGrad: axis must be an int or a one-item tuple, got {axis!r}")
            axis = axis[0]
        super().__init__(axis=int(axis), epsilon=_float("L2NormalizeGrad", "epsilon", epsilon))
        self._forward = _c1.L2Normalize(self.axis, self.epsilon)

    def _call(self, x, out, dy):
        _check_same_shape("L2NormalizeGrad", "dout", dy.shape, "input_x", x.shape)
        return _VJP(self._forward)(x, dy)


@constexpr
def _kl_scale(shape, reduction):
    n = 1
    for d in shape:
        n *= d
    return {"sum": 1.0, "mean": 1.0 / max(n, 1), "batchmean": 1.0 / max(shape[0] if shape else 1, 1)}[reduction]


class KLDivLossGrad(_Composite):
    """(grads, x, target): MindSpore's -target * grads (divided by the element count for 'mean',
    the batch for 'batchmean'). For target >= 0 this is KLDivLoss's gradient; for a negative
    target MindSpore's forward gives 0 but its grad still -target * grads, and this follows."""

    def __init__(self, reduction="mean"):
        if reduction not in ("none", "mean", "batchmean", "sum"):
            raise ValueError(f"KLDivLossGrad: reduction must be 'none', 'mean', 'batchmean' or 'sum', "
                             f"got {reduction!r}")
        super().__init__(reduction=reduction)

    def _call(self, grads, x, target):
        _check_same_shape("KLDivLossGrad", "target", target.shape, "x", x.shape)
        if self.reduction == "none":
            _check_same_shape("KLDivLossGrad", "grads", grads.shape, "x", x.shape)
            return -target * grads
        if grads.size != 1:
            raise ValueError(f"KLDivLossGrad: with reduction '{self.reduction}' grads must hold one "
                             f"value, got shape {tuple(grads.shape)}")
        return -target * (_ops.reshape(grads, ()) * _kl_scale(x.shape, self.reduction))


class LRNGrad(_VjpGrad):
    """(grads, x, y): the gradient of LRN(depth_radius, bias, alpha, beta) at x (y, the forward's
    output, is recomputed)."""

    def __init__(self, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5):
        if isinstance(depth_radius, bool) or not isinstance(depth_radius, int) or depth_radius < 0:
            raise ValueError(f"LRNGrad: depth_radius must be an int >= 0, got {depth_radius!r}")
        super().__init__(depth_radius=depth_radius, bias=_float("LRNGrad", "bias", bias),
                         alpha=_float("LRNGrad", "alpha", alpha), beta=_float("LRNGrad", "beta", beta))
        self._forward = _c2.LRN(depth_radius, self.bias, self.alpha, self.beta)

    def _call(self, dy, x, y):
        _check_same_shape("LRNGrad", "grads", dy.shape, "x", x.shape)
        return _VJP(self._forward)(x, dy)


# Derivatives written on the forward's output y (MindSpore passes y, not x).

class SqrtGrad(_Composite):
    """(y, dy) with y = sqrt(x): dy / (2 y)."""

    def _call(self, y, dy):
        return dy * 0.5 / y


class InvGrad(_Composite):
    """(y, dy) with y = 1 / x: -dy * y^2 (integer tensors too)."""

    def _call(self, y, dy):
        return -(dy * y * y)


class EluGrad(_Composite):
    """(dy, y) with y = elu(x) (alpha 1): dy where y > 0, else dy * (y + 1)."""

    def _call(self, dy, y):
        return _ops.select(y > 0, dy, dy * (y + 1.0))


class AsinhGrad(_Composite):
    """(y, dy) with y = asinh(x): dy / cosh(y)."""

    def _call(self, y, dy):
        return dy / ((_ops.exp(y) + _ops.exp(-y)) * 0.5)


class AcoshGrad(_Composite):
    """(y, dy) with y = acosh(x): dy / sinh(y)."""

    def _call(self, y, dy):
        return dy / ((_ops.exp(y) - _ops.exp(-y)) * 0.5)


# Linear ops: the bprop's own backward op.

@constexpr
def _bias_axes(ndim, data_format):
    channel = ndim - 1 if data_format == "NHWC" or ndim < 3 else 1
    return tuple(d for d in range(ndim) if d != channel)


class BiasAddGrad(_Composite):
    """(dout): dout summed over every dim but the channel (1 for NCHW, last for NHWC), the
    gradient BiasAdd's broadcast add gives its bias."""

    def __init__(self, data_format="NCHW"):
        if data_format not in ("NCHW", "NHWC", "NCDHW"):
            raise ValueError(f"BiasAddGrad: data_format must be NCHW, NHWC or NCDHW, got {data_format!r}")
        super().__init__(data_format=data_format)

    def _call(self, dout):
        if dout.ndim < 2:
            raise ValueError(f"BiasAddGrad: dout must have rank >= 2, got shape {tuple(dout.shape)}")
        return _ops.sum(dout, _bias_axes(dout.ndim, self.data_format))


@constexpr
def _slice_paddings(shape, begin, size):
    begin, size = tuple(begin), tuple(size)
    if len(begin) != len(shape) or len(size) != len(shape):
        raise ValueError(f"SliceGrad: begin and size must have one entry per dim of x ({len(shape)}), "
                         f"got {begin!r} and {size!r}")
    pads = []
    for d, n in enumerate(shape):
        extent = n - begin[d] if size[d] == -1 else size[d]
        if begin[d] < 0 or extent < 0 or begin[d] + extent > n:
            raise ValueError(f"SliceGrad: begin {begin!r} and size {size!r} do not fit x's shape {tuple(shape)}")
        pads += [begin[d], n - begin[d] - extent]
    return tuple(pads)


class SliceGrad(_Composite):
    """(dy, x, begin, size): zeros shaped like x with dy at x[begin : begin + size], the pad the
    bprop of Slice emits."""

    def _call(self, dy, x, begin, size):
        return _ops.pad(dy, _slice_paddings(x.shape, begin, size))


@constexpr
def _shape_tuple(who, shape):
    if not isinstance(shape, (tuple, list)) or any(isinstance(s, bool) or not isinstance(s, int) or s < 0
                                                   for s in shape):
        raise TypeError(f"{who}: the shape must be a tuple of ints >= 0, got {shape!r}")
    return tuple(shape)


@constexpr
def _moved_as_float(dtype):
    """bool and integer values go through float64 (exact: they are only copied or zero)."""
    return str(dtype).lower().startswith(("bool", "int", "uint"))


class StridedSliceGrad(_Composite):
    """(dy, shapex, begin, end, strides): zeros of shapex with dy where StridedSlice (with these
    masks) read, through the registry's strided_slice_grad."""

    def __init__(self, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0):
        masks = dict(begin_mask=begin_mask, end_mask=end_mask, ellipsis_mask=ellipsis_mask,
                     new_axis_mask=new_axis_mask, shrink_axis_mask=shrink_axis_mask)
        for k, v in masks.items():
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"StridedSliceGrad: {k} must be an int, got {v!r}")
        super().__init__(**masks)

    def _call(self, dy, shapex, begin, end, strides):
        like = _ops.zeros(_shape_tuple("StridedSliceGrad", shapex), dy.dtype)
        attrs = dict(begin=tuple(begin), end=tuple(end), strides=tuple(strides), begin_mask=self.begin_mask,
                     end_mask=self.end_mask, ellipsis_mask=self.ellipsis_mask,
                     new_axis_mask=self.new_axis_mask, shrink_axis_mask=self.shrink_axis_mask)
        # MindSpore accepts dy with the slice's elements in any shape of the same size
        sliced = _ops.strided_slice(like, **attrs)
        if tuple(dy.shape) != tuple(sliced.shape):
            dy = _ops.reshape(dy, tuple(sliced.shape))
        if _moved_as_float(dy.dtype):  # strided_slice_grad's kernel is floating-point only
            wide = _ops.cast(dy, _float64)
            out = _ops.strided_slice_grad(wide, _ops.cast(like, _float64), **attrs)
            return _ops.cast(out, dy.dtype)
        return _ops.strided_slice_grad(dy, like, **attrs)


@constexpr
def _resized_shape(who, shape, size):
    size = tuple(size)
    if len(size) != 2 or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in size):
        raise ValueError(f"{who}: size must be a tuple of two ints >= 1 (H, W), got {size!r}")
    return tuple(shape[:-2]) + size


class ResizeBilinearGrad(_Composite):
    """(grads, original_image): grads spread onto original_image's pixels by the bilinear weights
    (the registry's resize_bilinear_grad)."""

    def __init__(self, align_corners=False, half_pixel_centers=False):
        if align_corners and half_pixel_centers:
            raise ValueError("ResizeBilinearGrad: align_corners and half_pixel_centers cannot both be True")
        super().__init__(align_corners=bool(align_corners), half_pixel_centers=bool(half_pixel_centers))

    def _call(self, grads, original_image):
        if grads.ndim != 4 or original_image.ndim != 4:
            raise ValueError(f"ResizeBilinearGrad: grads and original_image must be NCHW, got shapes "
                             f"{tuple(grads.shape)} and {tuple(original_image.shape)}")
        like = original_image if original_image.dtype == grads.dtype else _ops.cast(original_image, grads.dtype)
        return _ops.resize_bilinear_grad(grads, like, align_corners=self.align_corners,
                                         half_pixel_centers=self.half_pixel_centers)


class ResizeNearestNeighborGrad(_Composite):
    """(grads, size): each pixel of the (N, C, *size) input sums the grads that copied it."""

    def __init__(self, align_corners=False):
        super().__init__(align_corners=bool(align_corners))

    def _call(self, grads, size):
        if grads.ndim != 4:
            raise ValueError(f"ResizeNearestNeighborGrad: grads must be NCHW, got shape {tuple(grads.shape)}")
        like = _ops.zeros(_resized_shape("ResizeNearestNeighborGrad", grads.shape, size), grads.dtype)
        return _ops.resize_nearest_neighbor_grad(grads, like, align_corners=self.align_corners)


@constexpr
def _norm_stat_shape(shape, begin_norm_axis):
    axis = begin_norm_axis % len(shape)
    return tuple(shape[:axis]) + (1,) * (len(shape) - axis)


class LayerNormGrad(_Composite):
    """(x, dy, variance, mean, gamma) -> (dx, dgamma, dbeta) through the registry's
    layer_norm_grad (rstd = 1 / sqrt(variance + epsilon), mean and rstd given no sensitivity)."""

    def __init__(self, begin_norm_axis=1, begin_params_axis=1, epsilon=1e-12):
        for name, v in (("begin_norm_axis", begin_norm_axis), ("begin_params_axis", begin_params_axis)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"LayerNormGrad: {name} must be an int, got {v!r}")
        super().__init__(begin_norm_axis=begin_norm_axis, begin_params_axis=begin_params_axis,
                         epsilon=_float("LayerNormGrad", "epsilon", epsilon))

    def _call(self, x, dy, variance, mean, gamma):
        _check_same_shape("LayerNormGrad", "dy", dy.shape, "x", x.shape)
        if not -x.ndim <= self.begin_norm_axis < x.ndim:
            raise ValueError(f"LayerNormGrad: begin_norm_axis {self.begin_norm_axis} is out of range for "
                             f"rank {x.ndim}")
        stat = _norm_stat_shape(x.shape, self.begin_norm_axis)
        mean = _ops.reshape(_ops.cast(mean, x.dtype), stat)
        rstd = _ops.reshape(_ops.rsqrt(_ops.cast(variance, x.dtype) + self.epsilon), stat)
        zeros = _ops.zeros_like(mean)
        return _ops.layer_norm_grad(dy, x, gamma, mean, rstd, zeros, zeros,
                                    begin_norm_axis=self.begin_norm_axis,
                                    begin_params_axis=self.begin_params_axis)


def _conv_pairs(who, name, value, n):
    vals = (value,) * n if isinstance(value, int) and not isinstance(value, bool) else tuple(value)
    if len(vals) == 4 and n == 2:  # MindSpore's (1, 1, h, w) form
        vals = vals[2:]
    if len(vals) != n or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in vals):
        raise ValueError(f"{who}: {name} must be an int or a tuple of {n} ints, got {value!r}")
    return vals


class Conv2DBackpropFilter(_Composite):
    """(dout, x, filter_size): the gradient of Conv2D with respect to its weight, through the
    registry's conv2d_backprop_filter (the op Conv2D's bprop calls)."""

    def __init__(self, out_channel, kernel_size, pad_mode="valid", pad=0, pad_list=(0, 0, 0, 0), mode=1,
                 stride=(1, 1), dilation=(1, 1, 1, 1), group=1, data_format="NCHW"):
        who = "Conv2DBackpropFilter"
        if data_format != "NCHW":
            raise ValueError(f"{who}: data_format must be 'NCHW', got {data_format!r}")
        mode_ = str(pad_mode).lower()
        if mode_ not in ("valid", "same", "pad"):
            raise ValueError(f"{who}: pad_mode must be 'valid', 'same' or 'pad', got {pad_mode!r}")
        pads = _conv_pairs(who, "pad", pad, 4) if not isinstance(pad, int) else (pad,) * 4
        if mode_ != "pad" and any(pads):
            raise ValueError(f"{who}: pad must be 0 unless pad_mode is 'pad', got {pad!r}")
        super().__init__(out_channel=out_channel, kernel_size=kernel_size, pad_mode=mode_, pad=pads,
                         pad_list=tuple(pad_list), mode=mode, stride=_conv_pairs(who, "stride", stride, 2),
                         dilation=_conv_pairs(who, "dilation", dilation, 2), group=int(group),
                         data_format=data_format)

    def _call(self, dout, x, filter_size):
        return _ops.conv2d_backprop_filter(
            dout, x, filter_size=_shape_tuple("Conv2DBackpropFilter", filter_size), stride=self.stride,
            pad_mode=self.pad_mode, pad=self.pad, dilation=self.dilation, groups=self.group)


@constexpr
def _concat_axis_row(ranks, axis):
    """The int64 one-hot row of the (normalized) axis, checking the inputs' ranks."""
    rank = ranks[0]
    if not -rank <= axis < rank:
        raise ValueError(f"ConcatOffset: axis {axis} is out of range for rank {rank}")
    if any(r != rank for r in ranks):
        raise ValueError(f"ConcatOffset: every input must have rank {rank}, got ranks {ranks!r}")
    return Tensor(np.eye(rank, dtype=np.int64)[axis % rank])


class ConcatOffset(_Composite):
    """(tuple of N tensors): each input's offset in Concat(axis)'s output, an (N, rank) int64
    tensor (zeros but at axis), what Concat's gradient slices by. The sizes along axis may be
    known only at run time (the offsets are then computed by the program)."""

    def __init__(self, N=2, axis=0):
        super().__init__(N=N, axis=axis)

    def _call(self, input_x):
        if not isinstance(input_x, (tuple, list)) or len(input_x) == 0:
            raise TypeError(f"ConcatOffset: input_x must be a non-empty tuple of Tensors, got {type(input_x).__name__}")
        row = _concat_axis_row(tuple(t.ndim for t in input_x), self.axis)
        axis = self.axis % input_x[0].ndim
        rows = ()
        at = _ops.zeros((), _mycel.dtype.int64)
        for t in input_x:
            rows = rows + (row * at,)
            at = at + t.shape[axis]
        return _ops.stack(rows, 0)


class DropoutGrad(_Composite):
    """(dy, mask): dy * mask / keep_prob, Dropout's gradient for the mask it drew."""

    def __init__(self, keep_prob=0.5):
        keep_prob = _float("DropoutGrad", "keep_prob", keep_prob)
        if not 0.0 < keep_prob <= 1.0:
            raise ValueError(f"DropoutGrad: keep_prob must be in (0, 1], got {keep_prob}")
        super().__init__(keep_prob=keep_prob)

    def _call(self, dy, mask):
        _check_same_shape("DropoutGrad", "mask", mask.shape, "dy", dy.shape)
        return dy * _ops.cast(mask, dy.dtype) * (1.0 / self.keep_prob)


# The pooling ones: grad_ops_pool.py.
from mycel.ops.operations.grad_ops_pool import (  # noqa: E402,F401
    MaxPool3DGradGrad, MaxPoolGradGrad, MaxPoolGradGradWithArgmax, MaxPoolGradWithArgmax,
    MaxPoolGradWithArgmaxV2, PSROIPooling, PSROIPoolingGrad)
# DeformableOffsets and its grad: deformable_ops.py.
from mycel.ops.operations.deformable_ops import DeformableOffsets, DeformableOffsetsGrad  # noqa: E402,F401

COMPOSITES = [
    "ACosGrad", "AsinGrad", "AtanGrad", "ReLU6Grad", "SoftplusGrad", "SoftShrinkGrad", "HShrinkGrad",
    "SigmoidCrossEntropyWithLogitsGrad", "L2NormalizeGrad", "KLDivLossGrad", "LRNGrad", "SqrtGrad",
    "InvGrad", "EluGrad", "AsinhGrad", "AcoshGrad", "BiasAddGrad", "SliceGrad", "StridedSliceGrad",
    "ResizeBilinearGrad", "ResizeNearestNeighborGrad", "LayerNormGrad", "Conv2DBackpropFilter",
    "ConcatOffset", "MaxPoolGradWithArgmax", "MaxPoolGradWithArgmaxV2", "MaxPoolGradGradWithArgmax",
    "MaxPoolGradGrad", "DropoutGrad", "PSROIPooling", "PSROIPoolingGrad", "DeformableOffsets", "DeformableOffsetsGrad",
    "MaxPool3DGradGrad",
]
