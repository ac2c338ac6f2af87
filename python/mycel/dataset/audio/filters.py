"""IIR filters over waveforms (..., time), as MindSpore's audio transforms (torchaudio's
numerics): LFilter (the difference equation), Filtfilt (forward then backward, zero phase),
Biquad and the biquad family whose coefficients follow the Audio EQ Cookbook (R. Bristow-
Johnson). Every biquad clamps its output to [-1, 1] as torchaudio's does."""
import math

import numpy as np

from mycel.dataset.audio.transforms import AudioTensorOperation
from mycel.dataset.audio.utils import check_float, check_int

__all__ = ["LFilter", "Filtfilt", "Biquad", "BandBiquad", "BandpassBiquad", "BandrejectBiquad",
           "BassBiquad", "TrebleBiquad", "AllpassBiquad", "HighpassBiquad", "LowpassBiquad",
           "EqualizerBiquad", "DeemphBiquad", "RiaaBiquad"]


def lfilter(x, a, b, clamp=True):
    """y[n] = (sum_k b[k] x[n-k] - sum_{k>=1} a[k] y[n-k]) / a[0] along the last axis of x,
    starting from rest; clamp limits y to [-1, 1]."""
    a0 = float(a[0])
    a, b = np.asarray(a, np.float64) / a0, np.asarray(b, np.float64) / a0
    shape = x.shape
    rows = x.reshape(-1, shape[-1]).astype(np.float64)
    n = shape[-1]
    # the feed-forward part is a convolution; the feedback part is a recurrence, run per row
    # on Python floats (a handful of coefficients: faster than numpy calls per sample)
    fir = np.stack([np.convolve(r, b)[:n] for r in rows]) if rows.size else rows
    fb = [float(v) for v in a[1:]]
    out = np.empty_like(fir)
    if not any(fb):
        out[...] = fir
    else:
        p = len(fb)
        for r in range(rows.shape[0]):
            src = fir[r].tolist()
            if p == 2:  # the biquads: two locals instead of a history list, ~3x faster
                a1, a2 = fb
                y1 = y2 = 0.0
                dst = []
                for v in src:
                    y = v - a1 * y1 - a2 * y2
                    dst.append(y)
                    y1, y2 = y, y1
                out[r] = dst
                continue
            hist = [0.0] * p  # y[n-1], y[n-2], ...
            dst = [0.0] * n
            for i in range(n):
                acc = src[i]
                for k in range(p):
                    acc -= fb[k] * hist[k]
                dst[i] = acc
                hist.insert(0, acc)
                hist.pop()
            out[r] = dst
    if clamp:
        np.clip(out, -1.0, 1.0, out=out)
    return out.reshape(shape)


def _coeffs(owner, name, values):
    if not isinstance(values, (list, tuple)) or not values:
        raise TypeError(f"{owner}: {name} must be a non-empty list of numbers, got {values!r}")
    return [check_float(owner, name, v) for v in values]


class LFilter(AudioTensorOperation):
    """An IIR filter by its difference equation: a_coeffs (denominator, a[0] != 0) and
    b_coeffs (numerator) of the same length; clamp limits the output to [-1, 1]."""

    def __init__(self, a_coeffs, b_coeffs, clamp=True):
        owner = type(self).__name__
        self.a_coeffs = _coeffs(owner, "a_coeffs", a_coeffs)
        self.b_coeffs = _coeffs(owner, "b_coeffs", b_coeffs)
        if len(self.a_coeffs) != len(self.b_coeffs):
            raise ValueError(f"{owner}: a_coeffs and b_coeffs must have the same length, got "
                             f"{len(self.a_coeffs)} and {len(self.b_coeffs)}")
        if self.a_coeffs[0] == 0:
            raise ValueError(f"{owner}: a_coeffs[0] must not be 0")
        if not isinstance(clamp, bool):
            raise TypeError(f"{owner}: clamp must be a bool, got {clamp!r}")
        self.clamp = clamp
        super().__init__()

    def _apply(self, a):
        return lfilter(a, self.a_coeffs, self.b_coeffs, self.clamp)


class Filtfilt(LFilter):
    """LFilter forward, then backward over the reversed result (zero phase, squared
    magnitude response); only the second pass is clamped, as torchaudio's."""

    def _apply(self, a):
        fwd = lfilter(a, self.a_coeffs, self.b_coeffs, False)
        return lfilter(fwd[..., ::-1], self.a_coeffs, self.b_coeffs, self.clamp)[..., ::-1]


class Biquad(AudioTensorOperation):
    """The second-order IIR filter (b0 + b1 z^-1 + b2 z^-2) / (a0 + a1 z^-1 + a2 z^-2)."""

    def __init__(self, b0, b1, b2, a0, a1, a2):
        owner = type(self).__name__
        self.b = [check_float(owner, n, v) for n, v in (("b0", b0), ("b1", b1), ("b2", b2))]
        self.a = [check_float(owner, n, v) for n, v in (("a0", a0), ("a1", a1), ("a2", a2))]
        if self.a[0] == 0:
            raise ValueError(f"{owner}: a0 must not be 0")
        super().__init__()

    def _apply(self, a):
        return lfilter(a, self.a, self.b, True)


