"""Conv2d over NCHW input, with MindSpore's arguments and defaults."""
import math

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.initializer import HeUniform, Uniform
from mycel.common.validator import check_rank
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_int, check_pad_mode, make_param, padding4, pair


class Conv2d(Cell):
    """2-d convolution. weight (out_channels, in_channels/group, kh, kw); pad_mode "same" (the
    default) keeps ceil(H/stride), "valid" uses no padding, "pad" uses `padding`
    (int or (top, bottom, left, right))."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same", padding=0,
                 dilation=1, group=1, has_bias=False, weight_init=None, bias_init=None,
                 data_format="NCHW", dtype=mstype.float32):
        super().__init__()
        who = "Conv2d"
        self.in_channels = check_int(in_channels, who, "in_channels")
        self.out_channels = check_int(out_channels, who, "out_channels")
        self.group = check_int(group, who, "group")
        if in_channels % group or out_channels % group:
            raise ValueError(f"{who}: in_channels ({in_channels}) and out_channels ({out_channels}) "
                             f"must be divisible by group ({group})")
        if data_format != "NCHW":
            raise ValueError(f"{who}: only data_format='NCHW' is supported, got {data_format!r}")
        self.kernel_size = pair(kernel_size, who, "kernel_size")
        self.stride = pair(stride, who, "stride")
        self.dilation = pair(dilation, who, "dilation")
        self.pad_mode = check_pad_mode(pad_mode, who)
        self.padding = padding4(padding, self.pad_mode, who)
        self.has_bias = bool(has_bias)
        shape = (out_channels, in_channels // group) + self.kernel_size
        if weight_init is None:
            weight_init = HeUniform(math.sqrt(5))
        self.weight = make_param(weight_init, shape, dtype, "weight")
        self.bias = None
        if self.has_bias:
            if bias_init is None:
                fan_in = in_channels // group * self.kernel_size[0] * self.kernel_size[1]
                bias_init = Uniform(1 / math.sqrt(fan_in))
            self.bias = make_param(bias_init, (out_channels,), dtype, "bias")

    def construct(self, x):
        check_rank("Conv2d", "x", x.ndim, (4,))
        return ops.conv2d(x, self.weight, self.bias, stride=self.stride, pad_mode=self.pad_mode,
                          pad=self.padding, dilation=self.dilation, groups=self.group)

    def extend_repr(self):
        return (f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}, pad_mode={self.pad_mode}, "
                f"padding={self.padding}, dilation={self.dilation}, group={self.group}, has_bias={self.has_bias}")
