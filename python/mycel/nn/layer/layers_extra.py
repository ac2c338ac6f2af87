"""More of mindspore.nn: BatchNorm3d, LRN and LocalResponseNorm, AdaptiveAvgPool1d, LPPool1d/2d,
Tril/Triu, ImageGradients, PSNR, CentralCrop, and the RMSELoss and DiceLoss losses."""
from mycel import ops
from mycel.nn.cell import Cell
from mycel.nn.layer.normalization import _BatchNorm
from mycel.nn.loss.loss import LossBase
from mycel.ops import function_more as _more
from mycel.ops.primitive import constexpr


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W) input (over every dim but the channels)."""

    _ranks = (5,)


class LRN(Cell):
    """MindSpore's (TensorFlow's) local response normalization across channels:
    x / (bias + alpha * sum of x^2 over channels c - r .. c + r) ** beta."""

    def __init__(self, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, norm_region="ACROSS_CHANNELS"):
        super().__init__()
        if norm_region != "ACROSS_CHANNELS":
            raise ValueError(f"LRN: norm_region must be 'ACROSS_CHANNELS', got {norm_region!r}")
        self.r, self.bias, self.alpha, self.beta = int(depth_radius), float(bias), float(alpha), float(beta)

    def construct(self, x):
        return _more.lrn(x, self.r, self.bias, self.alpha, self.beta)


class LocalResponseNorm(Cell):
    """PyTorch's form: x / (k + alpha / size * sum of x^2 over `size` neighbouring channels) ** beta."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = int(size), float(alpha), float(beta), float(k)

    def construct(self, x):
        return _more.local_response_norm(x, self.size, self.alpha, self.beta, self.k)


class AdaptiveAvgPool1d(Cell):
    """Average pooling of (N, C, L) to output_size positions."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = int(output_size)

    def construct(self, x):
        y = ops.adaptive_avg_pool2d(ops.expand_dims(x, 2), (1, self.output_size))
        return ops.squeeze(y, (2,))


@constexpr
def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


class LPPool2d(Cell):
    """(sum of x^p over each window) ** (1 / p) on (N, C, H, W) (stride: the kernel by default)."""

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.p = float(norm_type)
        self.k = _pair(kernel_size)
        self.s = self.k if stride is None else _pair(stride)
        self.ceil_mode = ceil_mode

    def construct(self, x):
        avg = ops.avg_pool2d(ops.pow(x, self.p), self.k, self.s)
        area = self.k[0] * self.k[1]
        return ops.pow(ops.sign(avg) * ops.relu(ops.abs(avg)) * area, 1.0 / self.p)


class LPPool1d(Cell):
    """(sum of x^p over each window) ** (1 / p) on (N, C, L)."""

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.pool = LPPool2d(norm_type, (1, kernel_size), None if stride is None else (1, stride), ceil_mode)

    def construct(self, x):
        return ops.squeeze(self.pool(ops.expand_dims(x, 2)), (2,))


class Tril(Cell):
    """The lower triangle of x (diagonal k and below)."""

    def construct(self, x, k=0):
        return ops.tril(x, k)


class Triu(Cell):
    """The upper triangle of x (diagonal k and above)."""

    def construct(self, x, k=0):
        return ops.triu(x, k)


class ImageGradients(Cell):
    """(dy, dx) of (N, C, H, W) images: forward differences, 0 in the last row / column."""

    def construct(self, images):
        h, w = images.shape[2], images.shape[3]
        dy = _more.narrow(images, 2, 1, h - 1) - _more.narrow(images, 2, 0, h - 1)
        dx = _more.narrow(images, 3, 1, w - 1) - _more.narrow(images, 3, 0, w - 1)
        return ops.pad(dy, (0, 0, 0, 0, 0, 1, 0, 0)), ops.pad(dx, (0, 0, 0, 0, 0, 0, 0, 1))


class PSNR(Cell):
    """Peak signal-to-noise ratio per image of two (N, C, H, W) batches: 10 log10(max_val^2 / MSE)."""

    def __init__(self, max_val=1.0):
        super().__init__()
        if max_val <= 0:
            raise ValueError(f"PSNR: max_val must be > 0, got {max_val!r}")
        self.max_val = float(max_val)

    def construct(self, img1, img2):
        mse = ops.mean(ops.square(img1 - img2), (1, 2, 3))
        return 10.0 * _more.log10(self.max_val * self.max_val / mse)


@constexpr
def _central_box(h, w, fraction):
    top, left = int((h - h * fraction) / 2), int((w - w * fraction) / 2)
    return top, left, h - 2 * top, w - 2 * left


class CentralCrop(Cell):
    """The central `central_fraction` of each image's height and width ((C, H, W) or (N, C, H, W)),
    TensorFlow's rounding."""

    def __init__(self, central_fraction):
        super().__init__()
        if not 0.0 < central_fraction <= 1.0:
            raise ValueError(f"CentralCrop: central_fraction must be in (0, 1], got {central_fraction!r}")
        self.fraction = float(central_fraction)

    def construct(self, image):
        top, left, h, w = _central_box(image.shape[-2], image.shape[-1], self.fraction)
        return _more.narrow(_more.narrow(image, -2, top, h), -1, left, w)