def _w0(owner, sample_rate, freq, name):
    sr = check_int(owner, "sample_rate", sample_rate)
    if sr == 0:
        raise ValueError(f"{owner}: sample_rate must not be 0")
    f = check_float(owner, name, freq)
    return 2 * math.pi * f / sr, sr, f


def _q(owner, Q):  # noqa: N803  MindSpore's argument name
    return check_float(owner, "Q", Q, 0.0, 1.0, lo_open=True)


class _Cookbook(Biquad):
    def __init__(self, b, a):
        Biquad.__init__(self, *b, *a)


class BandBiquad(_Cookbook):
    """Two-pole band filter around central_freq with bandwidth central_freq / Q (SoX's 'band');
    noise=True suits unpitched audio (the gain normalised for noise, not tones)."""

    def __init__(self, sample_rate, central_freq, Q=0.707, noise=False):  # noqa: N803
        owner = "BandBiquad"
        w0, sr, f = _w0(owner, sample_rate, central_freq, "central_freq")
        q = _q(owner, Q)
        if not isinstance(noise, bool):
            raise TypeError(f"{owner}: noise must be a bool, got {noise!r}")
        bw = f / q
        a2 = math.exp(-2 * math.pi * bw / sr)
        a1 = -4 * a2 / (1 + a2) * math.cos(w0)
        b0 = math.sqrt(1 - a1 * a1 / (4 * a2)) * (1 - a2)
        if noise:
            b0 *= math.sqrt(((1 + a2) ** 2 - a1 * a1) * (1 - a2) / (1 + a2)) / b0
        super().__init__((b0, 0.0, 0.0), (1.0, a1, a2))


class BandpassBiquad(_Cookbook):
    """Cookbook band-pass: constant 0 dB peak gain, or constant skirt gain (peak gain Q)."""

    def __init__(self, sample_rate, central_freq, Q=0.707, const_skirt_gain=False):  # noqa: N803
        owner = "BandpassBiquad"
        w0, _, _ = _w0(owner, sample_rate, central_freq, "central_freq")
        alpha = math.sin(w0) / 2 / _q(owner, Q)
        if not isinstance(const_skirt_gain, bool):
            raise TypeError(f"{owner}: const_skirt_gain must be a bool, got {const_skirt_gain!r}")
        t = math.sin(w0) / 2 if const_skirt_gain else alpha
        super().__init__((t, 0.0, -t), (1 + alpha, -2 * math.cos(w0), 1 - alpha))


class BandrejectBiquad(_Cookbook):
    """Cookbook notch at central_freq."""

    def __init__(self, sample_rate, central_freq, Q=0.707):  # noqa: N803
        w0, _, _ = _w0("BandrejectBiquad", sample_rate, central_freq, "central_freq")
        alpha = math.sin(w0) / 2 / _q("BandrejectBiquad", Q)
        c = -2 * math.cos(w0)
        super().__init__((1.0, c, 1.0), (1 + alpha, c, 1 - alpha))


class AllpassBiquad(_Cookbook):
    """Cookbook all-pass: unit magnitude, phase turning through central_freq."""

    def __init__(self, sample_rate, central_freq, Q=0.707):  # noqa: N803
        w0, _, _ = _w0("AllpassBiquad", sample_rate, central_freq, "central_freq")
        alpha = math.sin(w0) / 2 / _q("AllpassBiquad", Q)
        c = -2 * math.cos(w0)
        super().__init__((1 - alpha, c, 1 + alpha), (1 + alpha, c, 1 - alpha))


class HighpassBiquad(_Cookbook):
    """Cookbook high-pass with cutoff cutoff_freq."""

    def __init__(self, sample_rate, cutoff_freq, Q=0.707):  # noqa: N803
        w0, _, _ = _w0("HighpassBiquad", sample_rate, cutoff_freq, "cutoff_freq")
        alpha = math.sin(w0) / 2 / _q("HighpassBiquad", Q)
        c = math.cos(w0)
        super().__init__(((1 + c) / 2, -1 - c, (1 + c) / 2), (1 + alpha, -2 * c, 1 - alpha))


class LowpassBiquad(_Cookbook):
    """Cookbook low-pass with cutoff cutoff_freq."""

    def __init__(self, sample_rate, cutoff_freq, Q=0.707):  # noqa: N803
        w0, _, _ = _w0("LowpassBiquad", sample_rate, cutoff_freq, "cutoff_freq")
        alpha = math.sin(w0) / 2 / _q("LowpassBiquad", Q)
        c = math.cos(w0)
        super().__init__(((1 - c) / 2, 1 - c, (1 - c) / 2), (1 + alpha, -2 * c, 1 - alpha))


