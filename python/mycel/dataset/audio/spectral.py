"""Spectral transforms over complex spectrograms, as MindSpore's (torchaudio's): InverseSpectrogram
(the inverse STFT), PhaseVocoder (time stretch with a given phase advance) and SpectralCentroid
(the magnitude-weighted mean frequency of each frame)."""
import numpy as np

from mycel.dataset.audio.inverse import _padded_window, istft
from mycel.dataset.audio.transforms import AudioTensorOperation, Spectrogram, _phase_vocoder
from mycel.dataset.audio.utils import BorderType, WindowType, check_enum, check_float, check_int

__all__ = ["InverseSpectrogram", "PhaseVocoder", "SpectralCentroid"]


def _complex(owner, a, min_rank=3):
    if a.ndim < min_rank or a.shape[-1] != 2:
        raise ValueError(f"{owner}: the input must be a complex spectrogram (..., freq, time, 2), "
                         f"got shape {a.shape}")
    return a[..., 0] + 1j * a[..., 1]


class InverseSpectrogram(AudioTensorOperation):
    """A complex spectrogram (..., n_fft // 2 + 1, frames, 2) -> the waveform (..., time) whose
    Spectrogram(power=None) it is: windowed overlap-add over the summed squared window, centred
    frames trimmed, `pad` samples removed from each end, cut or zero-padded to `length`."""
    _min_rank = 3

    def __init__(self, length=None, n_fft=400, win_length=None, hop_length=None, pad=0,
                 window=WindowType.HANN, normalized=False, center=True, pad_mode=BorderType.REFLECT,
                 onesided=True):
        owner = "InverseSpectrogram"
        self.length = None if length is None else check_int(owner, "length", length, 0)
        self.n_fft = check_int(owner, "n_fft", n_fft, 1)
        self.win_length = self.n_fft if win_length is None else check_int(owner, "win_length", win_length, 1)
        if self.win_length > self.n_fft:
            raise ValueError(f"{owner}: win_length ({self.win_length}) must not exceed n_fft ({self.n_fft})")
        self.hop_length = max(self.win_length // 2, 1) if hop_length is None else \
            check_int(owner, "hop_length", hop_length, 1)
        self.pad = check_int(owner, "pad", pad, 0)
        self.window = check_enum(owner, "window", window, WindowType)
        self.pad_mode = check_enum(owner, "pad_mode", pad_mode, BorderType)
        for name, v in (("normalized", normalized), ("center", center), ("onesided", onesided)):
            if not isinstance(v, bool):
                raise TypeError(f"{owner}: {name} must be a bool, got {v!r}")
        if not center or not onesided:
            raise ValueError(f"{owner}: only center=True and onesided=True spectrograms are supported")
        self.normalized = normalized
        super().__init__()

    def _apply(self, a):
        spec = _complex("InverseSpectrogram", a)
        if spec.shape[-2] != self.n_fft // 2 + 1:
            raise ValueError(f"InverseSpectrogram: the spectrogram has {spec.shape[-2]} frequency bins, "
                             f"n_fft {self.n_fft} needs {self.n_fft // 2 + 1}")
        win = _padded_window(self.window, self.n_fft, self.win_length)
        if self.normalized:
            spec = spec * np.sqrt(np.sum(win ** 2))
        length = None if self.length is None else self.length + 2 * self.pad
        wave = istft(spec, self.n_fft, self.hop_length, win, length)
        return wave[..., self.pad:wave.shape[-1] - self.pad] if self.pad else wave


class PhaseVocoder(AudioTensorOperation):
    """A complex spectrogram (..., freq, time, 2) sped up by rate without changing its pitch;
    phase_advance (freq, 1) is each bin's expected phase step per frame (for hop h and n_fft
    bins spaced over [0, pi]: linspace(0, pi * h, freq))."""
    _min_rank = 3

    def __init__(self, rate, phase_advance):
        self.rate = check_float("PhaseVocoder", "rate", rate, 0.0, lo_open=True)
        adv = np.asarray(phase_advance, np.float64)
        if adv.ndim != 2 or adv.shape[1] != 1:
            raise ValueError(f"PhaseVocoder: phase_advance must have shape (freq, 1), got {adv.shape}")
        self.phase_advance = adv
        super().__init__()

    def _apply(self, a):
        spec = _complex("PhaseVocoder", a)
        if spec.shape[-2] != self.phase_advance.shape[0]:
            raise ValueError(f"PhaseVocoder: the spectrogram has {spec.shape[-2]} frequency bins, "
                             f"phase_advance {self.phase_advance.shape[0]}")
        out = _phase_vocoder(spec, self.rate, self.phase_advance)
        return np.stack([out.real, out.imag], axis=-1)


class SpectralCentroid(AudioTensorOperation):
    """A waveform (..., time) -> each frame's spectral centroid in Hz, sum_f f |X(f)| / sum_f
    |X(f)| over the bins' frequencies linspace(0, sample_rate // 2, n_fft // 2 + 1), shape
    (..., 1, frames)."""

    def __init__(self, sample_rate, n_fft=400, win_length=None, hop_length=None, pad=0, window=WindowType.HANN):
        self.sample_rate = check_int("SpectralCentroid", "sample_rate", sample_rate, 0)
        self._spec = Spectrogram(n_fft, win_length, hop_length, pad, window, power=1.0)
        self._spec.__name__ = "SpectralCentroid"
        super().__init__()

    def _apply(self, a):
        mag = self._spec._apply(a)
        freqs = np.linspace(0, self.sample_rate // 2, mag.shape[-2])[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):  # a silent frame: 0 / 0 = nan
            return np.sum(freqs * mag, axis=-2, keepdims=True) / np.sum(mag, axis=-2, keepdims=True)
