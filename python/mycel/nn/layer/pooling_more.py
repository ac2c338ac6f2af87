"""MindSpore's AdaptiveMaxPool3d, FractionalMaxPool3d and MaxUnpool1d/2d/3d layers: thin Cells
over the functional ops of ops/function_more/nn2.py (the one place their math lives)."""
from mycel import ops
from mycel.nn.cell import Cell


class AdaptiveMaxPool3d(Cell):
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) to output_size (None keeps a size);
    return_indices also returns each maximum's flat position (d * H + h) * W + w."""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, bool(return_indices)

    def construct(self, input):  # noqa: A002 (MindSpore's argument name)
        return ops.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class FractionalMaxPool3d(Cell):
    """Fractional max pooling (ops.fractional_max_pool3d) as a layer."""

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        if (output_size is None) == (output_ratio is None):
            raise ValueError("FractionalMaxPool3d: give exactly one of output_size and output_ratio")
        self.kernel_size, self.output_size, self.output_ratio = kernel_size, output_size, output_ratio
        self.return_indices, self._random_samples = bool(return_indices), _random_samples

    def construct(self, x):
        return ops.fractional_max_pool3d(x, self.kernel_size, self.output_size, self.output_ratio,
                                         self.return_indices, self._random_samples)


class _MaxUnpool(Cell):
    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding


class MaxUnpool1d(_MaxUnpool):
    """The partial inverse of MaxPool1d (ops.max_unpool1d): values back at their indices."""

    def construct(self, x, indices, output_size=None):
        return ops.max_unpool1d(x, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool2d(_MaxUnpool):
    """The partial inverse of MaxPool2d (ops.max_unpool2d)."""

    def construct(self, x, indices, output_size=None):
        return ops.max_unpool2d(x, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool3d(_MaxUnpool):
    """The partial inverse of MaxPool3d (ops.max_unpool3d)."""

    def construct(self, x, indices, output_size=None):
        return ops.max_unpool3d(x, indices, self.kernel_size, self.stride, self.padding, output_size)


__all__ = ["AdaptiveMaxPool3d", "FractionalMaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]
