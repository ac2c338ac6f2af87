"""Pooling layers over NCHW (or CHW) input."""
import math

from mycel import ops
from mycel.common.pool_geometry import ceil_pads, flat_pads, window_counts, window_origins
from mycel.common.tensor import Tensor
from mycel.common.validator import adaptive_output_size, check_rank
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_pad_mode, padding4, pair


class _Pool2d(Cell):
    def __init__(self, kernel_size, stride, pad_mode, padding, ceil_mode, who):
        super().__init__()
        # kernel_size and stride read back as given (MindSpore's); the ops take the pairs.
        self.kernel_size, self.stride = kernel_size, stride
        self._kernel = pair(kernel_size, who, "kernel_size")
        self._stride = pair(stride, who, "stride")
        self.pad_mode = check_pad_mode(pad_mode, who)
        self.padding = padding4(padding, self.pad_mode, who)
        self.ceil_mode = bool(ceil_mode)
        if self.ceil_mode and self.pad_mode == "same":
            raise ValueError(f"{who}: ceil_mode needs pad_mode 'valid' or 'pad', got 'same'")

    def extend_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, pad_mode={self.pad_mode}"


class MaxPool2d(_Pool2d):
    """Max over kernel_size windows moved by stride; pad_mode "valid" (default), "same" or "pad";
    ceil_mode keeps a last, partial window (padding is never the maximum)."""

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, dilation=1, return_indices=False,
                 ceil_mode=False, data_format="NCHW"):
        super().__init__(kernel_size, stride, pad_mode, padding, ceil_mode, "MaxPool2d")
        self.dilation = dilation
        self._dilation = pair(dilation, "MaxPool2d", "dilation")
        if min(self._dilation) < 1:
            raise ValueError(f"MaxPool2d: dilation must be >= 1, got {dilation!r}")
        self.return_indices = bool(return_indices)
        self._windowed = self.return_indices or self._dilation != (1, 1)
        if self._windowed and self.pad_mode == "same":
            raise NotImplementedError("MaxPool2d: return_indices and dilation need pad_mode 'valid' "
                                      "or 'pad', got 'same'")

    def construct(self, x):
        check_rank("MaxPool2d", "x", x.ndim, (3, 4))
        if self._windowed:
            values, index = self._with_indices(x)
            return (values, index) if self.return_indices else values
        if self.ceil_mode:  # pad with -inf (never the maximum) up to the ceil_mode size
            pads = ceil_pads(x.shape, self._kernel, self._stride, self.padding, True)
            x = ops.pad(x, flat_pads(x.ndim, pads), value=-math.inf)
            return ops.max_pool2d(x, kernel_size=self._kernel, strides=self._stride)
        return ops.max_pool2d(x, kernel_size=self._kernel, strides=self._stride,
                              pad_mode=self.pad_mode, pad=self.padding)


    def _with_indices(self, x):
        # (max, argmax): the window maxima, and where each was in its (H, W) input plane as
        # h * W + w (the first maximum in the window's row-major order, as MindSpore's). One
        # strided view of the -inf padded input per kernel offset (offsets dilation apart);
        # argmax picks the offset. The geometry is that of a dense kernel of the dilated extent.
        kh, kw = self._kernel
        dh, dw = self._dilation
        extent = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
        pads = ceil_pads(x.shape, extent, self._stride, self.padding, self.ceil_mode)
        padded = ops.pad(x, flat_pads(x.ndim, pads), value=-math.inf)
        oh, ow, rows, cols = window_origins(x.shape, extent, self._stride, pads)
        sh, sw = self._stride
        views = []
        for i in range(kh):
            for j in range(kw):
                views.append(padded[..., i * dh:i * dh + sh * (oh - 1) + 1:sh,
                                    j * dw:j * dw + sw * (ow - 1) + 1:sw])
        stacked = ops.stack(views, axis=0)
        offset = ops.argmax(stacked, axis=0)
        values = ops.max(stacked, axis=(0,))
        width = x.shape[-1]
        index = (rows + (offset // kw) * dh) * width + cols + (offset % kw) * dw
        return values, index


class AvgPool2d(_Pool2d):
    """Mean over kernel_size windows. With pad_mode "pad", count_include_pad (default True)
    decides whether the padding counts in the divisor; "same" never counts it. ceil_mode keeps a
    last, partial window (its overhang never counts); divisor_override replaces the divisor."""

    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None, data_format="NCHW"):
        super().__init__(kernel_size, stride, pad_mode, padding, ceil_mode, "AvgPool2d")
        self.count_include_pad = bool(count_include_pad) and self.pad_mode == "pad"
        if divisor_override is not None and (not isinstance(divisor_override, int) or divisor_override <= 0):
            raise ValueError(f"AvgPool2d: divisor_override must be a positive int, got {divisor_override!r}")
        if divisor_override is not None and self.pad_mode == "same":
            raise ValueError("AvgPool2d: divisor_override needs pad_mode 'valid' or 'pad', got 'same'")
        self.divisor_override = divisor_override
        self._window_sum = self.ceil_mode or divisor_override is not None

    def construct(self, x):
        check_rank("AvgPool2d", "x", x.ndim, (3, 4))
        if self._window_sum:
            return self._construct_window_sum(x)
        return ops.avg_pool2d(x, kernel_size=self._kernel, strides=self._stride,
                              pad_mode=self.pad_mode, pad=self.padding,
                              count_include_pad=self.count_include_pad)

    def _construct_window_sum(self, x):
        # Window sums (padding and overhang as zeros, all counted, so mean * k*k is the sum),
        # divided by divisor_override or by how many real (or explicitly padded) positions each
        # window holds.
        pads = ceil_pads(x.shape, self._kernel, self._stride, self.padding, self.ceil_mode)
        area = self._kernel[0] * self._kernel[1]
        padded = ops.pad(x, flat_pads(x.ndim, pads))
        sums = ops.avg_pool2d(padded, kernel_size=self._kernel, strides=self._stride) * area
        if self.divisor_override is not None:
            return sums / self.divisor_override
        counts = window_counts(x.shape, self._kernel, self._stride, self.padding, pads, self.count_include_pad)
        return sums / ops.cast(Tensor(counts), x.dtype)


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
