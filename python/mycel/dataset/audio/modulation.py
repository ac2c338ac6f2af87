"""Delay-line effects of MindSpore's mindspore.dataset.audio (torchaudio's numerics, after SoX):
Flanger (a short delay swept by a low-frequency oscillator, with feedback, per channel phase
offsets and linear or quadratic interpolation) and Phaser (a swept delay with decaying
feedback). Both run a per-sample recurrence, one row (channel) at a time on Python floats."""
import enum
import math

import numpy as np

from mycel.dataset.audio.transforms import AudioTensorOperation
from mycel.dataset.audio.utils import check_enum, check_float, check_int

__all__ = ["Modulation", "Interpolation", "Flanger", "Phaser"]


class Modulation(str, enum.Enum):
    """The oscillator's shape."""
    SINUSOIDAL = "sinusoidal"
    TRIANGULAR = "triangular"


class Interpolation(str, enum.Enum):
    """How a fractional delay is read from the delay line."""
    LINEAR = "linear"
    QUADRATIC = "quadratic"


def wave_table(triangular, size, lo, hi, phase, as_int):
    """SoX's oscillator table: one period of a sine or triangle of `size` points starting at
    `phase` radians, scaled to [lo, hi]; as_int rounds half away from zero (int), else float32."""
    start = int(phase / math.pi / 2 * size + 0.5)
    p = (np.arange(size) + start) % size
    if triangular:
        d = p * 2.0 / size
        quarter = (4 * p) // size
        d = np.select([quarter == 0, quarter == 3], [d + 0.5, d - 1.5], 1.5 - d)
    else:
        d = (np.sin(p / size * 2 * math.pi) + 1) / 2
    d = d * (hi - lo) + lo
    if as_int:
        return np.trunc(np.where(d < 0, d - 0.5, d + 0.5)).astype(np.int64)
    return d.astype(np.float32).astype(np.float64)


class Flanger(AudioTensorOperation):
    """A flanger over (..., channel, time): each channel is mixed with itself delayed by
    delay + depth (ms) swept by a speed-Hz oscillator (phase % of a period apart between
    channels), regen % fed back, width % of delayed signal mixed in; clipped to [-1, 1].
    Ranges as MindSpore's: delay [0, 30], depth [0, 10], regen [-95, 95], width [0, 100],
    speed [0.1, 10], phase [0, 100]."""
    _min_rank = 2

    def __init__(self, sample_rate, delay=0.0, depth=2.0, regen=0.0, width=71.0, speed=0.5, phase=25.0,
                 modulation=Modulation.SINUSOIDAL, interpolation=Interpolation.LINEAR):
        owner = "Flanger"
        self.sample_rate = check_int(owner, "sample_rate", sample_rate, 1)
        self.delay = check_float(owner, "delay", delay, 0.0, 30.0)
        self.depth = check_float(owner, "depth", depth, 0.0, 10.0)
        self.regen = check_float(owner, "regen", regen, -95.0, 95.0)
        self.width = check_float(owner, "width", width, 0.0, 100.0)
        self.speed = check_float(owner, "speed", speed, 0.1, 10.0)
        self.phase = check_float(owner, "phase", phase, 0.0, 100.0)
        self.modulation = check_enum(owner, "modulation", modulation, Modulation)
        self.interpolation = check_enum(owner, "interpolation", interpolation, Interpolation)
        super().__init__()

    def _apply(self, a):
        sr = self.sample_rate
        x = a.reshape(-1, a.shape[-2], a.shape[-1]).astype(np.float64)  # (batch, channel, time)
        channels, n = x.shape[1], x.shape[2]
        feedback = self.regen / 100.0
        wet = self.width / 100.0
        dry = 1.0 / (1.0 + wet)
        wet = wet / (1.0 + wet) * (1.0 - abs(feedback))
        buf_len = int((self.delay + self.depth) / 1000.0 * sr + 0.5) + 2
        lfo_len = int(sr / self.speed)
        lfo = wave_table(self.modulation is Modulation.TRIANGULAR, lfo_len,
                         float(math.floor(self.delay / 1000.0 * sr + 0.5)), buf_len - 2.0, 3 * math.pi / 2,
                         as_int=False)
        # the delay of every (time, channel), read from the oscillator ahead of the loop
        offset = (np.arange(channels) * lfo_len * (self.phase / 100.0) + 0.5).astype(np.int64)
        delays = lfo[(np.arange(n)[:, None] + offset[None, :]) % lfo_len]
        whole = np.floor(delays).astype(np.int64)
        frac = delays - whole
        quadratic = self.interpolation is Interpolation.QUADRATIC
        out = np.empty_like(x)
        # channels do not mix, so each (batch, channel) row runs its recurrence alone, on Python
        # floats (a per-sample loop over numpy rows costs several array calls per sample)
        for b in range(x.shape[0]):
            for c in range(channels):
                out[b, c] = _flanger_row(x[b, c].tolist(), whole[:, c].tolist(), frac[:, c].tolist(), buf_len,
                                         feedback, dry, wet, quadratic)
        return np.clip(out, -1.0, 1.0).reshape(a.shape)