class EqualizerBiquad(_Cookbook):
    """Cookbook peaking EQ: gain dB at center_freq, bandwidth set by Q."""

    def __init__(self, sample_rate, center_freq, gain, Q=0.707):  # noqa: N803
        owner = "EqualizerBiquad"
        w0, _, _ = _w0(owner, sample_rate, center_freq, "center_freq")
        amp = 10 ** (check_float(owner, "gain", gain) / 40)
        alpha = math.sin(w0) / 2 / _q(owner, Q)
        c = -2 * math.cos(w0)
        super().__init__((1 + alpha * amp, c, 1 - alpha * amp), (1 + alpha / amp, c, 1 - alpha / amp))


def _shelf(owner, sample_rate, gain, central_freq, Q, bass):  # noqa: N803
    w0, _, _ = _w0(owner, sample_rate, central_freq, "central_freq")
    amp = 10 ** (check_float(owner, "gain", gain) / 40)
    alpha = math.sin(w0) / 2 / _q(owner, Q)
    t1, t2, t3 = 2 * math.sqrt(amp) * alpha, (amp - 1) * math.cos(w0), (amp + 1) * math.cos(w0)
    s = 1 if bass else -1  # the treble shelf is the bass shelf with cos(w0) negated
    b = (amp * ((amp + 1) - s * t2 + t1), s * 2 * amp * ((amp - 1) - s * t3), amp * ((amp + 1) - s * t2 - t1))
    a = ((amp + 1) + s * t2 + t1, -s * 2 * ((amp - 1) + s * t3), (amp + 1) + s * t2 - t1)
    return b, a


class BassBiquad(_Cookbook):
    """Cookbook low shelf: gain dB below central_freq (default 100 Hz)."""

    def __init__(self, sample_rate, gain, central_freq=100.0, Q=0.707):  # noqa: N803
        super().__init__(*_shelf("BassBiquad", sample_rate, gain, central_freq, Q, True))


class TrebleBiquad(_Cookbook):
    """Cookbook high shelf: gain dB above central_freq (default 3000 Hz)."""

    def __init__(self, sample_rate, gain, central_freq=3000.0, Q=0.707):  # noqa: N803
        super().__init__(*_shelf("TrebleBiquad", sample_rate, gain, central_freq, Q, False))


class DeemphBiquad(_Cookbook):
    """Compact-disc de-emphasis (the 50/15 us curve) as SoX's 'deemph' shelf, for sample_rate
    44100 or 48000."""

    def __init__(self, sample_rate):
        owner = "DeemphBiquad"
        if sample_rate not in (44100, 48000) or isinstance(sample_rate, bool):
            raise ValueError(f"{owner}: sample_rate must be 44100 or 48000, got {sample_rate!r}")
        central_freq, width_slope, gain = (5283, 0.4845, -9.477) if sample_rate == 44100 \
            else (5356, 0.479, -9.62)
        w0 = 2 * math.pi * central_freq / sample_rate
        amp = 10 ** (gain / 40)
        alpha = math.sin(w0) / 2 * math.sqrt((amp + 1 / amp) * (1 / width_slope - 1) + 2)
        t1, t2, t3 = 2 * math.sqrt(amp) * alpha, (amp - 1) * math.cos(w0), (amp + 1) * math.cos(w0)
        b = (amp * ((amp + 1) + t2 + t1), -2 * amp * ((amp - 1) + t3), amp * ((amp + 1) + t2 - t1))
        a = ((amp + 1) - t2 + t1, 2 * ((amp - 1) - t3), (amp + 1) - t2 - t1)
        super().__init__(b, a)


# RIAA playback: SoX's zeros and poles (z-plane) per supported sample rate.
_RIAA = {44100: ((-0.2014898, 0.9233820), (0.7083149, 0.9924091)),
         48000: ((-0.1766069, 0.9321590), (0.7396325, 0.9931330)),
         88200: ((-0.1168735, 0.9648312), (0.8590646, 0.9964002)),
         96000: ((-0.1141486, 0.9676817), (0.8699137, 0.9966946))}


class RiaaBiquad(_Cookbook):
    """RIAA vinyl playback equalisation (the 3180/318/75 us curve) for sample_rate 44100,
    48000, 88200 or 96000, scaled to 0 dB at 1 kHz."""

    def __init__(self, sample_rate):
        if isinstance(sample_rate, bool) or sample_rate not in _RIAA:
            raise ValueError(f"RiaaBiquad: sample_rate must be one of {sorted(_RIAA)}, got {sample_rate!r}")
        (z0, z1), (p0, p1) = _RIAA[sample_rate]
        b, a = [1.0, -(z0 + z1), z0 * z1], [1.0, -(p0 + p1), p0 * p1]
        z = np.exp(-2j * math.pi * 1000 / sample_rate)  # z^-1 at 1 kHz
        gain = abs((a[0] + a[1] * z + a[2] * z * z) / (b[0] + b[1] * z + b[2] * z * z))
        super().__init__(tuple(v * gain for v in b), tuple(a))