class Unfold(Cell):
    """MindSpore's nn.Unfold (TensorFlow's extract_image_patches): (N, C, H, W) ->
    (N, C * kh * kw, out_h, out_w), patches of ksizes [1, kh, kw, 1] every strides [1, sh, sw, 1]
    with dilation rates [1, rh, rw, 1]; padding "valid" or "same"."""

    def __init__(self, ksizes, strides, rates, padding="valid"):
        super().__init__()
        self.k = (ksizes[1], ksizes[2])
        self.s = (strides[1], strides[2])
        self.r = (rates[1], rates[2])
        if padding.lower() not in ("valid", "same"):
            raise ValueError(f"Unfold: padding must be 'valid' or 'same', got {padding!r}")
        self.same = padding.lower() == "same"

    def construct(self, x):
        n, c, h, w = x.shape
        if self.same:
            x = ops.pad(x, _same_pads(h, w, self.k, self.s, self.r))
            h, w = x.shape[2], x.shape[3]
        cols = _more.unfold(x, self.k, self.r, 0, self.s)
        oh = (h - self.r[0] * (self.k[0] - 1) - 1) // self.s[0] + 1
        ow = (w - self.r[1] * (self.k[1] - 1) - 1) // self.s[1] + 1
        # TensorFlow orders a patch's values kernel row, kernel column, then channel
        cols = cols.reshape((n, c, self.k[0] * self.k[1], oh, ow))
        return ops.transpose(cols, (0, 2, 1, 3, 4)).reshape((n, c * self.k[0] * self.k[1], oh, ow))


@constexpr
def _same_pads(h, w, k, s, r):
    pads = [0, 0, 0, 0]
    for d, size in enumerate((h, w)):
        eff = r[d] * (k[d] - 1) + 1
        out = -(-size // s[d])
        total = max((out - 1) * s[d] + eff - size, 0)
        pads += [total // 2, total - total // 2]
    return tuple(pads)


class Fold(Cell):
    """PyTorch-style col2im: (N, C * kh * kw, L) columns summed into (N, C, H, W)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.args = (output_size, kernel_size, dilation, padding, stride)

    def construct(self, x):
        return _more.fold(x, *self.args)


class RMSELoss(LossBase):
    """sqrt(mean((logits - label)^2))."""

    def __init__(self):
        super().__init__()

    def construct(self, logits, label):
        return ops.sqrt(ops.mse_loss(logits, label, reduction="mean"))


class DiceLoss(LossBase):
    """1 - 2 sum(x y) / (sum(x^2) + sum(y^2) + smooth)."""

    def __init__(self, smooth=1e-5):
        super().__init__()
        if smooth <= 0:
            raise ValueError(f"DiceLoss: smooth must be > 0, got {smooth!r}")
        self.smooth = float(smooth)

    def construct(self, logits, label):
        inter = ops.sum(logits * label)
        union = ops.sum(logits * logits) + ops.sum(label * label)
        return 1.0 - 2.0 * inter / (union + self.smooth)


__all__ = ["Unfold", "Fold", "BatchNorm3d", "LRN", "LocalResponseNorm", "AdaptiveAvgPool1d", "LPPool1d", "LPPool2d",
           "Tril", "Triu", "ImageGradients", "PSNR", "CentralCrop", "RMSELoss", "DiceLoss"]
