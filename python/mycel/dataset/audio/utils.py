"""Enums and filter-bank functions of mycel.dataset.audio (MindSpore's
mindspore.dataset.audio.utils): melscale_fbanks, create_dct and the option enums."""
import enum
import numbers

import numpy as np

__all__ = ["BorderType", "WindowType", "NormType", "MelType", "NormMode", "ScaleType",
           "ResampleMethod", "GainType", "FadeShape", "melscale_fbanks", "create_dct"]


class BorderType(str, enum.Enum):
    """Padding modes (numpy.pad's names)."""
    CONSTANT = "constant"
    EDGE = "edge"
    REFLECT = "reflect"
    SYMMETRIC = "symmetric"


class WindowType(str, enum.Enum):
    """STFT windows (periodic, as torch's window functions)."""
    BARTLETT = "bartlett"
    BLACKMAN = "blackman"
    HAMMING = "hamming"
    HANN = "hann"
    KAISER = "kaiser"


class NormType(str, enum.Enum):
    """Mel filter normalization: NONE, or SLANEY (each filter divided by its width in Hz / 2)."""
    NONE = "none"
    SLANEY = "slaney"


class MelType(str, enum.Enum):
    """The mel scale: HTK (2595 log10(1 + f / 700)) or SLANEY (linear below 1 kHz, log above)."""
    HTK = "htk"
    SLANEY = "slaney"


class NormMode(str, enum.Enum):
    """DCT normalization: NONE or ORTHO (an orthonormal basis)."""
    NONE = "none"
    ORTHO = "ortho"


class ScaleType(str, enum.Enum):
    """What AmplitudeToDB's input holds: MAGNITUDE (10 -> 20 log10) or POWER (10 log10)."""
    MAGNITUDE = "magnitude"
    POWER = "power"


class ResampleMethod(str, enum.Enum):
    """Resample's low-pass filter: a Hann-windowed sinc, or a Kaiser-windowed one."""
    SINC_INTERPOLATION = "sinc_interpolation"
    KAISER_WINDOW = "kaiser_window"


class GainType(str, enum.Enum):
    """How Vol reads its gain: an amplitude factor, a power factor, or decibels."""
    AMPLITUDE = "amplitude"
    POWER = "power"
    DB = "db"


class FadeShape(str, enum.Enum):
    """Fade curves."""
    LINEAR = "linear"
    EXPONENTIAL = "exponential"
    LOGARITHMIC = "logarithmic"
    QUARTER_SINE = "quarter_sine"
    HALF_SINE = "half_sine"


def check_enum(owner, name, value, cls):
    if not isinstance(value, cls):
        raise TypeError(f"{owner}: {name} must be a {cls.__name__}, got {value!r}")
    return value


def check_int(owner, name, value, lo=None):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or (lo is not None and value < lo):
        bound = "" if lo is None else f" >= {lo}"
        raise ValueError(f"{owner}: {name} must be an int{bound}, got {value!r}")
    return int(value)


def check_float(owner, name, value, lo=None, hi=None, lo_open=False):
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not np.isfinite(value):
        raise TypeError(f"{owner}: {name} must be a finite number, got {value!r}")
    v = float(value)
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise ValueError(f"{owner}: {name} must be {'>' if lo_open else '>='} {lo}, got {value!r}")
    if hi is not None and v > hi:
        raise ValueError(f"{owner}: {name} must be <= {hi}, got {value!r}")
    return v


def _hz_to_mel(f, mel_type):
    f = np.asarray(f, np.float64)
    if mel_type is MelType.HTK:
        return 2595.0 * np.log10(1.0 + f / 700.0)
    # Slaney: linear (3 per 200 Hz) below 1 kHz, logarithmic above (27 steps per octave * 6.4)
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0
    return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-300) / min_log_hz) / logstep,
                    f / f_sp)


def _mel_to_hz(m, mel_type):
    m = np.asarray(m, np.float64)
    if mel_type is MelType.HTK:
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)


def melscale_fbanks(n_freqs, f_min, f_max, n_mels, sample_rate, norm=NormType.NONE, mel_type=MelType.HTK):
    """The (n_freqs, n_mels) matrix of triangular mel filters over n_freqs STFT bins from 0 to
    sample_rate / 2: filter m rises from mel point m to m+1 and falls to m+2, the n_mels + 2 points
    evenly spaced on the mel scale between f_min and f_max (float32)."""
    owner = "melscale_fbanks"
    n_freqs = check_int(owner, "n_freqs", n_freqs, 1)
    n_mels = check_int(owner, "n_mels", n_mels, 1)
    sample_rate = check_int(owner, "sample_rate", sample_rate, 1)
    f_min = check_float(owner, "f_min", f_min, 0.0)
    f_max = check_float(owner, "f_max", f_max, 0.0)
    if f_min > f_max:
        raise ValueError(f"{owner}: f_min ({f_min}) must not exceed f_max ({f_max})")
    check_enum(owner, "norm", norm, NormType)
    check_enum(owner, "mel_type", mel_type, MelType)
    freqs = np.linspace(0, sample_rate // 2, n_freqs)
    m_pts = np.linspace(_hz_to_mel(f_min, mel_type), _hz_to_mel(f_max, mel_type), n_mels + 2)
    f_pts = _mel_to_hz(m_pts, mel_type)
    f_diff = np.diff(f_pts)
    slopes = f_pts[None, :] - freqs[:, None]  # (n_freqs, n_mels + 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        down = -slopes[:, :-2] / f_diff[:-1]
        up = slopes[:, 2:] / f_diff[1:]
    fb = np.maximum(0.0, np.minimum(down, up))
    fb = np.nan_to_num(fb, nan=0.0)
    if norm is NormType.SLANEY:
        fb *= 2.0 / (f_pts[2:n_mels + 2] - f_pts[:n_mels])
    return fb.astype(np.float32)


def create_dct(n_mfcc, n_mels, norm=NormMode.NONE):
    """The (n_mels, n_mfcc) DCT-II matrix: column k is cos(pi / n_mels * (n + 0.5) * k) (times 2
    for NONE; scaled to an orthonormal basis for ORTHO), float32."""
    owner = "create_dct"
    n_mfcc = check_int(owner, "n_mfcc", n_mfcc, 1)
    n_mels = check_int(owner, "n_mels", n_mels, 1)
    check_enum(owner, "norm", norm, NormMode)
    n = np.arange(n_mels, dtype=np.float64)
    k = np.arange(n_mfcc, dtype=np.float64)[:, None]
    dct = np.cos(np.pi / n_mels * (n + 0.5) * k)  # (n_mfcc, n_mels)
    if norm is NormMode.NONE:
        dct *= 2.0
    else:
        dct[0] *= 1.0 / np.sqrt(2.0)
        dct *= np.sqrt(2.0 / n_mels)
    return dct.T.astype(np.float32)
