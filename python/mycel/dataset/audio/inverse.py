"""Transforms that go back from spectra to waveforms or linear spectra, as MindSpore's (torchaudio's
algorithms): GriffinLim (phase recovery by alternating projections, with momentum),
InverseMelScale (a non-negative least-squares fit by SGD with momentum) and PitchShift (a
phase-vocoder time stretch followed by resampling)."""
import math

import numpy as np

from mycel.dataset.audio.transforms import AudioTensorOperation, TimeStretch, _stft, _window
from mycel.dataset.audio.utils import (BorderType, MelType, NormType, WindowType, check_enum, check_float,
                                       check_int, melscale_fbanks)

__all__ = ["GriffinLim", "InverseMelScale", "PitchShift"]


def _padded_window(kind, n_fft, win_length):
    w = np.zeros(n_fft)
    left = (n_fft - win_length) // 2
    w[left:left + win_length] = _window(kind, win_length)
    return w


def istft(spec, n_fft, hop, win, length=None):
    """Inverse of the centred, onesided STFT (..., n_fft // 2 + 1, frames) -> (..., time):
    windowed overlap-add divided by the summed squared window, n_fft // 2 trimmed each side."""
    frames = np.fft.irfft(spec, n=n_fft, axis=-2) * win[:, None]  # (..., n_fft, T)
    t = frames.shape[-1]
    total = n_fft + hop * (t - 1)
    y = np.zeros(frames.shape[:-2] + (total,))
    env = np.zeros(total)
    for k in range(t):
        y[..., k * hop:k * hop + n_fft] += frames[..., k]
        env[k * hop:k * hop + n_fft] += win ** 2
    start = n_fft // 2
    end = total - n_fft // 2 if length is None else start + length
    y, env = y[..., start:end], env[start:end]
    y = y / np.where(env > 1e-11, env, 1.0)
    if length is not None and y.shape[-1] < length:
        y = np.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, length - y.shape[-1])])
    return y


