"""Feature transforms of MindSpore's mindspore.dataset.audio (torchaudio's numerics): LFCC
(cepstra over a linear filter bank), DetectPitchFrequency (normalized cross-correlation per
frame, then median smoothing), SlidingWindowCmn (cepstral mean and variance normalization over a
sliding window of frames) and Magphase (magnitude and phase of a complex (..., 2) array)."""
import math

import numpy as np

from mycel import _mycel
from mycel.dataset.audio.transforms import AmplitudeToDB, AudioTensorOperation, Spectrogram
from mycel.dataset.audio.utils import NormMode, ScaleType, check_enum, check_float, check_int, create_dct

__all__ = ["linear_fbanks", "LFCC", "DetectPitchFrequency", "SlidingWindowCmn", "Magphase"]


def linear_fbanks(n_freqs, f_min, f_max, n_filter, sample_rate):
    """The (n_freqs, n_filter) matrix of triangular filters over n_freqs STFT bins from 0 to
    sample_rate / 2, the n_filter + 2 corner frequencies evenly spaced in Hz from f_min to f_max."""
    freqs = np.linspace(0, sample_rate // 2, n_freqs)
    corners = np.linspace(f_min, f_max, n_filter + 2)
    lo, mid, hi = corners[:-2], corners[1:-1], corners[2:]
    with np.errstate(divide="ignore", invalid="ignore"):
        rise = (freqs[:, None] - lo) / (mid - lo)
        fall = (hi - freqs[:, None]) / (hi - mid)
    return np.nan_to_num(np.maximum(0.0, np.minimum(rise, fall)), nan=0.0)


class LFCC(AudioTensorOperation):
    """Linear-frequency cepstral coefficients: Spectrogram(**speckwargs) (power 2, n_fft 400 by
    default), n_filter linear triangular filters from f_min to f_max (None: sample_rate / 2),
    decibels (AmplitudeToDB(POWER, top_db=80)) or log(x + 1e-6) with log_lf, then the first
    n_lfcc DCT-II coefficients: (..., time) -> (..., n_lfcc, frames)."""

    def __init__(self, sample_rate=16000, n_filter=128, n_lfcc=40, f_min=0.0, f_max=None, dct_type=2,
                 norm=NormMode.ORTHO, log_lf=False, speckwargs=None):
        owner = "LFCC"
        self.sample_rate = check_int(owner, "sample_rate", sample_rate, 1)
        self.n_filter = check_int(owner, "n_filter", n_filter, 1)
        self.n_lfcc = check_int(owner, "n_lfcc", n_lfcc, 1)
        self.f_min = check_float(owner, "f_min", f_min, 0.0)
        self.f_max = float(self.sample_rate // 2) if f_max is None else check_float(owner, "f_max", f_max, 0.0)
        if self.f_min > self.f_max:
            raise ValueError(f"{owner}: f_min ({self.f_min}) must not exceed f_max ({self.f_max})")
        if dct_type != 2:
            raise ValueError(f"{owner}: only dct_type 2 is supported, got {dct_type!r}")
        self.norm = check_enum(owner, "norm", norm, NormMode)
        if not isinstance(log_lf, bool):
            raise TypeError(f"{owner}: log_lf must be a bool, got {log_lf!r}")
        if self.n_lfcc > self.n_filter:
            raise ValueError(f"{owner}: n_lfcc ({self.n_lfcc}) must not exceed n_filter ({self.n_filter})")
        if speckwargs is not None and not isinstance(speckwargs, dict):
            raise TypeError(f"{owner}: speckwargs must be a dict of Spectrogram arguments, got {speckwargs!r}")
        self.log_lf = log_lf
        self.spectrogram = Spectrogram(**(speckwargs or {}))
        self.filters = linear_fbanks(self.spectrogram.n_fft // 2 + 1, self.f_min, self.f_max, self.n_filter,
                                     self.sample_rate)
        self.dct = create_dct(self.n_lfcc, self.n_filter, self.norm).astype(np.float64)
        self.to_db = AmplitudeToDB(ScaleType.POWER, 1.0, 1e-10, 80.0)
        super().__init__()

    def _apply(self, a):
        spec = np.swapaxes(np.swapaxes(self.spectrogram._apply(a), -1, -2) @ self.filters, -1, -2)
        spec = np.log(spec + 1e-6) if self.log_lf else self.to_db._apply(spec)
        return np.swapaxes(np.swapaxes(spec, -1, -2) @ self.dct, -1, -2)


class DetectPitchFrequency(AudioTensorOperation):
    """The pitch (Hz) of each frame_time-second frame of a waveform (..., time): the lag (from
    sample_rate / freq_high to sample_rate / freq_low) of the largest normalized cross-
    correlation of the frame with its shifted copy -- preferring the smallest near-maximum lag
    (within 1 %) in the lower half of the lags -- median-smoothed over win_length frames:
    (..., time) -> (..., frames)."""

    def __init__(self, sample_rate, frame_time=0.01, win_length=30, freq_low=85, freq_high=3400):
        owner = "DetectPitchFrequency"
        self.sample_rate = check_int(owner, "sample_rate", sample_rate, 1)
        self.frame_time = check_float(owner, "frame_time", frame_time, 0.0, lo_open=True)
        self.win_length = check_int(owner, "win_length", win_length, 1)
        self.freq_low = check_float(owner, "freq_low", freq_low, 0.0, lo_open=True)
        self.freq_high = check_float(owner, "freq_high", freq_high, 0.0, lo_open=True)
        super().__init__()

    def _apply(self, a):
        sr, eps = self.sample_rate, 1e-9
        x = a.reshape(-1, a.shape[-1]).astype(np.float64)
        lags = int(math.ceil(sr / self.freq_low))
        size = int(math.ceil(sr * self.frame_time))
        frames = int(math.ceil(x.shape[1] / size))
        x = np.pad(x, ((0, 0), (0, lags + frames * size - x.shape[1])))
        # frame f of the signal against frame f of the signal shifted by each lag
        head = x[:, :frames * size].reshape(len(x), frames, size)
        nccf = np.empty((len(x), frames, lags))
        for lag in range(1, lags + 1):
            tail = x[:, lag:lag + frames * size].reshape(len(x), frames, size)
            nccf[:, :, lag - 1] = (head * tail).sum(-1) / (eps + np.sqrt((head * head).sum(-1))) ** 2 / \
                (eps + np.sqrt((tail * tail).sum(-1))) ** 2
        lag_min = int(math.ceil(sr / self.freq_high))
        best = np.argmax(nccf[..., lag_min:], -1)
        best_val = np.take_along_axis(nccf[..., lag_min:], best[..., None], -1)[..., 0]
        half = lags // 2
        if half > lag_min:
            low = np.argmax(nccf[..., lag_min:half], -1)
            low_val = np.take_along_axis(nccf[..., lag_min:half], low[..., None], -1)[..., 0]
            best = np.where(low_val > 0.99 * best_val, low, best)
        lag = best + lag_min + 1  # +1: torchaudio's empirical calibration
        smooth = self._median(lag)
        return (sr / (eps + smooth.astype(np.float32))).reshape(a.shape[:-1] + smooth.shape[-1:])

    def _median(self, lag):
        """Median (the lower one of an even window) of each win_length window, the sequence
        first padded on the left with (win_length - 1) // 2 copies of its first value."""
        w = self.win_length
        pad = (w - 1) // 2
        seq = np.concatenate([np.repeat(lag[:, :1], pad, axis=1), lag], axis=1) if lag.shape[1] else lag
        count = seq.shape[1] - w + 1
        if count <= 0:
            return np.zeros((lag.shape[0], 0), np.int64)
        windows = np.stack([seq[:, i:i + w] for i in range(count)], axis=1)
        return np.sort(windows, axis=-1)[..., (w - 1) // 2]


class SlidingWindowCmn(AudioTensorOperation):
    """Cepstral mean (and with norm_vars variance) normalization of features (..., time, feat),
    as torchaudio's and Kaldi's: each frame minus the mean of a window of frames -- the
    cmn_window frames centred on it (center), or else the cmn_window frames before it and itself,
    at least min_cmn_window from the start -- the window shifted to fit inside the utterance;
    norm_vars divides by the window's standard deviation (a one-frame window gives zeros)."""
    _min_rank = 2

    def __init__(self, cmn_window=600, min_cmn_window=100, center=False, norm_vars=False):
        owner = "SlidingWindowCmn"
        self.cmn_window = check_int(owner, "cmn_window", cmn_window, 0)
        self.min_cmn_window = check_int(owner, "min_cmn_window", min_cmn_window, 0)
        for name, v in (("center", center), ("norm_vars", norm_vars)):
            if not isinstance(v, bool):
                raise TypeError(f"{owner}: {name} must be a bool, got {v!r}")
        self.center, self.norm_vars = center, norm_vars
        super().__init__()

    def _windows(self, n):
        """[start, end) of each frame's window."""
        t = np.arange(n)
        if self.center:
            start = t - self.cmn_window // 2
            end = start + self.cmn_window
        else:
            start = t - self.cmn_window
            end = t + 1
        end = np.where(start < 0, end - start, end)
        start = np.maximum(start, 0)
        if not self.center:
            end = np.where(end > t, np.maximum(t + 1, self.min_cmn_window), end)
        over = end > n
        start = np.where(over, np.maximum(start - (end - n), 0), start)
        return start, np.minimum(end, n)

    def _apply(self, a):
        x = a.reshape(-1, a.shape[-2], a.shape[-1]).astype(np.float64)
        n = x.shape[1]
        start, end = self._windows(n)
        count = (end - start)[None, :, None].astype(np.float64)
        zero = np.zeros_like(x[:, :1])
        csum = np.concatenate([zero, np.cumsum(x, axis=1)], axis=1)
        mean = (csum[:, end] - csum[:, start]) / count
        out = x - mean
        if self.norm_vars:
            csq = np.concatenate([zero, np.cumsum(x * x, axis=1)], axis=1)
            var = (csq[:, end] - csq[:, start]) / count - mean ** 2
            with np.errstate(divide="ignore", invalid="ignore"):
                out = out * np.power(var, -0.5)
            out = np.where(count == 1, 0.0, out)
        return out.reshape(a.shape)


class Magphase(AudioTensorOperation):
    """(magnitude, phase) of a complex array (..., 2): ((re^2 + im^2)^(power / 2), atan2(im,
    re)); a map op gives it two output columns."""

    def __init__(self, power=1.0):
        self.power = check_float("Magphase", "power", power, 0.0)
        super().__init__()

    def __call__(self, *inputs):
        if len(inputs) != 1:
            raise TypeError(f"Magphase: expected one input, got {len(inputs)}")
        x = inputs[0]
        a = x.asnumpy() if isinstance(x, _mycel.Tensor) else np.asarray(x)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"Magphase: the input must be numeric, got dtype {a.dtype}")
        if a.ndim < 1 or a.shape[-1] != 2:
            raise ValueError(f"Magphase: the input must be complex (..., 2), got shape {a.shape}")
        dt = np.float64 if a.dtype == np.float64 else np.float32
        re, im = a[..., 0].astype(np.float64), a[..., 1].astype(np.float64)
        mag = np.power(re * re + im * im, self.power / 2.0)
        return mag.astype(dt), np.arctan2(im, re).astype(dt)
