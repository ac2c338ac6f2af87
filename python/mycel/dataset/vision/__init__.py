"""Vision transforms (C++, MindSpore's mindspore.dataset.vision names and signatures).

Images are HWC (or HW) numpy arrays / Tensors, uint8 or float32 (after Normalize/Rescale).
Resampling follows OpenCV, as MindSpore does: LINEAR and CUBIC use half-pixel centers without
antialiasing, NEAREST picks floor(dst * in / out). See docs/dataset.md.
"""
import enum
import numbers

from mycel.dataset.transforms import TensorOperation, _enum_value, _to_handles

__all__ = ["Inter", "Border", "Decode", "Resize", "CenterCrop", "Crop", "RandomCrop",
           "RandomResizedCrop", "HorizontalFlip", "VerticalFlip", "RandomHorizontalFlip",
           "RandomVerticalFlip", "Rotate", "RandomRotation", "RandomColorAdjust", "Normalize",
           "Rescale", "HWC2CHW", "ToTensor", "Pad", "Invert", "Equalize", "AutoContrast",
           "Posterize", "Solarize", "AdjustBrightness", "AdjustContrast", "AdjustSaturation",
           "AdjustHue", "AdjustSharpness", "RandAugment", "UniformAugment"]


class Inter(str, enum.Enum):
    """Interpolation modes (BILINEAR and BICUBIC are aliases of LINEAR and CUBIC)."""
    NEAREST = "nearest"
    LINEAR = "linear"
    BILINEAR = "linear"
    CUBIC = "cubic"
    BICUBIC = "cubic"
    AREA = "area"
    PILCUBIC = "pilcubic"
    ANTIALIAS = "antialias"


class Border(str, enum.Enum):
    """Padding modes: CONSTANT fills, EDGE repeats the border, REFLECT mirrors without and
    SYMMETRIC with the border pixel (numpy.pad's names)."""
    CONSTANT = "constant"
    EDGE = "edge"
    REFLECT = "reflect"
    SYMMETRIC = "symmetric"


def _fill(fill_value):
    return list(fill_value) if isinstance(fill_value, (tuple, list)) else fill_value


def _size(size):
    return list(size) if isinstance(size, (tuple, list)) else size


class Decode(TensorOperation):
    """JPEG/PNG file bytes (1-d uint8) -> HWC uint8 RGB image."""

    def __init__(self, to_pil=False):
        self._build(to_pil=bool(to_pil))


class Resize(TensorOperation):
    """Resize to size (h, w), or the shorter side to an int size keeping the aspect ratio."""

    def __init__(self, size, interpolation=Inter.LINEAR):
        self._build(size=_size(size), interpolation=_enum_value(interpolation))


class CenterCrop(TensorOperation):
    """Central crop of size (h, w) or (size, size); zero-padded where the image is smaller."""

    def __init__(self, size):
        self._build(size=_size(size))


class Crop(TensorOperation):
    """Crop of `size` whose top-left corner is coordinates=(top, left)."""

    def __init__(self, coordinates, size):
        self._build(coordinates=list(coordinates), size=_size(size))


class RandomCrop(TensorOperation):
    """Crop of `size` at a random position, after optional padding."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill_value=0,
                 padding_mode=Border.CONSTANT):
        self._build(size=_size(size), padding=_size(padding), pad_if_needed=bool(pad_if_needed),
                    fill_value=_fill(fill_value), padding_mode=_enum_value(padding_mode))


class RandomResizedCrop(TensorOperation):
    """A random crop (area fraction in scale, aspect ratio in ratio) resized to size."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3. / 4., 4. / 3.),
                 interpolation=Inter.BILINEAR, max_attempts=10):
        self._build(size=_size(size), scale=[float(s) for s in scale],
                    ratio=[float(r) for r in ratio], interpolation=_enum_value(interpolation),
                    max_attempts=max_attempts)


class HorizontalFlip(TensorOperation):
    """Mirror left-right."""

    def __init__(self):
        self._build()


class VerticalFlip(TensorOperation):
    """Mirror top-bottom."""

    def __init__(self):
        self._build()


class RandomHorizontalFlip(TensorOperation):
    """Mirror left-right with probability prob."""

    def __init__(self, prob=0.5):
        self._build(prob=float(prob))


class RandomVerticalFlip(TensorOperation):
    """Mirror top-bottom with probability prob."""

    def __init__(self, prob=0.5):
        self._build(prob=float(prob))


def _rotate_args(resample, expand, center, fill_value):
    return dict(resample=_enum_value(resample), expand=bool(expand),
                center=None if center is None else [float(c) for c in center],
                fill_value=_fill(fill_value))


class Rotate(TensorOperation):
    """Counter-clockwise rotation by `degrees` about center (x, y) (default: the image center)."""

    def __init__(self, degrees, resample=Inter.NEAREST, expand=False, center=None, fill_value=0):
        self._build(degrees=float(degrees), **_rotate_args(resample, expand, center, fill_value))


