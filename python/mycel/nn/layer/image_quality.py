"""MindSpore's SSIM and MSSSIM (structural similarity, Wang et al. 2004 and 2003): local
statistics under a Gaussian window (a depthwise 'valid' convolution), per image the mean over
channels and positions; MSSSIM repeats it on 2x2 average-pooled images."""
import numpy as np

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.tensor import Tensor
from mycel.nn.cell import Cell
from mycel.ops.primitive import constexpr


def _check(who, max_val, filter_size, filter_sigma, k1, k2):
    for arg, v in (("max_val", max_val), ("filter_sigma", filter_sigma), ("k1", k1), ("k2", k2)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise ValueError(f"{who}: {arg} must be a positive number, got {v!r}")
    if isinstance(filter_size, bool) or not isinstance(filter_size, int) or filter_size < 1:
        raise ValueError(f"{who}: filter_size must be an int >= 1, got {filter_size!r}")


@constexpr
def _gauss_window(channels, size, sigma, who, h, w):
    """(C, 1, size, size) normalized 2-d Gaussian for a depthwise convolution."""
    if h < size or w < size:
        raise ValueError(f"{who}: images of {h}x{w} are smaller than filter_size {size}")
    coords = np.arange(size, dtype=np.float64) - (size - 1) / 2.0
    g = np.exp(-coords ** 2 / (2.0 * sigma ** 2))
    g2 = np.outer(g, g)
    g2 /= g2.sum()
    return Tensor(np.broadcast_to(g2, (channels, 1, size, size)).astype(np.float32))


def _ssim_and_cs(img1, img2, c1, c2, size, sigma, who):
    """(SSIM, contrast-structure) per image: the means of the two maps over (C, H', W')."""
    if tuple(img1.shape) != tuple(img2.shape) or img1.ndim != 4:
        raise ValueError(f"{who}: img1 and img2 must be (N, C, H, W) of one shape, got {tuple(img1.shape)} and "
                         f"{tuple(img2.shape)}")
    c = img1.shape[1]
    window = ops.cast(_gauss_window(c, size, float(sigma), who, img1.shape[2], img1.shape[3]), img1.dtype)

    def blur(x):
        return ops.conv2d(x, window, None, groups=c)
    mu1, mu2 = blur(img1), blur(img2)
    var1 = blur(img1 * img1) - mu1 * mu1
    var2 = blur(img2 * img2) - mu2 * mu2
    cov = blur(img1 * img2) - mu1 * mu2
    luminance = (2.0 * mu1 * mu2 + c1) / (mu1 * mu1 + mu2 * mu2 + c1)
    cs = (2.0 * cov + c2) / (var1 + var2 + c2)
    return ops.mean(luminance * cs, (1, 2, 3)), ops.mean(cs, (1, 2, 3))


def _as_float(img1, img2):
    if img1.dtype not in (mstype.float16, mstype.float32, mstype.float64):
        img1 = ops.cast(img1, mstype.float32)
    return img1, ops.cast(img2, img1.dtype)


class SSIM(Cell):
    """Structural similarity of two (N, C, H, W) batches: (N,) values, 1 for equal images."""

    def __init__(self, max_val=1.0, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03):
        super().__init__()
        _check("SSIM", max_val, filter_size, filter_sigma, k1, k2)
        self.max_val, self.filter_size, self.filter_sigma = float(max_val), filter_size, float(filter_sigma)
        self.c1, self.c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2

    def construct(self, img1, img2):
        img1, img2 = _as_float(img1, img2)
        ssim, _ = _ssim_and_cs(img1, img2, self.c1, self.c2, self.filter_size, self.filter_sigma, "SSIM")
        return ssim


class MSSSIM(Cell):
    """Multi-scale SSIM: prod over scales of relu(cs)^w_i (relu(ssim)^w_last at the coarsest),
    the images halved by 2x2 average pooling between scales; (N,) values."""

    def __init__(self, max_val=1.0, power_factors=(0.0448, 0.2856, 0.3001, 0.2363, 0.1333), filter_size=11,
                 filter_sigma=1.5, k1=0.01, k2=0.03):
        super().__init__()
        _check("MSSSIM", max_val, filter_size, filter_sigma, k1, k2)
        if not isinstance(power_factors, (tuple, list)) or not power_factors:
            raise ValueError(f"MSSSIM: power_factors must be a non-empty tuple of floats, got {power_factors!r}")
        self.power_factors = tuple(float(p) for p in power_factors)
        self.max_val, self.filter_size, self.filter_sigma = float(max_val), filter_size, float(filter_sigma)
        self.c1, self.c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2

    def construct(self, img1, img2):
        img1, img2 = _as_float(img1, img2)
        levels = len(self.power_factors)
        out = None
        for i in range(levels):
            ssim, cs = _ssim_and_cs(img1, img2, self.c1, self.c2, self.filter_size, self.filter_sigma, "MSSSIM")
            value = ssim if i == levels - 1 else cs
            term = ops.pow(ops.relu(value), self.power_factors[i])
            out = term if out is None else out * term
            if i < levels - 1:
                img1 = ops.avg_pool2d(img1, kernel_size=(2, 2), strides=(2, 2))
                img2 = ops.avg_pool2d(img2, kernel_size=(2, 2), strides=(2, 2))
        return out


__all__ = ["SSIM", "MSSSIM"]
