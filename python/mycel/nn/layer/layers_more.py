"""More of MindSpore's layers, as Cells over the functional forms in mycel/ops/nn_more.py:
Softmin, GLU, PixelShuffle, PixelUnshuffle, the channel dropouts Dropout1d/2d/3d and Upsample."""
from mycel import ops
from mycel.nn.cell import Cell

__all__ = ["Softmin", "GLU", "PixelShuffle", "PixelUnshuffle", "Dropout1d", "Dropout2d", "Dropout3d",
           "Upsample"]


class Softmin(Cell):
    """softmax(-x) along axis."""

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis

    def construct(self, x):
        return ops.softmin(x, self.axis)


class GLU(Cell):
    """Gated linear unit: a * sigmoid(b) over the two halves of x along axis."""

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis

    def construct(self, x):
        return ops.glu(x, self.axis)


class PixelShuffle(Cell):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r) with r = upscale_factor."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def construct(self, x):
        return ops.pixel_shuffle(x, self.upscale_factor)


class PixelUnshuffle(Cell):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W) with r = downscale_factor."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def construct(self, x):
        return ops.pixel_unshuffle(x, self.downscale_factor)


class _ChannelDropout(Cell):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"{type(self).__name__}: p must be in [0, 1], got {p}")
        self.p = float(p)

    def extend_repr(self):
        return f"p={self.p}"


class Dropout1d(_ChannelDropout):
    """In training, zeroes whole channels of (N, C, L) with probability p and scales the rest
    by 1/(1-p); the identity in evaluation."""

    def construct(self, x):
        return ops.dropout1d(x, self.p, self.training)


class Dropout2d(_ChannelDropout):
    """Dropout1d for (N, C, H, W) feature maps."""

    def construct(self, x):
        return ops.dropout2d(x, self.p, self.training)


class Dropout3d(_ChannelDropout):
    """Dropout1d for (N, C, D, H, W) volumes."""

    def construct(self, x):
        return ops.dropout3d(x, self.p, self.training)


class Upsample(Cell):
    """ops.interpolate as a layer: to `size` or by `scale_factor`, in any of its modes."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        if (size is None) == (scale_factor is None):
            raise ValueError("Upsample: give exactly one of size and scale_factor")
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners = align_corners

    def construct(self, x):
        return ops.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners)
