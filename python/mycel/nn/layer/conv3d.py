"""Conv3d, Conv3dTranspose, MaxPool3d and AvgPool3d over NCDHW input, with MindSpore's arguments
and defaults (padding: an int, 3 ints (d, h, w) or 6 ints (head, tail, top, bottom, left, right))."""
import math
import numbers

import numpy as np

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.initializer import HeUniform, Uniform
from mycel.common.layer_checks import input_dtype_error
from mycel.common.pool_geometry3d import ceil_pads3, dilated_taps3, flat_pads3, window_counts3
from mycel.common.tensor import Tensor
from mycel.common.validator import check_rank
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_channels, check_pad_mode, make_param, window_padding


def triple(value, who, arg, allow_zero=False):
    """An int or 3 ints as a triple of ints >= 1 (or >= 0 with allow_zero)."""
    vals = (value,) * 3 if isinstance(value, numbers.Integral) and not isinstance(value, bool) else value
    low = 0 if allow_zero else 1
    if not isinstance(vals, (tuple, list)) or len(vals) != 3 or \
            any(isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low for v in vals):
        raise ValueError(f"{who}: '{arg}' must be an int or a tuple of 3 ints >= {low}, got {value!r}")
    return tuple(int(v) for v in vals)


class _Conv3dBase(Cell):
    """What Conv3d and Conv3dTranspose share. `transposed` swaps the weight's channel dims as
    MindSpore lays them out: (out, in / group, kd, kh, kw) for Conv3d, (in, out / group, ...) for
    Conv3dTranspose."""

    def __init__(self, who, in_channels, out_channels, kernel_size, stride, pad_mode, padding, dilation, group,
                 has_bias, weight_init, bias_init, data_format, dtype, transposed):
        super().__init__()
        check_channels(self, who, in_channels, out_channels, group)
        if data_format != "NCDHW":
            raise ValueError(f"{who}: only data_format='NCDHW' is supported, got {data_format!r}")
        self.kernel_size = triple(kernel_size, who, "kernel_size")
        self.stride = triple(stride, who, "stride")
        self.dilation = triple(dilation, who, "dilation")
        self.pad_mode = check_pad_mode(pad_mode, who)
        self.padding = window_padding(padding, self.pad_mode, who, 3, allow_one=True)
        self.has_bias = bool(has_bias)
        rows, cols = (in_channels, out_channels) if transposed else (out_channels, in_channels)
        shape = (rows, cols // group) + self.kernel_size
        self.weight = make_param(weight_init if weight_init is not None else HeUniform(math.sqrt(5)),
                                 shape, dtype, "weight")
        fan_in = shape[1] * int(np.prod(self.kernel_size))
        self.bias = make_param(bias_init if bias_init is not None else Uniform(1 / math.sqrt(fan_in)),
                               (out_channels,), dtype, "bias") if self.has_bias else None

    def _check(self, who, x):
        check_rank(who, "x", x.ndim, (5,))
        if x.dtype != self.weight.dtype:  # say which dtype came from the user, which from the layer
            raise TypeError(input_dtype_error(who, x.dtype, self.weight.dtype))

    def extend_repr(self):
        return (f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}, pad_mode={self.pad_mode}, "
                f"padding={self.padding}, dilation={self.dilation}, group={self.group}, has_bias={self.has_bias}")


