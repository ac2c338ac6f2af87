"""MindSpore's pooling-with-indices, channel-dropout, transposed/depthwise convolution and CTC
decoding primitive classes (issue 14): configured once, called with tensors, computed by the
functional composites of ops/function_more/nn2.py and registry ops. (compat_ops3.py holds the
scatter, reshuffle and small primitives.)"""
import math

import numpy as np

from mycel import _mycel
from mycel.common.dtype import bool_, int32
from mycel.common.tensor import Tensor
from mycel.ops.function_more import nn2 as _nn2
from mycel.ops.operations.compat_ops import _Composite
from mycel.ops.primitive import constexpr

_ops = _mycel.ops


def _pair(who, arg, value, n=2):
    vals = (value,) * n if isinstance(value, int) and not isinstance(value, bool) else tuple(value)
    # MindSpore also accepts the 4-tuple (1, 1, h, w) form for 2-d windows
    if len(vals) == n + 2 and vals[:2] == (1, 1):
        vals = vals[2:]
    if len(vals) != n or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in vals):
        raise ValueError(f"{who}: {arg} must be an int or a tuple of {n} ints >= 1, got {value!r}")
    return vals


def _pad_mode(who, pad_mode, allowed=("valid", "same", "pad")):
    mode = str(pad_mode).lower()
    if mode not in allowed:
        raise ValueError(f"{who}: pad_mode must be one of {allowed}, got {pad_mode!r}")
    return mode


