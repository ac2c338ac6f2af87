"""Audio transforms (MindSpore's mindspore.dataset.audio, whose numerics follow torchaudio's):
numpy functions over waveforms (..., time) and spectrograms (..., freq, time), run by the map
op's workers or eagerly when called on an array. Outputs are float32 (float64 stays float64)."""
import numpy as np

from mycel import _mycel
from mycel.dataset.audio.utils import (BorderType, FadeShape, GainType, MelType, NormMode, NormType,
                                       ResampleMethod, ScaleType, WindowType, check_enum, check_float,
                                       check_int, create_dct, melscale_fbanks)

__all__ = ["AudioTensorOperation", "Spectrogram", "MelScale", "MelSpectrogram", "MFCC", "AmplitudeToDB",
           "Resample", "TimeStretch", "FrequencyMasking", "TimeMasking", "Vol", "Gain", "Fade",
           "ComputeDeltas", "MaskAlongAxis", "MaskAlongAxisIID", "DBToAmplitude", "ComplexNorm",
           "Angle"]


class AudioTensorOperation:
    """Base of the audio transforms: `_apply(array)` on a numpy array, wrapped as an engine
    transform (`_handle`) for Dataset.map."""

    def __init__(self):
        self.__name__ = type(self).__name__

    @property
    def _handle(self):
        return _mycel.data.py_transform(self)

    def __call__(self, *inputs):
        if len(inputs) != 1:
            raise TypeError(f"{self.__name__}: expected one input, got {len(inputs)}")
        x = inputs[0]
        a = x.asnumpy() if isinstance(x, _mycel.Tensor) else np.asarray(x)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"{self.__name__}: the input must be numeric, got dtype {a.dtype}")
        if a.ndim < self._min_rank:
            raise ValueError(f"{self.__name__}: the input must have rank >= {self._min_rank}, got shape {a.shape}")
        out = self._apply(a.astype(np.float64 if a.dtype == np.float64 else np.float32))
        return out.astype(np.float64 if a.dtype == np.float64 else np.float32)

    _min_rank = 1

    def _apply(self, a):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


def _window(kind, n, beta=12.0):
    """Periodic windows of length n (torch's defaults: periodic=True)."""
    if n == 1:
        return np.ones(1)
    k = np.arange(n, dtype=np.float64)
    if kind is WindowType.HANN:
        return 0.5 - 0.5 * np.cos(2 * np.pi * k / n)
    if kind is WindowType.HAMMING:
        return 0.54 - 0.46 * np.cos(2 * np.pi * k / n)
    if kind is WindowType.BLACKMAN:
        return 0.42 - 0.5 * np.cos(2 * np.pi * k / n) + 0.08 * np.cos(4 * np.pi * k / n)
    if kind is WindowType.BARTLETT:
        return 1.0 - np.abs(2.0 * k / n - 1.0)
    return np.kaiser(n + 1, beta)[:n]  # KAISER


def _stft(x, n_fft, hop, win, center, pad_mode, onesided):
    """Complex STFT of x (..., time) -> (..., freq, frames); win has n_fft samples."""
    if center:
        widths = [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)]
        x = np.pad(x, widths, mode=pad_mode.value)
    if x.shape[-1] < n_fft:
        raise ValueError(f"the signal ({x.shape[-1]} samples after padding) is shorter than n_fft ({n_fft})")
    frames = 1 + (x.shape[-1] - n_fft) // hop
    idx = np.arange(n_fft)[None, :] + hop * np.arange(frames)[:, None]
    fr = x[..., idx] * win  # (..., frames, n_fft)
    spec = np.fft.rfft(fr, axis=-1) if onesided else np.fft.fft(fr, axis=-1)
    return np.swapaxes(spec, -1, -2)


