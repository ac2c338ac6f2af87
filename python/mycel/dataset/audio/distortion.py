"""Sample-level audio effects of MindSpore's mindspore.dataset.audio (torchaudio's numerics):
DCShift (a DC offset with a limiter on the peaks), Dither (16-bit requantization with a
triangular, rectangular or Gaussian dither and optional noise shaping) and Overdrive (SoX's soft
clipper followed by its DC-blocking filter)."""
import enum

import numpy as np

from mycel.dataset.audio.transforms import AudioTensorOperation
from mycel.dataset.audio.utils import check_enum, check_float

__all__ = ["DensityFunction", "DCShift", "Dither", "Overdrive"]


class DensityFunction(str, enum.Enum):
    """Dither's noise distribution: triangular, rectangular or (approximately) Gaussian."""
    TPDF = "TPDF"
    RPDF = "RPDF"
    GPDF = "GPDF"


class DCShift(AudioTensorOperation):
    """x + shift clipped to [-1, 1]; with a limiter (limiter_gain, by default equal to shift,
    as MindSpore's), the samples beyond the threshold 1 - (|shift| - limiter_gain) on the shift's
    side are compressed towards it instead: threshold + (x - threshold) limiter_gain / (1 -
    threshold) + shift, capped at the threshold (torchaudio's dcshift, mirrored for a negative
    shift). shift in [-2, 2]."""

    def __init__(self, shift, limiter_gain=None):
        owner = "DCShift"
        self.shift = check_float(owner, "shift", shift, -2.0, 2.0)
        self.limiter_gain = self.shift if limiter_gain is None else check_float(owner, "limiter_gain", limiter_gain)
        super().__init__()

    def _apply(self, a):
        shift, gain = self.shift, self.limiter_gain
        plain = np.clip(a + shift, -1.0, 1.0)
        if gain == 0.0 or shift == 0.0:  # MindSpore treats a zero gain as "no limiter"
            return plain
        thr = 1.0 - (abs(shift) - gain)
        with np.errstate(divide="ignore", invalid="ignore"):
            if shift > 0:
                peak = a > thr
                limited = np.minimum((a - thr) * gain / (1.0 - thr) + thr + shift, thr)
            else:
                peak = a < -thr
                limited = np.maximum((a + thr) * gain / (1.0 - thr) - thr + shift, -thr)
        return np.where(peak, limited, plain)


def _dither_noise(x, kind, rng):
    """The value added to every sample of each row (rows, time) before rounding, as torchaudio's
    dither draws it: a periodic triangular window over time (TPDF), one sample of the signal
    minus 0.5 (RPDF), or the sum of seven samples of the signal (GPDF)."""
    rows, n = x.shape
    if kind is DensityFunction.TPDF:
        k = np.arange(n, dtype=np.float64)
        return np.broadcast_to(1.0 - np.abs(2.0 * k / n - 1.0) if n > 1 else np.ones(1), x.shape)
    # torchaudio picks the signal's samples at indices below (rows - 1) and (time - 1)
    pick_row = lambda: int(rng.integers(rows - 1)) if rows > 1 else 0  # noqa: E731
    pick_time = lambda: int(rng.integers(n - 1)) if n > 1 else 0  # noqa: E731
    if kind is DensityFunction.RPDF:
        return np.full(x.shape, x[pick_row(), pick_time()] - 0.5)
    total = x[pick_row(), pick_time()]
    for _ in range(6):
        total += x[pick_row(), pick_time()]
    return np.full(x.shape, total)


class Dither(AudioTensorOperation):
    """Requantizes a waveform (..., time) in [-1, 1] to 16 bits with dither: round(x (2^15 - 2)
    + noise) / 2^15, the noise of density_function (TPDF: a triangular ramp over the waveform;
    RPDF, GPDF: drawn from the waveform's own samples with the row's random seed, as
    torchaudio's). noise_shaping adds each sample's requantization error to the next sample."""

    def __init__(self, density_function=DensityFunction.TPDF, noise_shaping=False):
        owner = "Dither"
        self.density_function = check_enum(owner, "density_function", density_function, DensityFunction)
        if not isinstance(noise_shaping, bool):
            raise TypeError(f"{owner}: noise_shaping must be a bool, got {noise_shaping!r}")
        self.noise_shaping = noise_shaping
        super().__init__()

    def _apply(self, a):
        from mycel.dataset.engine import get_row_seed
        x = a.reshape(-1, a.shape[-1]).astype(np.float64)
        noise = _dither_noise(x, self.density_function, np.random.default_rng(get_row_seed()))
        out = np.round(x * (2.0 ** 15 - 2) + noise) / 2.0 ** 15
        if self.noise_shaping:
            err = out - x
            out[:, 1:] += err[:, :-1]
        return out.reshape(a.shape)


class Overdrive(AudioTensorOperation):
    """SoX's overdrive: y = x g + color / 200 (g = 10^(gain / 20)) through the soft clipper
    y - y^3 / 3 (-2/3 below -1, 2/3 above 1), then the DC blocker o[n] = c[n] - c[n-1] + 0.995
    o[n-1]; output x / 2 + 3 o / 4 clipped to [-1, 1]. gain and color in [0, 100]."""

    def __init__(self, gain=20.0, color=20.0):
        self.gain = check_float("Overdrive", "gain", gain, 0.0, 100.0)
        self.color = check_float("Overdrive", "color", color, 0.0, 100.0)
        super().__init__()

    def _apply(self, a):
        x = a.reshape(-1, a.shape[-1]).astype(np.float64)
        y = x * 10.0 ** (self.gain / 20.0) + self.color / 200.0
        clipped = np.where(y < -1, -2.0 / 3.0, np.where(y > 1, 2.0 / 3.0, y - y ** 3 / 3.0))
        # the DC blocker is the IIR filter (1 - z^-1) / (1 - 0.995 z^-1)
        from mycel.dataset.audio.filters import lfilter
        blocked = lfilter(clipped, [1.0, -0.995], [1.0, -1.0], clamp=False)
        return np.clip(x * 0.5 + blocked * 0.75, -1.0, 1.0).reshape(a.shape)