class Conv3d(_Conv3dBase):
    """3-d convolution over (N, C, D, H, W). pad_mode "same" (the default) keeps ceil(D/stride)
    per dim, "valid" pads nothing, "pad" uses `padding`."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same", padding=0, dilation=1,
                 group=1, has_bias=False, weight_init=None, bias_init=None, data_format="NCDHW",
                 dtype=mstype.float32):
        super().__init__("Conv3d", in_channels, out_channels, kernel_size, stride, pad_mode, padding, dilation,
                         group, has_bias, weight_init, bias_init, data_format, dtype, transposed=False)

    def construct(self, x):
        self._check("Conv3d", x)
        return ops.conv3d(x, self.weight, self.bias, stride=self.stride, pad_mode=self.pad_mode, pad=self.padding,
                          dilation=self.dilation, groups=self.group)


def _transpose_extra(kernel, stride, dilation, pad_mode, pads, output_padding):
    """b in the transposed output size D*stride + b of one dim (see Conv3dTranspose)."""
    if pad_mode == "same":
        return 0
    if pad_mode == "valid":
        return max(dilation * (kernel - 1) - stride + 1, 0)
    return dilation * (kernel - 1) + output_padding + 1 - stride - pads[0] - pads[1]


class Conv3dTranspose(_Conv3dBase):
    """3-d transposed convolution: the gradient of Conv3d with respect to its input, as a layer.
    Output size per dim: "same" D*stride; "valid" D*stride + max(dilation*(k-1) - stride + 1, 0);
    "pad" (D-1)*stride - (head+tail) + dilation*(k-1) + output_padding + 1."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same", padding=0, dilation=1,
                 group=1, output_padding=0, has_bias=False, weight_init=None, bias_init=None, data_format="NCDHW",
                 dtype=mstype.float32):
        who = "Conv3dTranspose"
        super().__init__(who, in_channels, out_channels, kernel_size, stride, pad_mode, padding, dilation,
                         group, has_bias, weight_init, bias_init, data_format, dtype, transposed=True)
        self.output_padding = triple(output_padding, who, "output_padding", allow_zero=True)
        if any(self.output_padding) and self.pad_mode != "pad":
            raise ValueError(f"{who}: output_padding must be 0 unless pad_mode is 'pad', got "
                             f"output_padding={output_padding!r} with pad_mode={self.pad_mode!r}")
        if any(o >= max(s, d) for o, s, d in zip(self.output_padding, self.stride, self.dilation)):
            raise ValueError(f"{who}: output_padding {self.output_padding} must be smaller than stride "
                             f"{self.stride} or dilation {self.dilation}")
        self._extra = tuple(_transpose_extra(self.kernel_size[i], self.stride[i], self.dilation[i], self.pad_mode,
                                             self.padding[2 * i:2 * i + 2], self.output_padding[i])
                            for i in range(3))

    def construct(self, x):
        self._check("Conv3dTranspose", x)
        n, _, d, h, w = x.shape
        size = (n, self.out_channels, d * self.stride[0] + self._extra[0], h * self.stride[1] + self._extra[1],
                w * self.stride[2] + self._extra[2])
        y = ops.conv3d_backprop_input(x, self.weight, input_size=size, stride=self.stride, pad_mode=self.pad_mode,
                                      pad=self.padding, dilation=self.dilation, groups=self.group)
        if self.has_bias:
            y = y + ops.reshape(self.bias, (1, self.out_channels, 1, 1, 1))
        return y


class _Pool3d(Cell):
    def __init__(self, kernel_size, stride, pad_mode, padding, ceil_mode, who):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride  # read back as given (MindSpore's)
        self._kernel = triple(kernel_size, who, "kernel_size")
        self._stride = triple(stride, who, "stride")
        self.pad_mode = check_pad_mode(pad_mode, who)
        self.padding = window_padding(padding, self.pad_mode, who, 3, allow_one=True)
        self.ceil_mode = bool(ceil_mode)
        if self.ceil_mode and self.pad_mode == "same":
            raise ValueError(f"{who}: ceil_mode needs pad_mode 'valid' or 'pad', got 'same'")
        if any(2 * max(self.padding[2 * i:2 * i + 2]) > self._kernel[i] for i in range(3)):
            raise ValueError(f"{who}: padding {self.padding} must be at most half the kernel size {self._kernel}")

    def extend_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, pad_mode={self.pad_mode}"