class RandomRotation(TensorOperation):
    """Rotation by an angle drawn from [-degrees, degrees] or [min, max]."""

    def __init__(self, degrees, resample=Inter.NEAREST, expand=False, center=None, fill_value=0):
        degrees = [float(degrees)] if isinstance(degrees, numbers.Number) else [float(d) for d in degrees]
        self._build(degrees=degrees, **_rotate_args(resample, expand, center, fill_value))


class RandomColorAdjust(TensorOperation):
    """Random brightness, contrast, saturation (factors in [max(0, 1-x), 1+x] or (min, max)) and
    hue (shift in [-x, x] or (min, max), within [-0.5, 0.5]), applied in that order."""

    def __init__(self, brightness=(1, 1), contrast=(1, 1), saturation=(1, 1), hue=(0, 0)):
        def rng(v):
            return float(v) if isinstance(v, numbers.Number) else [float(x) for x in v]
        self._build(brightness=rng(brightness), contrast=rng(contrast),
                    saturation=rng(saturation), hue=rng(hue))


class Normalize(TensorOperation):
    """(image - mean) / std per channel -> float32 (mean/std in the image's value scale)."""

    def __init__(self, mean, std, is_hwc=True):
        self._build(mean=[float(m) for m in mean], std=[float(s) for s in std], is_hwc=bool(is_hwc))


class Rescale(TensorOperation):
    """image * rescale + shift -> float32."""

    def __init__(self, rescale, shift):
        self._build(rescale=float(rescale), shift=float(shift))


class HWC2CHW(TensorOperation):
    """<H, W, C> -> <C, H, W>."""

    def __init__(self):
        self._build()


class ToTensor(TensorOperation):
    """HWC (or HW) image in [0, 255] -> CHW float image in [0, 1] of output_type."""

    def __init__(self, output_type="float32"):
        from mycel import _mycel
        if not isinstance(output_type, _mycel.dtype):
            import numpy as np
            output_type = np.dtype(output_type).name
        self._build(output_type=output_type)


class Pad(TensorOperation):
    """Pads the sides: padding is an int, (left/right, top/bottom) or (left, top, right, bottom)."""

    def __init__(self, padding, fill_value=0, padding_mode=Border.CONSTANT):
        self._build(padding=_size(padding), fill_value=_fill(fill_value),
                    padding_mode=_enum_value(padding_mode))


class Invert(TensorOperation):
    """255 - image (1 - image for float32)."""

    def __init__(self):
        self._build()


class Equalize(TensorOperation):
    """Histogram equalization per channel (PIL's ImageOps.equalize); uint8 only."""

    def __init__(self):
        self._build()


class AutoContrast(TensorOperation):
    """Stretches each channel to the full range (cutoff=0 only)."""

    def __init__(self, cutoff=0.0, ignore=None):
        if cutoff != 0 or ignore is not None:
            raise NotImplementedError("AutoContrast: only cutoff=0.0 and ignore=None are supported")
        self._build()


class Posterize(TensorOperation):
    """Keeps the `bits` most significant bits of each uint8 channel."""

    def __init__(self, bits):
        self._build(bits=int(bits))


class Solarize(TensorOperation):
    """Inverts the pixels at or above threshold."""

    def __init__(self, threshold):
        t = threshold if isinstance(threshold, numbers.Number) else threshold[0]
        self._build(threshold=float(t))


class AdjustBrightness(TensorOperation):
    """image * brightness_factor."""

    def __init__(self, brightness_factor):
        self._build(brightness_factor=float(brightness_factor))


class AdjustContrast(TensorOperation):
    """Blend with the mean gray level: f * image + (1 - f) * mean(gray)."""

    def __init__(self, contrast_factor):
        self._build(contrast_factor=float(contrast_factor))


class AdjustSaturation(TensorOperation):
    """Blend with the per-pixel gray: f * image + (1 - f) * gray."""

    def __init__(self, saturation_factor):
        self._build(saturation_factor=float(saturation_factor))


class AdjustHue(TensorOperation):
    """Rotates the hue by hue_factor turns (in [-0.5, 0.5])."""

    def __init__(self, hue_factor):
        self._build(hue_factor=float(hue_factor))


class AdjustSharpness(TensorOperation):
    """Blend with a 3x3 smoothing of the image (PIL's ImageEnhance.Sharpness)."""

    def __init__(self, sharpness_factor):
        self._build(sharpness_factor=float(sharpness_factor))


class RandAugment(TensorOperation):
    """num_ops random operations from RandAugment's 14 at one magnitude bin (uint8 RGB images)."""

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation=Inter.NEAREST,
                 fill_value=0):
        self._build(num_ops=num_ops, magnitude=magnitude, num_magnitude_bins=num_magnitude_bins,
                    interpolation=_enum_value(interpolation), fill_value=_fill(fill_value))


class UniformAugment(TensorOperation):
    """Picks num_ops of the transforms per row and applies each picked one with probability 1/2."""

    def __init__(self, transforms, num_ops=2):
        self.transforms = transforms
        self._build(children=_to_handles(transforms, "UniformAugment"), num_ops=num_ops)
