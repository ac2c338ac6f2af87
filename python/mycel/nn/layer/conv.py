"""Conv2d and Conv2dTranspose over NCHW input, with MindSpore's arguments and defaults."""
import math

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.initializer import HeUniform, Uniform
from mycel.common.layer_checks import input_dtype_error
from mycel.common.validator import check_rank
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_channels, check_pad_mode, make_param, padding4, pair



def _init_params(cell, weight_shape, out_channels, weight_init, bias_init, dtype):
    """The weight (HeUniform(sqrt(5)) by default) and, with has_bias, the bias (uniform in
    +-1/sqrt(fan_in), fan_in = weight_shape[1] * kh * kw, MindSpore's defaults)."""
    if weight_init is None:
        weight_init = HeUniform(math.sqrt(5))
    cell.weight = make_param(weight_init, weight_shape, dtype, "weight")
    cell.bias = None
    if cell.has_bias:
        if bias_init is None:
            fan_in = weight_shape[1] * weight_shape[2] * weight_shape[3]
            bias_init = Uniform(1 / math.sqrt(fan_in))
        cell.bias = make_param(bias_init, (out_channels,), dtype, "bias")

class Conv2d(Cell):
    """2-d convolution. weight (out_channels, in_channels/group, kh, kw); pad_mode "same" (the
    default) keeps ceil(H/stride), "valid" uses no padding, "pad" uses `padding`
    (int or (top, bottom, left, right))."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same", padding=0,
                 dilation=1, group=1, has_bias=False, weight_init=None, bias_init=None,
                 data_format="NCHW", dtype=mstype.float32):
        super().__init__()
        who = "Conv2d"
        check_channels(self, who, in_channels, out_channels, group)
        if data_format != "NCHW":
            raise ValueError(f"{who}: only data_format='NCHW' is supported, got {data_format!r}")
        self.kernel_size = pair(kernel_size, who, "kernel_size")
        self.stride = pair(stride, who, "stride")
        self.dilation = pair(dilation, who, "dilation")
        self.pad_mode = check_pad_mode(pad_mode, who)
        self.padding = padding4(padding, self.pad_mode, who)
        self.has_bias = bool(has_bias)
        _init_params(self, (out_channels, in_channels // group) + self.kernel_size, out_channels,
                     weight_init, bias_init, dtype)

    def construct(self, x):
        check_rank("Conv2d", "x", x.ndim, (4,))
        if x.dtype != self.weight.dtype:  # say which dtype came from the user, which from the layer
            raise TypeError(input_dtype_error("Conv2d", x.dtype, self.weight.dtype))
        return ops.conv2d(x, self.weight, self.bias, stride=self.stride, pad_mode=self.pad_mode,
                          pad=self.padding, dilation=self.dilation, groups=self.group)

    def extend_repr(self):
        return (f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}, pad_mode={self.pad_mode}, "
                f"padding={self.padding}, dilation={self.dilation}, group={self.group}, has_bias={self.has_bias}")


def _transpose_extra(kernel, stride, dilation, pad_mode, pads, output_padding):
    """b in MindSpore's Conv2dTranspose output size H*stride + b of one spatial dim (folded at
    construction, so construct only multiplies and adds)."""
    if pad_mode == "same":
        return 0
    if pad_mode == "valid":
        return max(dilation * (kernel - 1) - stride + 1, 0)
    # (H-1)*stride - (pad0+pad1) + dilation*(k-1) + output_padding + 1
    return dilation * (kernel - 1) + output_padding + 1 - stride - pads[0] - pads[1]


class Conv2dTranspose(Cell):
    """2-d transposed convolution: the gradient of Conv2d with respect to its input, as a layer.
    weight (in_channels, out_channels/group, kh, kw). Output size per spatial dim: "same"
    H*stride; "valid" H*stride + max(dilation*(k-1) - stride + 1, 0); "pad"
    (H-1)*stride - (top+bottom) + dilation*(k-1) + output_padding + 1."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same", padding=0,
                 output_padding=0, dilation=1, group=1, has_bias=False, weight_init=None, bias_init=None,
                 dtype=mstype.float32):
        super().__init__()
        who = "Conv2dTranspose"
        check_channels(self, who, in_channels, out_channels, group)
        self.kernel_size = pair(kernel_size, who, "kernel_size")
        self.stride = pair(stride, who, "stride")
        self.dilation = pair(dilation, who, "dilation")
        self.pad_mode = check_pad_mode(pad_mode, who)
        self.padding = padding4(padding, self.pad_mode, who)
        self.output_padding = pair(output_padding, who, "output_padding", allow_zero=True)
        if any(self.output_padding) and self.pad_mode != "pad":
            raise ValueError(f"{who}: output_padding must be 0 unless pad_mode is 'pad', got "
                             f"output_padding={output_padding!r} with pad_mode={self.pad_mode!r}")
        # An extra row/column must stay beyond the last window, else the conv2d it transposes
        # would have a larger output than this layer's input.
        if any(o >= s for o, s in zip(self.output_padding, self.stride)):
            raise ValueError(f"{who}: output_padding {self.output_padding} must be smaller than "
                             f"stride {self.stride}")
        self.has_bias = bool(has_bias)
        # The weight of the conv2d this layer transposes: that conv maps out_channels to in_channels.
        _init_params(self, (in_channels, out_channels // group) + self.kernel_size, out_channels,
                     weight_init, bias_init, dtype)
        # Plain int attributes: the stride and extra rows as ints, read in construct.
        self._stride_h, self._stride_w = self.stride
        self._extra_h, self._extra_w = (
            _transpose_extra(self.kernel_size[i], self.stride[i], self.dilation[i], self.pad_mode,
                             self.padding[2 * i:2 * i + 2], self.output_padding[i]) for i in (0, 1))

    def construct(self, x):
        check_rank("Conv2dTranspose", "x", x.ndim, (4,))
        if x.dtype != self.weight.dtype:  # say which dtype came from the user, which from the layer
            raise TypeError(input_dtype_error("Conv2dTranspose", x.dtype, self.weight.dtype))
        n, _, h, w = x.shape
        out_h = h * self._stride_h + self._extra_h
        out_w = w * self._stride_w + self._extra_w
        y = ops.conv2d_backprop_input(x, self.weight, input_size=(n, self.out_channels, out_h, out_w),
                                      stride=self.stride, pad_mode=self.pad_mode, pad=self.padding,
                                      dilation=self.dilation, groups=self.group)
        if self.has_bias:
            y = y + ops.reshape(self.bias, (1, self.out_channels, 1, 1))
        return y

    def extend_repr(self):
        return (f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}, pad_mode={self.pad_mode}, "
                f"padding={self.padding}, output_padding={self.output_padding}, dilation={self.dilation}, "
                f"group={self.group}, has_bias={self.has_bias}")
