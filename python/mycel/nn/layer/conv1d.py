"""Conv1d, Conv1dTranspose, MaxPool1d and AvgPool1d over (N, C, L): the 2-d layers' ops on
(N, C, 1, L), with MindSpore's 1-d arguments (weight (out_channels, in_channels / group,
kernel_size); Conv1dTranspose's (in_channels, out_channels / group, kernel_size))."""
import math

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.initializer import HeUniform, Uniform
from mycel.common.layer_checks import input_dtype_error
from mycel.common.validator import check_rank
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_int, check_pad_mode, make_param


def _padding2(padding, pad_mode, who):
    if isinstance(padding, bool) or not isinstance(padding, int) or padding < 0:
        raise ValueError(f"{who}: padding must be a non-negative int, got {padding!r}")
    if pad_mode != "pad" and padding:
        raise ValueError(f"{who}: padding must be 0 unless pad_mode is 'pad', got {padding}")
    return (0, 0, padding, padding)


class _Conv1dBase(Cell):
    """The settings and parameters Conv1d and Conv1dTranspose share. `transposed` swaps the
    weight's channel dims, as MindSpore lays them out: (out, in / group, k) for Conv1d and
    (in, out / group, k) for Conv1dTranspose."""

    def __init__(self, who, in_channels, out_channels, kernel_size, stride, pad_mode, padding, dilation, group,
                 has_bias, weight_init, bias_init, dtype, transposed):
        super().__init__()
        self.in_channels = check_int(in_channels, who, "in_channels")
        self.out_channels = check_int(out_channels, who, "out_channels")
        self.kernel_size = check_int(kernel_size, who, "kernel_size")
        self.stride = check_int(stride, who, "stride")
        self.dilation = check_int(dilation, who, "dilation")
        self.group = check_int(group, who, "group")
        if in_channels % group or out_channels % group:
            raise ValueError(f"{who}: in_channels ({in_channels}) and out_channels ({out_channels}) "
                             f"must be divisible by group ({group})")
        self.pad_mode = check_pad_mode(pad_mode, who)
        self.padding = padding
        self._pads = _padding2(padding, self.pad_mode, who)
        self.has_bias = bool(has_bias)
        rows, cols = (in_channels, out_channels) if transposed else (out_channels, in_channels)
        self.weight = make_param(weight_init if weight_init is not None else HeUniform(math.sqrt(5)),
                                 (rows, cols // group, kernel_size), dtype, "weight")
        fan_in = (cols // group) * kernel_size
        self.bias = make_param(bias_init if bias_init is not None else Uniform(1 / math.sqrt(fan_in)),
                               (out_channels,), dtype, "bias") if has_bias else None


class Conv1d(_Conv1dBase):
    """1-d convolution; pad_mode "same" (the default), "valid" or "pad" with `padding`."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same", padding=0,
                 dilation=1, group=1, has_bias=False, weight_init=None, bias_init=None, dtype=mstype.float32):
        super().__init__("Conv1d", in_channels, out_channels, kernel_size, stride, pad_mode, padding, dilation,
                         group, has_bias, weight_init, bias_init, dtype, transposed=False)

    def construct(self, x):
        check_rank("Conv1d", "x", x.ndim, (3,))
        if x.dtype != self.weight.dtype:  # say which dtype came from the user, which from the layer
            raise TypeError(input_dtype_error("Conv1d", x.dtype, self.weight.dtype))
        w = ops.expand_dims(self.weight, 2)
        y = ops.conv2d(ops.expand_dims(x, 2), w, self.bias, stride=(1, self.stride), pad_mode=self.pad_mode,
                       pad=self._pads, dilation=(1, self.dilation), groups=self.group)
        return ops.squeeze(y, (2,))


class Conv1dTranspose(_Conv1dBase):
    """1-d transposed convolution (the gradient of Conv1d with respect to its input). Output
    length: "same" L*stride, "valid" L*stride + max(dilation*(k-1) - stride + 1, 0), "pad"
    (L-1)*stride - 2*padding + dilation*(k-1) + 1."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same", padding=0,
                 dilation=1, group=1, has_bias=False, weight_init=None, bias_init=None, dtype=mstype.float32):
        super().__init__("Conv1dTranspose", in_channels, out_channels, kernel_size, stride, pad_mode, padding,
                         dilation, group, has_bias, weight_init, bias_init, dtype, transposed=True)
        k, s, d = self.kernel_size, self.stride, self.dilation
        self._extra = (0 if self.pad_mode == "same" else max(d * (k - 1) - s + 1, 0) if self.pad_mode == "valid"
                       else d * (k - 1) + 1 - s - 2 * padding)

    def construct(self, x):
        check_rank("Conv1dTranspose", "x", x.ndim, (3,))
        if x.dtype != self.weight.dtype:
            raise TypeError(input_dtype_error("Conv1dTranspose", x.dtype, self.weight.dtype))
        n, length = x.shape[0], x.shape[2]
        y = ops.conv2d_backprop_input(ops.expand_dims(x, 2), ops.expand_dims(self.weight, 2),
                                      input_size=(n, self.out_channels, 1, length * self.stride + self._extra),
                                      stride=(1, self.stride), pad_mode=self.pad_mode, pad=self._pads,
                                      dilation=(1, self.dilation), groups=self.group)
        y = ops.squeeze(y, (2,))
        if self.has_bias:
            y = y + ops.reshape(self.bias, (1, self.out_channels, 1))
        return y


class _Pool1d(Cell):
    def __init__(self, kernel_size, stride, pad_mode, padding, who):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride
        self._k = check_int(kernel_size, who, "kernel_size")
        self._s = check_int(stride, who, "stride")
        self.pad_mode = check_pad_mode(pad_mode, who)
        self._pads = _padding2(padding, self.pad_mode, who)


class MaxPool1d(_Pool1d):
    """Max over kernel_size windows of the last dim."""

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0):
        super().__init__(kernel_size, stride, pad_mode, padding, "MaxPool1d")

    def construct(self, x):
        check_rank("MaxPool1d", "x", x.ndim, (3,))
        y = ops.max_pool2d(ops.expand_dims(x, 2), kernel_size=(1, self._k), strides=(1, self._s),
                           pad_mode=self.pad_mode, pad=self._pads)
        return ops.squeeze(y, (2,))


class AvgPool1d(_Pool1d):
    """Mean over kernel_size windows of the last dim."""

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, count_include_pad=True):
        super().__init__(kernel_size, stride, pad_mode, padding, "AvgPool1d")
        self.count_include_pad = bool(count_include_pad) and self.pad_mode == "pad"

    def construct(self, x):
        check_rank("AvgPool1d", "x", x.ndim, (3,))
        y = ops.avg_pool2d(ops.expand_dims(x, 2), kernel_size=(1, self._k), strides=(1, self._s),
                           pad_mode=self.pad_mode, pad=self._pads, count_include_pad=self.count_include_pad)
        return ops.squeeze(y, (2,))


__all__ = ["Conv1d", "Conv1dTranspose", "MaxPool1d", "AvgPool1d"]
