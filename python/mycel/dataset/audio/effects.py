"""Sample-wise audio effects with closed forms, as MindSpore's (torchaudio's): Contrast (SoX's
'contrast'), MuLawEncoding and MuLawDecoding (mu-law companding, ITU-T G.711's curve)."""
import numpy as np

from mycel import _mycel
from mycel.dataset.audio.transforms import AudioTensorOperation
from mycel.dataset.audio.utils import check_float, check_int

__all__ = ["Contrast", "MuLawEncoding", "MuLawDecoding"]


class Contrast(AudioTensorOperation):
    """Louder-sounding audio without clipping, like a compressor: sin(x pi/2 + c sin(2 pi x))
    with c = enhancement_amount / 750 (enhancement_amount in [0, 100])."""

    def __init__(self, enhancement_amount=75.0):
        self.enhancement_amount = check_float("Contrast", "enhancement_amount", enhancement_amount, 0.0, 100.0)
        super().__init__()

    def _apply(self, a):
        x = a * (np.pi / 2)
        return np.sin(x + self.enhancement_amount / 750.0 * np.sin(4 * x))


class MuLawEncoding(AudioTensorOperation):
    """A waveform in [-1, 1] -> mu-law codes 0 .. quantization_channels - 1 (int32):
    round(((sign(x) log(1 + mu |x|) / log(1 + mu)) + 1) / 2 * mu), mu = channels - 1."""

    def __init__(self, quantization_channels=256):
        self.quantization_channels = check_int("MuLawEncoding", "quantization_channels", quantization_channels, 2)
        super().__init__()

    def __call__(self, *inputs):
        if len(inputs) != 1:
            raise TypeError(f"MuLawEncoding: expected one input, got {len(inputs)}")
        x = inputs[0]
        a = x.asnumpy() if isinstance(x, _mycel.Tensor) else np.asarray(x)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"MuLawEncoding: the input must be numeric, got dtype {a.dtype}")
        return self._apply(a.astype(np.float64))

    def _apply(self, a):
        mu = self.quantization_channels - 1.0
        y = np.sign(a) * np.log1p(mu * np.abs(a)) / np.log1p(mu)
        return np.floor((y + 1) / 2 * mu + 0.5).astype(np.int32)


class MuLawDecoding(AudioTensorOperation):
    """mu-law codes -> a waveform in [-1, 1] (float32): the inverse curve at each code,
    sign(y) ((1 + mu)^|y| - 1) / mu with y = 2 code / mu - 1."""

    def __init__(self, quantization_channels=256):
        self.quantization_channels = check_int("MuLawDecoding", "quantization_channels", quantization_channels, 2)
        super().__init__()

    def _apply(self, a):
        mu = self.quantization_channels - 1.0
        y = a / mu * 2 - 1.0
        return np.sign(y) * np.expm1(np.abs(y) * np.log1p(mu)) / mu