class MaxPool3d(_Pool3d):
    """Max over kernel_size windows of (N, C, D, H, W) or (C, D, H, W) input moved by stride;
    pad_mode "valid" (default), "same" or "pad"; ceil_mode keeps a last, partial window (padding
    is never the maximum). dilation spaces a window's taps; return_indices also returns, as int64,
    each maximum's flat index into its channel's D*H*W input (the first one where taps tie)."""

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__(kernel_size, stride, pad_mode, padding, ceil_mode, "MaxPool3d")
        self.dilation, self.return_indices = dilation, bool(return_indices)
        self._dilation = triple(dilation, "MaxPool3d", "dilation")
        self._taps = self.return_indices or self._dilation != (1, 1, 1)

    def construct(self, x):
        check_rank("MaxPool3d", "x", x.ndim, (4, 5))
        if self._taps:
            return self._construct_taps(x)
        if self.ceil_mode:  # pad with -inf (never the maximum) up to the ceil_mode size
            pads = ceil_pads3(x.shape, self._kernel, self._stride, self.padding, True)
            x = ops.pad(x, flat_pads3(x.ndim, pads), value=-math.inf)
            return ops.max_pool3d(x, kernel_size=self._kernel, strides=self._stride)
        return ops.max_pool3d(x, kernel_size=self._kernel, strides=self._stride, pad_mode=self.pad_mode,
                              pad=self.padding)

    def _construct_taps(self, x):
        # Every tap of the (dilated) window as a strided slice of the -inf padded input, stacked on
        # a new axis before D: the maximum over it, and its first position as a flat input index.
        # max_pool3d has no dilation or argmax output; this costs one slice per tap.
        pads, taps, base, offsets = dilated_taps3(x.shape, self._kernel, self._stride, self._dilation,
                                                  self.pad_mode, self.padding, self.ceil_mode)
        padded = ops.pad(x, flat_pads3(x.ndim, pads), value=-math.inf)
        parts = [ops.strided_slice(padded, begin, end, strides) for begin, end, strides in taps]
        stacked = ops.stack(parts, x.ndim - 3)
        out = ops.max(stacked, (x.ndim - 3,))
        if not self.return_indices:
            return out
        first = ops.argmax(stacked, x.ndim - 3)
        return out, base + ops.gather(offsets, first, 0)


class AvgPool3d(_Pool3d):
    """Mean over kernel_size windows. With pad_mode "pad", count_include_pad (default True)
    decides whether the padding counts in the divisor; "same" never counts it. ceil_mode keeps a
    last, partial window (its overhang never counts); divisor_override replaces the divisor."""

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__(kernel_size, stride, pad_mode, padding, ceil_mode, "AvgPool3d")
        self.count_include_pad = bool(count_include_pad) and self.pad_mode == "pad"
        if divisor_override is not None and (isinstance(divisor_override, bool) or
                                             not isinstance(divisor_override, int) or divisor_override <= 0):
            raise ValueError(f"AvgPool3d: divisor_override must be a positive int, got {divisor_override!r}")
        if divisor_override is not None and self.pad_mode == "same":
            raise ValueError("AvgPool3d: divisor_override needs pad_mode 'valid' or 'pad', got 'same'")
        self.divisor_override = divisor_override
        self._window_sum = self.ceil_mode or divisor_override is not None

    def construct(self, x):
        check_rank("AvgPool3d", "x", x.ndim, (4, 5))
        if self._window_sum:
            return self._construct_window_sum(x)
        return ops.avg_pool3d(x, kernel_size=self._kernel, strides=self._stride, pad_mode=self.pad_mode,
                              pad=self.padding, count_include_pad=self.count_include_pad)

    def _construct_window_sum(self, x):
        # Window sums (padding and overhang as zeros, all counted, so mean * volume is the sum),
        # divided by divisor_override or by how many real (or explicitly padded) positions each
        # window holds.
        pads = ceil_pads3(x.shape, self._kernel, self._stride, self.padding, self.ceil_mode)
        volume = self._kernel[0] * self._kernel[1] * self._kernel[2]
        padded = ops.pad(x, flat_pads3(x.ndim, pads))
        sums = ops.avg_pool3d(padded, kernel_size=self._kernel, strides=self._stride) * volume
        if self.divisor_override is not None:
            return sums / self.divisor_override
        counts = window_counts3(x.shape, self._kernel, self._stride, self.padding, pads, self.count_include_pad)
        return sums / ops.cast(Tensor(counts), x.dtype)


__all__ = ["Conv3d", "Conv3dTranspose", "MaxPool3d", "AvgPool3d"]