class Spectrogram(AudioTensorOperation):
    """|STFT|^power of a waveform (..., time) -> (..., n_fft // 2 + 1, frames) (onesided):
    frames of win_length samples every hop_length, windowed (centred in n_fft), optionally
    centred by padding n_fft // 2 on each side with pad_mode; power None keeps the complex
    values as a trailing (real, imag) dimension; normalized divides by the window's L2 norm."""

    def __init__(self, n_fft=400, win_length=None, hop_length=None, pad=0, window=WindowType.HANN,
                 power=2.0, normalized=False, center=True, pad_mode=BorderType.REFLECT, onesided=True):
        owner = "Spectrogram"
        self.n_fft = check_int(owner, "n_fft", n_fft, 1)
        self.win_length = self.n_fft if win_length is None else check_int(owner, "win_length", win_length, 1)
        if self.win_length > self.n_fft:
            raise ValueError(f"{owner}: win_length ({self.win_length}) must not exceed n_fft ({self.n_fft})")
        self.hop_length = self.win_length // 2 if hop_length is None else check_int(owner, "hop_length", hop_length, 1)
        self.hop_length = max(self.hop_length, 1)
        self.pad = check_int(owner, "pad", pad, 0)
        self.window = check_enum(owner, "window", window, WindowType)
        self.power = None if power is None else check_float(owner, "power", power, 0.0, lo_open=True)
        self.normalized, self.center, self.onesided = bool(normalized), bool(center), bool(onesided)
        self.pad_mode = check_enum(owner, "pad_mode", pad_mode, BorderType)
        super().__init__()

    def _win(self):
        w = np.zeros(self.n_fft)
        left = (self.n_fft - self.win_length) // 2
        w[left:left + self.win_length] = _window(self.window, self.win_length)
        return w

    def _complex(self, a):
        if self.pad:
            a = np.pad(a, [(0, 0)] * (a.ndim - 1) + [(self.pad, self.pad)])
        win = self._win()
        try:
            spec = _stft(a.astype(np.float64), self.n_fft, self.hop_length, win, self.center,
                         self.pad_mode, self.onesided)
        except ValueError as e:
            raise ValueError(f"{self.__name__}: {e}") from None
        if self.normalized:
            spec = spec / np.sqrt(np.sum(win ** 2))
        return spec

    def _apply(self, a):
        spec = self._complex(a)
        if self.power is None:
            return np.stack([spec.real, spec.imag], axis=-1)
        return np.abs(spec) ** self.power