def _same_pads(size, k, s):
    """TensorFlow's 'same' padding of one dim: (before, after), output ceil(size / s)."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


@constexpr
def _argmax_geometry(shape, kernel, stride, pad_mode):
    """Padding (t, b, l, r), output size, and each output row's/column's window origin in the
    unpadded input ((OH, 1) and (1, OW) int64 tensors)."""
    (kh, kw), (sh, sw) = kernel, stride
    h, w = shape[-2], shape[-1]
    if pad_mode == "same":
        (t, b), (l, r) = _same_pads(h, kh, sh), _same_pads(w, kw, sw)
    else:
        t = b = l = r = 0
    if h + t + b < kh or w + l + r < kw:
        raise ValueError(f"MaxPoolWithArgmax: a {kh}x{kw} window does not fit the {h}x{w} input")
    oh, ow = (h + t + b - kh) // sh + 1, (w + l + r - kw) // sw + 1
    rows = Tensor(np.arange(oh, dtype=np.int64).reshape(oh, 1) * sh - t)
    cols = Tensor(np.arange(ow, dtype=np.int64).reshape(1, ow) * sw - l)
    return (t, b, l, r), oh, ow, rows, cols


def max_pool2d_with_argmax(x, kernel, stride, pad_mode):
    """(window maxima, argmax) over (N, C, H, W); argmax is h * W + w in the unpadded input
    plane (the first maximum in the window's row-major order). One strided view per kernel
    offset of the -inf padded input, then max and argmax across the offsets."""
    kh, kw = kernel
    sh, sw = stride
    w = x.shape[-1]
    (t, b, l, r), oh, ow, rows, cols = _argmax_geometry(x.shape, kernel, stride, pad_mode)
    padded = _ops.pad(x, (0, 0) * (x.ndim - 2) + (t, b, l, r), value=-math.inf) if t or b or l or r else x
    views = []
    for i in range(kh):
        for j in range(kw):
            views.append(padded[..., i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw])
    stacked = _ops.stack(views, 0)
    offset = _ops.argmax(stacked, 0)
    index = (rows + offset // kw) * w + cols + offset % kw
    return _ops.max(stacked, (0,)), index


class MaxPoolWithArgmax(_Composite):
    """Max pooling of (N, C, H, W) that also returns where each maximum was (h * W + w in its
    input plane, int32): pad_mode 'valid' or 'same' (TensorFlow's padding)."""

    def __init__(self, kernel_size=1, strides=1, pad_mode="valid", data_format="NCHW"):
        who = "MaxPoolWithArgmax"
        if data_format != "NCHW":
            raise ValueError(f"{who}: data_format must be 'NCHW' (the CPU layout), got {data_format!r}")
        super().__init__(kernel_size=_pair(who, "kernel_size", kernel_size),
                         strides=_pair(who, "strides", strides), pad_mode=_pad_mode(who, pad_mode, ("valid", "same")),
                         data_format=data_format)

    def _call(self, x):
        if x.ndim != 4:
            raise ValueError(f"MaxPoolWithArgmax: x must be (N, C, H, W), got shape {tuple(x.shape)}")
        values, index = max_pool2d_with_argmax(x, self.kernel_size, self.strides, self.pad_mode)
        return values, _ops.cast(index, int32)


class _ChannelDropout(_Composite):
    _rank = 4

    def __init__(self, keep_prob=0.5):
        who = type(self).__name__
        if isinstance(keep_prob, bool) or not isinstance(keep_prob, (int, float)) or not 0.0 <= keep_prob <= 1.0:
            raise ValueError(f"{who}: keep_prob must be a float in [0, 1], got {keep_prob!r}")
        super().__init__(keep_prob=float(keep_prob))

    def _call(self, x):
        who = type(self).__name__
        if x.ndim != self._rank:
            raise ValueError(f"{who}: x must have rank {self._rank}, got shape {tuple(x.shape)}")
        keep = self.keep_prob
        # One draw per (sample, channel): shaped by a tensor, so N and C may be known only at
        # run time (set_inputs with None dims); bernoulli reads its input's shape, not values.
        per_channel = _ops.sum(x, tuple(range(2, self._rank)), True)
        mask = _ops.cast(_ops.bernoulli(per_channel, p=keep), bool_)
        mask = _ops.broadcast_like(mask, x)
        scale = 0.0 if keep == 0.0 else 1.0 / keep
        return x * _ops.cast(mask, x.dtype) * scale, mask


class Dropout2D(_ChannelDropout):
    """Zeroes whole channels of (N, C, H, W) with probability 1 - keep_prob, scales the rest by
    1 / keep_prob; returns (output, mask) with mask the kept positions (bool)."""
    _rank = 4


class Dropout3D(_ChannelDropout):
    """Dropout2D for (N, C, D, H, W)."""
    _rank = 5


def _conv_pads(who, pad, n):
    vals = (pad,) * (2 * n) if isinstance(pad, int) and not isinstance(pad, bool) else tuple(pad)
    if len(vals) != 2 * n or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in vals):
        raise ValueError(f"{who}: pad must be an int or a tuple of {2 * n} ints >= 0, got {pad!r}")
    return vals


class Conv2DTranspose(_Composite):
    """MindSpore's Conv2DTranspose (= Conv2DBackpropInput): called with (dout, weight,
    input_size), it returns the gradient of conv2d with respect to an input of input_size."""

    def __init__(self, out_channel, kernel_size, pad_mode="valid", pad=0, pad_list=None, mode=1, stride=1,
                 dilation=1, group=1, data_format="NCHW"):
        who = "Conv2DTranspose"
        mode_ = _pad_mode(who, pad_mode)
        pads = _conv_pads(who, pad if pad_list is None else pad_list, 2)
        if mode_ != "pad" and any(pads):
            raise ValueError(f"{who}: pad must be 0 unless pad_mode is 'pad', got {pad!r}")
        if data_format != "NCHW":
            raise ValueError(f"{who}: data_format must be 'NCHW', got {data_format!r}")
        super().__init__(out_channel=out_channel, kernel_size=_pair(who, "kernel_size", kernel_size),
                         pad_mode=mode_, pad=pads, mode=mode, stride=_pair(who, "stride", stride),
                         dilation=_pair(who, "dilation", dilation), group=group, data_format=data_format)

    def _call(self, dout, weight, input_size):
        return _ops.conv2d_backprop_input(dout, weight, input_size=tuple(input_size), stride=self.stride,
                                          pad_mode=self.pad_mode, pad=self.pad, dilation=self.dilation,
                                          groups=self.group)


class Conv3DTranspose(_Composite):
    """3-d transposed convolution of dout (N, C_in, D, H, W) by weight (C_in, C_out / group, kd,
    kh, kw). Output size per dim: 'same' D*stride, 'valid' (D-1)*stride + dilation*(k-1) + 1,
    'pad' (D-1)*stride - (head + tail) + dilation*(k-1) + output_padding + 1."""

    def __init__(self, in_channel, out_channel, kernel_size, mode=1, pad_mode="valid", pad=0, stride=1,
                 dilation=1, group=1, output_padding=0, data_format="NCDHW"):
        who = "Conv3DTranspose"
        mode_ = _pad_mode(who, pad_mode)
        pads = _conv_pads(who, pad, 3)
        if mode_ != "pad" and any(pads):
            raise ValueError(f"{who}: pad must be 0 unless pad_mode is 'pad', got {pad!r}")
        outpad = (output_padding,) * 3 if isinstance(output_padding, int) else tuple(output_padding)
        if len(outpad) == 5:
            outpad = outpad[2:]
        stride_, dil = _pair(who, "stride", stride, 3), _pair(who, "dilation", dilation, 3)
        if len(outpad) != 3 or any(o < 0 or o >= max(s, d) for o, s, d in zip(outpad, stride_, dil)):
            raise ValueError(f"{who}: output_padding must be 3 ints in [0, max(stride, dilation)), got "
                             f"{output_padding!r}")
        super().__init__(in_channel=in_channel, out_channel=out_channel,
                         kernel_size=_pair(who, "kernel_size", kernel_size, 3), mode=mode, pad_mode=mode_,
                         pad=pads, stride=stride_, dilation=dil, group=group, output_padding=outpad,
                         data_format=data_format)

    def _call(self, dout, weight):
        if dout.ndim != 5 or weight.ndim != 5:
            raise ValueError(f"Conv3DTranspose: dout and weight must have rank 5, got {tuple(dout.shape)} and "
                             f"{tuple(weight.shape)}")
        # the batch comes from dout (conv3d_backprop_input reads it there), so a dynamic batch
        # leaves input_size a compile-time constant
        size = [1, self.out_channel]
        for i in range(3):
            k, s, d = self.kernel_size[i], self.stride[i], self.dilation[i]
            n = dout.shape[2 + i]
            if self.pad_mode == "same":
                size.append(n * s)
            elif self.pad_mode == "valid":
                size.append((n - 1) * s + d * (k - 1) + 1)
            else:
                size.append((n - 1) * s - self.pad[2 * i] - self.pad[2 * i + 1] + d * (k - 1)
                            + self.output_padding[i] + 1)
        return _ops.conv3d_backprop_input(dout, weight, input_size=tuple(size), stride=self.stride,
                                          pad_mode=self.pad_mode, pad=self.pad, dilation=self.dilation,
                                          groups=self.group)


class DepthwiseConv2dNative(_Composite):
    """Depthwise convolution: each of x's C channels convolved with channel_multiplier filters of
    depth 1; weight (channel_multiplier, C, kh, kw); output channel c * channel_multiplier + q
    is channel c by filter q."""

    def __init__(self, channel_multiplier, kernel_size, mode=3, pad_mode="valid", pad=0, stride=1, dilation=1,
                 group=1):
        who = "DepthwiseConv2dNative"
        mode_ = _pad_mode(who, pad_mode)
        pads = _conv_pads(who, pad, 2)
        if mode_ != "pad" and any(pads):
            raise ValueError(f"{who}: pad must be 0 unless pad_mode is 'pad', got {pad!r}")
        if isinstance(channel_multiplier, bool) or not isinstance(channel_multiplier, int) or channel_multiplier < 1:
            raise ValueError(f"{who}: channel_multiplier must be a positive int, got {channel_multiplier!r}")
        super().__init__(channel_multiplier=channel_multiplier, kernel_size=_pair(who, "kernel_size", kernel_size),
                         mode=mode, pad_mode=mode_, pad=pads, stride=_pair(who, "stride", stride),
                         dilation=_pair(who, "dilation", dilation), group=group)

    def _call(self, x, w):
        who = "DepthwiseConv2dNative"
        if x.ndim != 4 or w.ndim != 4:
            raise ValueError(f"{who}: x and w must have rank 4, got {tuple(x.shape)} and {tuple(w.shape)}")
        m, c = self.channel_multiplier, x.shape[1]
        if tuple(w.shape) != (m, c) + tuple(self.kernel_size):
            raise ValueError(f"{who}: w must have shape {(m, c) + tuple(self.kernel_size)} (channel_multiplier, "
                             f"channels, kh, kw), got {tuple(w.shape)}")
        grouped = _ops.reshape(_ops.transpose(w, (1, 0, 2, 3)), (c * m, 1) + tuple(self.kernel_size))
        return _ops.conv2d(x, grouped, None, stride=self.stride, pad_mode=self.pad_mode, pad=self.pad,
                           dilation=self.dilation, groups=c)


class CTCGreedyDecoder(_Composite):
    """ops.ctc_greedy_decoder as a primitive: (inputs, sequence_length) -> (decoded_indices,
    decoded_values, decoded_shape, log_probability)."""

    def __init__(self, merge_repeated=True):
        super().__init__(merge_repeated=bool(merge_repeated))

    def _call(self, inputs, sequence_length):
        return _nn2.ctc_greedy_decoder(inputs, sequence_length, self.merge_repeated)


def lars_gradient(weight, gradient, w_square_sum, g_square_sum, weight_decay, learning_rate, epsilon, coefficient,
                  use_clip):
    """LARS's rescaled gradient: ratio * (g + wd * w) with ratio = coefficient * |w| / (|g| +
    wd * |w| + epsilon) (1 where |w| or |g| is 0), min(ratio / lr, 1) with use_clip."""
    w_norm, g_norm = _ops.sqrt(w_square_sum), _ops.sqrt(g_square_sum)
    ratio = coefficient * w_norm / (g_norm + weight_decay * w_norm + epsilon)
    ok = _ops.logical_and(_ops.greater(w_norm, 0.0), _ops.greater(g_norm, 0.0))
    ratio = _ops.select(ok, ratio, _ops.ones_like(ratio))
    if use_clip:
        ratio = _ops.minimum(ratio / learning_rate, _ops.ones_like(ratio))
    return ratio * (gradient + weight_decay * weight)


class LARSUpdate(_Composite):
    """LARSUpdate(epsilon, hyperpara, use_clip)(weight, gradient, norm_weight, norm_gradient,
    weight_decay, learning_rate): the LARS gradient (nn.LARS); the norms are sums of squares."""

    def __init__(self, epsilon=1e-05, hyperpara=0.001, use_clip=False):
        for arg, v in (("epsilon", epsilon), ("hyperpara", hyperpara)):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"LARSUpdate: {arg} must be a float, got {type(v).__name__}")
        super().__init__(epsilon=float(epsilon), hyperpara=float(hyperpara), use_clip=bool(use_clip))

    def _call(self, weight, gradient, norm_weight, norm_gradient, weight_decay, learning_rate):
        return lars_gradient(weight, gradient, norm_weight, norm_gradient, weight_decay, learning_rate,
                             self.epsilon, self.hyperpara, self.use_clip)


COMPOSITES = ["LARSUpdate", "MaxPoolWithArgmax", "Dropout2D", "Dropout3D", "Conv2DTranspose", "Conv3DTranspose",
              "DepthwiseConv2dNative", "CTCGreedyDecoder"]