def _flanger_row(x, whole, frac, buf_len, feedback, dry, wet, quadratic):
    """One channel of the flanger: the delay line is written backwards, so that position
    pos + k holds the input of k samples ago."""
    line = [0.0] * buf_len
    last, pos, out = 0.0, 0, [0.0] * len(x)
    for t, v in enumerate(x):
        pos = (pos - 1) % buf_len
        line[pos] = v + last * feedback
        k, f = whole[t], frac[t]
        d0 = line[(pos + k) % buf_len]
        d1 = line[(pos + k + 1) % buf_len]
        if quadratic:
            d2 = line[(pos + k + 2) % buf_len] - d0
            d1 -= d0
            last = d0 + ((d2 * 0.5 - d1) * f + (d1 * 2 - d2 * 0.5)) * f
        else:
            last = d0 + (d1 - d0) * f
        out[t] = v * dry + last * wet
    return out


class Phaser(AudioTensorOperation):
    """A phaser over (..., time): y[n] = gain_in x[n] + decay y[n - m[n]] with the delay m swept
    between 1 and delay_ms (a sine or triangle of mod_speed Hz), output gain_out y clipped to
    [-1, 1]. Ranges as MindSpore's: gain_in [0, 1], gain_out [0, 1e9], delay_ms [0, 5],
    decay [0, 0.99], mod_speed [0.1, 2]."""

    def __init__(self, sample_rate, gain_in=0.4, gain_out=0.74, delay_ms=3.0, decay=0.4, mod_speed=0.5,
                 sinusoidal=True):
        owner = "Phaser"
        self.sample_rate = check_int(owner, "sample_rate", sample_rate, 1)
        self.gain_in = check_float(owner, "gain_in", gain_in, 0.0, 1.0)
        self.gain_out = check_float(owner, "gain_out", gain_out, 0.0, 1e9)
        self.delay_ms = check_float(owner, "delay_ms", delay_ms, 0.0, 5.0)
        self.decay = check_float(owner, "decay", decay, 0.0, 0.99)
        self.mod_speed = check_float(owner, "mod_speed", mod_speed, 0.1, 2.0)
        if not isinstance(sinusoidal, bool):
            raise TypeError(f"{owner}: sinusoidal must be a bool, got {sinusoidal!r}")
        self.sinusoidal = sinusoidal
        super().__init__()

    def _apply(self, a):
        sr = self.sample_rate
        x = a.reshape(-1, a.shape[-1]).astype(np.float64) * self.gain_in
        buf_len = int(self.delay_ms * 0.001 * sr + 0.5)
        if buf_len < 1:
            raise ValueError(f"Phaser: delay_ms ({self.delay_ms}) is under one sample at {sr} Hz")
        mod_len = int(sr / self.mod_speed + 0.5)
        mod = wave_table(not self.sinusoidal, mod_len, 1.0, float(buf_len), math.pi / 2, as_int=True)
        n = x.shape[1]
        # the read position of every step, known ahead: (write position + modulation) mod length
        steps = np.arange(n)
        read = (steps % buf_len + mod[steps % mod_len]) % buf_len
        write = (steps + 1) % buf_len
        read, write, decay = read.tolist(), write.tolist(), self.decay
        out = np.empty_like(x)
        for r in range(x.shape[0]):  # rows do not mix: one scalar recurrence each
            line, row, src = [0.0] * buf_len, [0.0] * n, x[r].tolist()
            for t in range(n):
                y = src[t] + line[read[t]]
                line[write[t]] = y * decay
                row[t] = y
            out[r] = row
        return np.clip(out * self.gain_out, -1.0, 1.0).reshape(a.shape)