class MelScale(AudioTensorOperation):
    """A spectrogram (..., n_stft, time) -> (..., n_mels, time) through melscale_fbanks."""
    _min_rank = 2

    def __init__(self, n_mels=128, sample_rate=16000, f_min=0.0, f_max=None, n_stft=201,
                 norm=NormType.NONE, mel_type=MelType.HTK):
        owner = "MelScale"
        self.n_mels = check_int(owner, "n_mels", n_mels, 1)
        self.sample_rate = check_int(owner, "sample_rate", sample_rate, 1)
        self.f_max = float(sample_rate // 2) if f_max is None else check_float(owner, "f_max", f_max, 0.0)
        self.f_min = check_float(owner, "f_min", f_min, 0.0)
        self.n_stft = check_int(owner, "n_stft", n_stft, 1)
        self.norm, self.mel_type = check_enum(owner, "norm", norm, NormType), check_enum(owner, "mel_type", mel_type, MelType)
        self.fb = melscale_fbanks(self.n_stft, self.f_min, self.f_max, self.n_mels, self.sample_rate,
                                  self.norm, self.mel_type).astype(np.float64)
        super().__init__()

    def _apply(self, a):
        if a.shape[-2] != self.n_stft:
            raise ValueError(f"MelScale: the input has {a.shape[-2]} frequency bins (shape {a.shape}) "
                             f"but n_stft is {self.n_stft}")
        return np.swapaxes(np.swapaxes(a, -1, -2) @ self.fb, -1, -2)


class MelSpectrogram(AudioTensorOperation):
    """Spectrogram followed by MelScale: a waveform (..., time) -> (..., n_mels, frames)."""

    def __init__(self, sample_rate=16000, n_fft=400, win_length=None, hop_length=None, f_min=0.0,
                 f_max=None, pad=0, n_mels=128, window=WindowType.HANN, power=2.0, normalized=False,
                 center=True, pad_mode=BorderType.REFLECT, onesided=True, norm=NormType.NONE,
                 mel_scale=MelType.HTK):
        if power is None:
            raise ValueError("MelSpectrogram: power must be a number (a complex spectrogram has no mel scale)")
        self.spectrogram = Spectrogram(n_fft, win_length, hop_length, pad, window, power, normalized,
                                       center, pad_mode, onesided)
        self.mel_scale = MelScale(n_mels, sample_rate, f_min, f_max, n_fft // 2 + 1, norm, mel_scale)
        super().__init__()

    def _apply(self, a):
        return self.mel_scale._apply(self.spectrogram._apply(a))


class AmplitudeToDB(AudioTensorOperation):
    """multiplier * log10(max(x, amin)) - multiplier * log10(max(amin, ref_value)), multiplier 10
    for POWER and 20 for MAGNITUDE; with top_db, values below (max - top_db) are raised to it
    (the max over each spectrogram, i.e. the last three dimensions)."""

    def __init__(self, stype=ScaleType.POWER, ref_value=1.0, amin=1e-10, top_db=80.0):
        owner = "AmplitudeToDB"
        self.stype = check_enum(owner, "stype", stype, ScaleType)
        self.ref_value = check_float(owner, "ref_value", ref_value, 0.0, lo_open=True)
        self.amin = check_float(owner, "amin", amin, 0.0, lo_open=True)
        self.top_db = None if top_db is None else check_float(owner, "top_db", top_db, 0.0)
        super().__init__()

    def _apply(self, a):
        mult = 10.0 if self.stype is ScaleType.POWER else 20.0
        db = mult * np.log10(np.maximum(a.astype(np.float64), self.amin))
        db -= mult * np.log10(max(self.amin, self.ref_value))
        if self.top_db is not None:
            axes = tuple(range(max(0, db.ndim - 3), db.ndim))
            db = np.maximum(db, db.max(axis=axes, keepdims=True) - self.top_db)
        return db


class MFCC(AudioTensorOperation):
    """Mel-frequency cepstral coefficients: MelSpectrogram(**melkwargs), then decibels
    (AmplitudeToDB(POWER, top_db=80)) or log(x + 1e-6) with log_mels, then create_dct:
    (..., time) -> (..., n_mfcc, frames)."""

    def __init__(self, sample_rate=16000, n_mfcc=40, dct_type=2, norm=NormMode.ORTHO, log_mels=False,
                 melkwargs=None):
        owner = "MFCC"
        if dct_type != 2:
            raise ValueError(f"{owner}: only dct_type 2 is supported, got {dct_type!r}")
        self.n_mfcc = check_int(owner, "n_mfcc", n_mfcc, 1)
        self.norm = check_enum(owner, "norm", norm, NormMode)
        self.log_mels = bool(log_mels)
        kw = dict(melkwargs or {})
        kw.setdefault("sample_rate", sample_rate)
        self.mel = MelSpectrogram(**kw)
        n_mels = self.mel.mel_scale.n_mels
        if self.n_mfcc > n_mels:
            raise ValueError(f"{owner}: n_mfcc ({self.n_mfcc}) must not exceed n_mels ({n_mels})")
        self.dct = create_dct(self.n_mfcc, n_mels, self.norm).astype(np.float64)
        self.to_db = AmplitudeToDB(ScaleType.POWER, 1.0, 1e-10, 80.0)
        super().__init__()

    def _apply(self, a):
        mel = self.mel._apply(a)
        mel = np.log(mel + 1e-6) if self.log_mels else self.to_db._apply(mel)
        return np.swapaxes(np.swapaxes(mel, -1, -2) @ self.dct, -1, -2)


class Resample(AudioTensorOperation):
    """A waveform resampled from orig_freq to new_freq with a windowed-sinc low-pass filter
    (torchaudio's kernel: cutoff rolloff * min(orig, new) / 2, lowpass_filter_width zero
    crossings, a Hann (SINC_INTERPOLATION) or Kaiser(beta) window)."""

    def __init__(self, orig_freq=16000, new_freq=16000, resample_method=ResampleMethod.SINC_INTERPOLATION,
                 lowpass_filter_width=6, rolloff=0.99, beta=None):
        owner = "Resample"
        self.orig_freq = check_float(owner, "orig_freq", orig_freq, 0.0, lo_open=True)
        self.new_freq = check_float(owner, "new_freq", new_freq, 0.0, lo_open=True)
        if self.orig_freq != int(self.orig_freq) or self.new_freq != int(self.new_freq):
            raise ValueError(f"{owner}: orig_freq and new_freq must be whole numbers, got {orig_freq}, {new_freq}")
        self.method = check_enum(owner, "resample_method", resample_method, ResampleMethod)
        self.width = check_int(owner, "lowpass_filter_width", lowpass_filter_width, 1)
        self.rolloff = check_float(owner, "rolloff", rolloff, 0.0, 1.0, lo_open=True)
        self.beta = 14.769656459379492 if beta is None else check_float(owner, "beta", beta)
        g = np.gcd(int(self.orig_freq), int(self.new_freq))
        self._orig, self._new = int(self.orig_freq) // g, int(self.new_freq) // g
        self._kernel, self._pad = self._make_kernel()
        super().__init__()

    def _make_kernel(self):
        orig, new = self._orig, self._new
        base = min(orig, new) * self.rolloff
        pad = int(np.ceil(self.width * orig / base))
        idx = np.arange(-pad, pad + orig, dtype=np.float64)[None, :] / orig
        t = (-np.arange(new, dtype=np.float64)[:, None] / new + idx) * base
        t = np.clip(t, -self.width, self.width)
        if self.method is ResampleMethod.SINC_INTERPOLATION:
            window = np.cos(t * np.pi / self.width / 2) ** 2
        else:
            window = np.i0(self.beta * np.sqrt(1 - (t / self.width) ** 2)) / np.i0(self.beta)
        t = t * np.pi
        scale = base / orig
        with np.errstate(invalid="ignore", divide="ignore"):
            k = np.where(t == 0, 1.0, np.sin(t) / t)
        return k * window * scale, pad  # (new, taps)

    def _apply(self, a):
        if self._orig == self._new:
            return a
        shape = a.shape
        x = a.reshape(-1, shape[-1]).astype(np.float64)
        n = shape[-1]
        orig, new = self._orig, self._new
        taps = self._kernel.shape[1]
        xp = np.pad(x, [(0, 0), (self._pad, self._pad + orig)])
        frames = (xp.shape[-1] - taps) // orig + 1
        idx = np.arange(taps)[None, :] + orig * np.arange(frames)[:, None]
        y = np.einsum("bft,nt->bfn", xp[:, idx], self._kernel).reshape(x.shape[0], -1)
        target = int(np.ceil(new * n / orig))
        return y[:, :target].reshape(shape[:-1] + (target,))


def _phase_vocoder(spec, rate, advance):
    """A complex spectrogram (..., freq, time) sped up by rate: output frame t interpolates the
    magnitudes of frames floor(t * rate) and the next and accumulates their phase advance
    (advance: the expected phase step per frame, (freq, 1))."""
    steps = np.arange(0, spec.shape[-1], rate)
    alphas = np.mod(steps, 1.0)
    phase0 = np.angle(spec[..., :1])
    spec = np.pad(spec, [(0, 0)] * (spec.ndim - 1) + [(0, 2)])
    s0 = spec[..., steps.astype(np.int64)]
    s1 = spec[..., steps.astype(np.int64) + 1]
    dphase = np.angle(s1) - np.angle(s0) - advance
    dphase = dphase - 2 * np.pi * np.round(dphase / (2 * np.pi))
    acc = dphase + advance
    phase = np.concatenate([phase0, acc[..., :-1]], axis=-1)
    phase = np.cumsum(phase, axis=-1)
    mag = alphas * np.abs(s1) + (1 - alphas) * np.abs(s0)
    return mag * np.exp(1j * phase)


class TimeStretch(AudioTensorOperation):
    """Speeds a complex spectrogram (..., freq, time, 2) up by rate without changing its pitch
    (a phase vocoder): output frame t interpolates the magnitudes of frames floor(t * rate) and
    the next, and accumulates their phase advance. fixed_rate None stretches by 1 (a copy)."""
    _min_rank = 3

    def __init__(self, hop_length=None, n_freq=201, fixed_rate=None):
        owner = "TimeStretch"
        self.n_freq = check_int(owner, "n_freq", n_freq, 1)
        self.hop_length = (self.n_freq - 1) if hop_length is None else check_int(owner, "hop_length", hop_length, 1)
        self.rate = 1.0 if fixed_rate is None else check_float(owner, "fixed_rate", fixed_rate, 0.0, lo_open=True)
        super().__init__()

    def _apply(self, a):
        if a.shape[-1] != 2 or a.shape[-3] != self.n_freq:
            raise ValueError(f"TimeStretch: the input must be a complex spectrogram (..., {self.n_freq}, "
                             f"time, 2), got shape {a.shape}")
        if self.rate == 1.0:
            return a
        advance = np.linspace(0, np.pi * self.hop_length, self.n_freq)[:, None]
        out = _phase_vocoder(a[..., 0] + 1j * a[..., 1], self.rate, advance)
        return np.stack([out.real, out.imag], axis=-1)


class _Masking(AudioTensorOperation):
    _min_rank = 2
    _axis = -1

    def __init__(self, owner, iid_masks, mask_param, mask_start, mask_value):
        if not isinstance(iid_masks, bool):
            raise TypeError(f"{owner}: iid_masks must be a bool, got {iid_masks!r}")
        self.iid_masks = iid_masks
        self.mask_param = check_int(owner, "mask_param", mask_param, 0)
        self.mask_start = check_int(owner, "mask_start", mask_start, 0)
        self.mask_value = check_float(owner, "mask_value", mask_value)
        super().__init__()

    def _apply(self, a):
        a = np.array(a, copy=True)
        n = a.shape[self._axis]
        x = np.moveaxis(a, self._axis, -1)  # a view: writes reach a
        if not self.iid_masks:
            # A fixed mask [mask_start, mask_start + mask_param), as MindSpore's non-iid masking.
            if self.mask_start + self.mask_param > n:
                raise ValueError(f"{self.__name__}: mask_start ({self.mask_start}) + mask_param "
                                 f"({self.mask_param}) exceeds the {n} bins of the masked axis")
            x[..., self.mask_start:self.mask_start + self.mask_param] = self.mask_value
            return a
        # iid: per example/channel, a width uniform in [0, mask_param] at a uniform start.
        from mycel.dataset.engine import get_row_seed
        seed = get_row_seed()
        rng = np.random.default_rng(seed)
        flat = x.reshape(-1, *x.shape[-2:]) if x.ndim > 2 else x[None]
        for item in flat:
            width = int(rng.integers(0, min(self.mask_param, n) + 1))
            start = int(rng.integers(0, n - width + 1))
            item[..., start:start + width] = self.mask_value
        if x.ndim > 2:
            x[...] = flat.reshape(x.shape)
        return a


class FrequencyMasking(_Masking):
    """Sets a band of frequency bins of a spectrogram (..., freq, time) to mask_value: the fixed
    band [mask_start, mask_start + freq_mask_param), or with iid_masks a random band of width
    up to freq_mask_param for each example/channel."""
    _axis = -2

    def __init__(self, iid_masks=False, freq_mask_param=0, mask_start=0, mask_value=0.0):
        super().__init__("FrequencyMasking", iid_masks, freq_mask_param, mask_start, mask_value)


class TimeMasking(_Masking):
    """As FrequencyMasking, along the time axis (the last)."""
    _axis = -1

    def __init__(self, iid_masks=False, time_mask_param=0, mask_start=0, mask_value=0.0):
        super().__init__("TimeMasking", iid_masks, time_mask_param, mask_start, mask_value)


class Vol(AudioTensorOperation):
    """A waveform scaled by gain (AMPLITUDE: a factor; POWER: 10 log10(gain) dB; DB: gain dB),
    then clamped to [-1, 1]."""

    def __init__(self, gain, gain_type=GainType.AMPLITUDE):
        owner = "Vol"
        self.gain_type = check_enum(owner, "gain_type", gain_type, GainType)
        lo = None if gain_type is GainType.DB else 0.0
        self.gain = check_float(owner, "gain", gain, lo, lo_open=gain_type is GainType.POWER)
        super().__init__()

    def _apply(self, a):
        if self.gain_type is GainType.AMPLITUDE:
            y = a * self.gain
        else:
            db = self.gain if self.gain_type is GainType.DB else 10.0 * np.log10(self.gain)
            y = a * 10.0 ** (db / 20.0)
        return np.clip(y, -1.0, 1.0)


class Gain(AudioTensorOperation):
    """A waveform amplified by gain_db decibels (times 10^(gain_db / 20))."""

    def __init__(self, gain_db=1.0):
        self.gain_db = check_float("Gain", "gain_db", gain_db)
        super().__init__()

    def _apply(self, a):
        return a * 10.0 ** (self.gain_db / 20.0)


class Fade(AudioTensorOperation):
    """Fades the first fade_in_len samples in and the last fade_out_len out with fade_shape."""

    def __init__(self, fade_in_len=0, fade_out_len=0, fade_shape=FadeShape.LINEAR):
        self.fade_in_len = check_int("Fade", "fade_in_len", fade_in_len, 0)
        self.fade_out_len = check_int("Fade", "fade_out_len", fade_out_len, 0)
        self.fade_shape = check_enum("Fade", "fade_shape", fade_shape, FadeShape)
        super().__init__()

    @staticmethod
    def _curve(shape, t):
        """The fade-in gain at t in [0, 1] (torchaudio's curves)."""
        if shape is FadeShape.LINEAR:
            return t
        if shape is FadeShape.EXPONENTIAL:
            return 2.0 ** ((t - 1) * 5)
        if shape is FadeShape.LOGARITHMIC:
            return np.log10(0.1 + t) + 1
        if shape is FadeShape.QUARTER_SINE:
            return np.sin(t * np.pi / 2)
        return np.sin(t * np.pi - np.pi / 2) / 2 + 0.5  # HALF_SINE

    def _apply(self, a):
        n = a.shape[-1]
        if self.fade_in_len > n or self.fade_out_len > n:
            raise ValueError(f"Fade: fade_in_len ({self.fade_in_len}) and fade_out_len ({self.fade_out_len}) "
                             f"must not exceed the waveform's {n} samples")
        gain = np.ones(n)
        if self.fade_in_len:
            gain[:self.fade_in_len] = self._curve(self.fade_shape, np.linspace(0, 1, self.fade_in_len))
        if self.fade_out_len:
            out = self._curve(self.fade_shape, np.linspace(0, 1, self.fade_out_len))[::-1]
            gain[n - self.fade_out_len:] *= out
        return a * gain


class ComputeDeltas(AudioTensorOperation):
    """Delta coefficients of a spectrogram (..., freq, time) along time:
    d_t = sum_{n=1..N} n (c_{t+n} - c_{t-n}) / (2 sum n^2), N = (win_length - 1) // 2, the
    edges padded with pad_mode."""
    _min_rank = 2

    def __init__(self, win_length=5, pad_mode=BorderType.EDGE):
        self.win_length = check_int("ComputeDeltas", "win_length", win_length, 3)
        self.pad_mode = check_enum("ComputeDeltas", "pad_mode", pad_mode, BorderType)
        super().__init__()

    def _apply(self, a):
        n = (self.win_length - 1) // 2
        denom = n * (n + 1) * (2 * n + 1) / 3
        x = np.pad(a.astype(np.float64), [(0, 0)] * (a.ndim - 1) + [(n, n)], mode=self.pad_mode.value)
        t = a.shape[-1]
        out = np.zeros(a.shape)
        for k in range(1, n + 1):
            out += k * (x[..., n + k:n + k + t] - x[..., n - k:n - k + t])
        return out / denom


def _axis_of(owner, axis):
    if axis not in (1, 2) or isinstance(axis, bool):
        raise ValueError(f"{owner}: axis must be 1 (frequency) or 2 (time), got {axis!r}")
    return -2 if axis == 1 else -1


class MaskAlongAxis(_Masking):
    """The band [mask_start, mask_start + mask_width) of axis 1 (frequency) or 2 (time) set to
    mask_value."""

    def __init__(self, mask_start, mask_width, mask_value, axis):
        self._axis = _axis_of("MaskAlongAxis", axis)
        super().__init__("MaskAlongAxis", False, check_int("MaskAlongAxis", "mask_width", mask_width, 1),
                         mask_start, mask_value)


class MaskAlongAxisIID(_Masking):
    """A random band of width uniform in [0, mask_param] at a uniform start along axis 1
    (frequency) or 2 (time), per example/channel, set to mask_value."""

    def __init__(self, mask_param, mask_value, axis):
        self._axis = _axis_of("MaskAlongAxisIID", axis)
        super().__init__("MaskAlongAxisIID", True, mask_param, 0, mask_value)


class DBToAmplitude(AudioTensorOperation):
    """Decibels back to amplitude: ref * (10^(0.1 x))^power."""

    def __init__(self, ref, power):
        self.ref = check_float("DBToAmplitude", "ref", ref)
        self.power = check_float("DBToAmplitude", "power", power)
        super().__init__()

    def _apply(self, a):
        return self.ref * np.power(np.power(10.0, 0.1 * a), self.power)


class ComplexNorm(AudioTensorOperation):
    """The norm of a complex array (..., 2) to the power `power`: (re^2 + im^2)^(power / 2)."""

    def __init__(self, power=1.0):
        self.power = check_float("ComplexNorm", "power", power, 0.0)
        super().__init__()

    def _apply(self, a):
        if a.shape[-1] != 2:
            raise ValueError(f"ComplexNorm: the input must be complex (..., 2), got shape {a.shape}")
        return np.power(np.hypot(a[..., 0], a[..., 1]), self.power)


class Angle(AudioTensorOperation):
    """The phase atan2(im, re) of a complex array (..., 2)."""

    def _apply(self, a):
        if a.shape[-1] != 2:
            raise ValueError(f"Angle: the input must be complex (..., 2), got shape {a.shape}")
        return np.arctan2(a[..., 1], a[..., 0])
