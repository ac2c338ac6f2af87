"""Pooling layers over NCHW (or CHW) input."""
from mycel import ops
from mycel.common.validator import adaptive_output_size, check_rank
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_pad_mode, padding4, pair


class _Pool2d(Cell):
    def __init__(self, kernel_size, stride, pad_mode, padding, who):
        super().__init__()
        self.kernel_size = pair(kernel_size, who, "kernel_size")
        self.stride = pair(stride, who, "stride")
        self.pad_mode = check_pad_mode(pad_mode, who)
        self.padding = padding4(padding, self.pad_mode, who)

    def extend_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, pad_mode={self.pad_mode}"


class MaxPool2d(_Pool2d):
    """Max over kernel_size windows moved by stride; pad_mode "valid" (default), "same" or "pad"."""

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, data_format="NCHW"):
        super().__init__(kernel_size, stride, pad_mode, padding, "MaxPool2d")

    def construct(self, x):
        check_rank("MaxPool2d", "x", x.ndim, (3, 4))
        return ops.max_pool2d(x, kernel_size=self.kernel_size, strides=self.stride,
                              pad_mode=self.pad_mode, pad=self.padding)


class AvgPool2d(_Pool2d):
    """Mean over kernel_size windows. With pad_mode "pad", count_include_pad (default True)
    decides whether the padding counts in the divisor; "same" never counts it."""

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, count_include_pad=True,
                 data_format="NCHW"):
        super().__init__(kernel_size, stride, pad_mode, padding, "AvgPool2d")
        self.count_include_pad = bool(count_include_pad) and self.pad_mode == "pad"

    def construct(self, x):
        check_rank("AvgPool2d", "x", x.ndim, (3, 4))
        return ops.avg_pool2d(x, kernel_size=self.kernel_size, strides=self.stride,
                              pad_mode=self.pad_mode, pad=self.padding,
                              count_include_pad=self.count_include_pad)


class AdaptiveAvgPool2d(Cell):
    """Average pooling to a fixed output size (int, or (h, w) where None keeps that input dim)."""

    def __init__(self, output_size):
        super().__init__()
        if isinstance(output_size, int) and not isinstance(output_size, bool):
            output_size = (output_size, output_size)
        if not isinstance(output_size, (tuple, list)) or len(output_size) != 2 or \
                any(v is not None and (not isinstance(v, int) or v < 1) for v in output_size):
            raise ValueError(f"AdaptiveAvgPool2d: output_size must be an int or a pair of ints >= 1 "
                             f"or None, got {output_size!r}")
        self.output_size = tuple(output_size)

    def construct(self, x):
        check_rank("AdaptiveAvgPool2d", "x", x.ndim, (3, 4))
        return ops.adaptive_avg_pool2d(x, output_size=adaptive_output_size(x.shape, self.output_size))