class GriffinLim(AudioTensorOperation):
    """A waveform (..., time) from a magnitude spectrogram (..., n_fft // 2 + 1, frames) raised
    to `power`: n_iter rounds of istft/stft keep the phase and restore the magnitude, with
    momentum on the phase estimates (fast Griffin-Lim). rand_init starts from random phases
    (seeded per row in a pipeline), otherwise from zero phase."""
    _min_rank = 2

    def __init__(self, n_fft=400, n_iter=32, win_length=None, hop_length=None,
                 window_type=WindowType.HANN, power=2.0, momentum=0.99, length=None, rand_init=True):
        owner = "GriffinLim"
        self.n_fft = check_int(owner, "n_fft", n_fft, 1)
        self.n_iter = check_int(owner, "n_iter", n_iter, 1)
        self.win_length = self.n_fft if win_length is None else check_int(owner, "win_length", win_length, 1)
        if self.win_length > self.n_fft:
            raise ValueError(f"{owner}: win_length ({self.win_length}) must not exceed n_fft ({self.n_fft})")
        self.hop_length = max(self.win_length // 2, 1) if hop_length is None else \
            check_int(owner, "hop_length", hop_length, 1)
        self.window = check_enum(owner, "window_type", window_type, WindowType)
        self.power = check_float(owner, "power", power, 0.0, lo_open=True)
        self.momentum = check_float(owner, "momentum", momentum, 0.0)
        if self.momentum >= 1:
            raise ValueError(f"{owner}: momentum must be < 1, got {momentum!r}")
        self.length = None if length is None else check_int(owner, "length", length, 0)
        if not isinstance(rand_init, bool):
            raise TypeError(f"{owner}: rand_init must be a bool, got {rand_init!r}")
        self.rand_init = rand_init
        super().__init__()

    def _apply(self, a, n_iter=None):
        bins = self.n_fft // 2 + 1
        if a.shape[-2] != bins:
            raise ValueError(f"GriffinLim: the spectrogram has {a.shape[-2]} frequency bins (shape "
                             f"{a.shape}), n_fft {self.n_fft} needs {bins}")
        mag = np.asarray(a, np.float64) ** (1.0 / self.power)
        win = _padded_window(self.window, self.n_fft, self.win_length)
        if self.rand_init:
            from mycel.dataset.engine import get_row_seed
            angles = np.exp(2j * np.pi * np.random.default_rng(get_row_seed()).random(mag.shape))
        else:
            angles = np.ones(mag.shape, np.complex128)
        prev = 0.0
        length = self.length if self.length is not None else self.hop_length * (mag.shape[-1] - 1)
        for _ in range(self.n_iter if n_iter is None else n_iter):
            wave = istft(mag * angles, self.n_fft, self.hop_length, win, length)
            rebuilt = _stft(wave, self.n_fft, self.hop_length, win, True, BorderType.REFLECT, True)
            angles = rebuilt - prev * (self.momentum / (1 + self.momentum)) if self.momentum else rebuilt
            angles = angles / (np.abs(angles) + 1e-16)
            prev = rebuilt
        return istft(mag * angles, self.n_fft, self.hop_length, win, self.length)


class InverseMelScale(AudioTensorOperation):
    """A linear spectrogram (..., n_stft, time) from a mel one (..., n_mels, time): the
    non-negative S minimising the squared error of melscale_fbanks' projection, by SGD with
    momentum (sgdargs {'sgd_lr': 0.1, 'sgd_momentum': 0.9}) from a random start, stopping after
    max_iter steps, when the loss falls below tolerance_loss or changes by less than
    tolerance_change."""
    _min_rank = 2

    def __init__(self, n_stft, n_mels=128, sample_rate=16000, f_min=0.0, f_max=None, max_iter=100000,
                 tolerance_loss=1e-5, tolerance_change=1e-8, sgdargs=None, norm=NormType.NONE,
                 mel_type=MelType.HTK):
        owner = "InverseMelScale"
        self.n_stft = check_int(owner, "n_stft", n_stft, 1)
        self.n_mels = check_int(owner, "n_mels", n_mels, 1)
        self.sample_rate = check_int(owner, "sample_rate", sample_rate, 1)
        self.f_min = check_float(owner, "f_min", f_min, 0.0)
        self.f_max = float(self.sample_rate // 2) if f_max is None else check_float(owner, "f_max", f_max, 0.0)
        self.max_iter = check_int(owner, "max_iter", max_iter, 1)
        self.tolerance_loss = check_float(owner, "tolerance_loss", tolerance_loss, 0.0)
        self.tolerance_change = check_float(owner, "tolerance_change", tolerance_change, 0.0)
        args = {"sgd_lr": 0.1, "sgd_momentum": 0.9}
        if sgdargs is not None:
            if not isinstance(sgdargs, dict) or set(sgdargs) - set(args):
                raise ValueError(f"{owner}: sgdargs must be a dict with keys 'sgd_lr' and 'sgd_momentum', "
                                 f"got {sgdargs!r}")
            args.update(sgdargs)
        self.lr = check_float(owner, "sgd_lr", args["sgd_lr"], 0.0, lo_open=True)
        self.sgd_momentum = check_float(owner, "sgd_momentum", args["sgd_momentum"], 0.0)
        self.norm = check_enum(owner, "norm", norm, NormType)
        self.mel_type = check_enum(owner, "mel_type", mel_type, MelType)
        self.fb = melscale_fbanks(self.n_stft, self.f_min, self.f_max, self.n_mels, self.sample_rate,
                                  self.norm, self.mel_type).astype(np.float64)  # (n_stft, n_mels)
        super().__init__()

    def _apply(self, a):
        if a.shape[-2] != self.n_mels:
            raise ValueError(f"InverseMelScale: the input has {a.shape[-2]} mel bins (shape {a.shape}) "
                             f"but n_mels is {self.n_mels}")
        lead = a.shape[:-2]
        mel = np.swapaxes(np.asarray(a, np.float64).reshape((-1,) + a.shape[-2:]), -1, -2)  # (B, T, mels)
        from mycel.dataset.engine import get_row_seed
        spec = np.random.default_rng(get_row_seed()).random(mel.shape[:2] + (self.n_stft,))
        count = mel.shape[0] * mel.shape[1]
        buf, loss = None, math.inf
        for _ in range(self.max_iter):
            diff = mel - spec @ self.fb
            new_loss = float(np.sum(diff ** 2) / max(count, 1))
            grad = (-2.0 / max(count, 1)) * (diff @ self.fb.T)
            buf = grad if buf is None else self.sgd_momentum * buf + grad
            spec = np.maximum(spec - self.lr * buf, 0.0)
            if new_loss < self.tolerance_loss or abs(loss - new_loss) < self.tolerance_change:
                break
            loss = new_loss
        return np.swapaxes(spec, -1, -2).reshape(lead + (self.n_stft, mel.shape[1]))


def resample_sinc(x, orig, new, width=6, rolloff=0.99):
    """x (..., time) resampled from rate orig to new with Resample's Hann-windowed sinc,
    evaluated directly at each output instant (no (new, orig) kernel table, so rates with a
    small common divisor stay cheap): y[j] = sum_s x[s] k(s / orig - j / new)."""
    g = math.gcd(int(orig), int(new))
    orig, new = int(orig) // g, int(new) // g
    if orig == new:
        return x
    base = min(orig, new) * rolloff
    n = x.shape[-1]
    out = int(math.ceil(new * n / orig))
    reach = width * orig / base  # input samples each side of an output instant
    j = np.arange(out)
    centre = j * orig / new
    s = np.floor(centre - reach).astype(np.int64)[:, None] + np.arange(int(2 * math.ceil(reach)) + 2)[None, :]
    u = np.clip((s / orig - j[:, None] / new) * base, -width, width)
    with np.errstate(invalid="ignore", divide="ignore"):
        k = np.where(u == 0, 1.0, np.sin(np.pi * u) / (np.pi * u))
    k = k * np.cos(u * np.pi / width / 2) ** 2 * (base / orig)
    valid = (s >= 0) & (s < n)
    k = np.where(valid, k, 0.0)
    return np.einsum("...jt,jt->...j", x[..., np.clip(s, 0, n - 1)], k)


class PitchShift(AudioTensorOperation):
    """Shifts a waveform's pitch by n_steps steps of 1 / bins_per_octave octave, keeping its
    length: the STFT is time-stretched by 2^(-n_steps / bins_per_octave) (phase vocoder), turned
    back into a waveform and resampled from sample_rate / rate to sample_rate."""

    def __init__(self, sample_rate, n_steps, bins_per_octave=12, n_fft=512, win_length=None,
                 hop_length=None, window=WindowType.HANN):
        owner = "PitchShift"
        self.sample_rate = check_int(owner, "sample_rate", sample_rate, 1)
        self.n_steps = check_int(owner, "n_steps", n_steps)
        self.bins_per_octave = check_int(owner, "bins_per_octave", bins_per_octave)
        if self.bins_per_octave == 0:
            raise ValueError(f"{owner}: bins_per_octave must not be 0")
        self.n_fft = check_int(owner, "n_fft", n_fft, 1)
        self.win_length = self.n_fft if win_length is None else check_int(owner, "win_length", win_length, 1)
        if self.win_length > self.n_fft:
            raise ValueError(f"{owner}: win_length ({self.win_length}) must not exceed n_fft ({self.n_fft})")
        self.hop_length = max(self.win_length // 4, 1) if hop_length is None else \
            check_int(owner, "hop_length", hop_length, 1)
        self.window = check_enum(owner, "window", window, WindowType)
        super().__init__()

    def _apply(self, a):
        n = a.shape[-1]
        rate = 2.0 ** (-self.n_steps / self.bins_per_octave)
        win = _padded_window(self.window, self.n_fft, self.win_length)
        try:
            spec = _stft(np.asarray(a, np.float64), self.n_fft, self.hop_length, win, True,
                         BorderType.REFLECT, True)
        except ValueError as e:
            raise ValueError(f"PitchShift: {e}") from None
        stretch = TimeStretch(self.hop_length, self.n_fft // 2 + 1, rate)._apply(
            np.stack([spec.real, spec.imag], axis=-1))
        wave = istft(stretch[..., 0] + 1j * stretch[..., 1], self.n_fft, self.hop_length, win,
                     int(round(n / rate)))
        shifted = resample_sinc(wave, int(self.sample_rate / rate), self.sample_rate)
        if shifted.shape[-1] >= n:
            return shifted[..., :n]
        return np.pad(shifted, [(0, 0)] * (shifted.ndim - 1) + [(0, n - shifted.shape[-1])])
