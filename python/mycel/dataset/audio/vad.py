"""Vad: trims the silence and quiet background before speech, as MindSpore's (torchaudio's port of
SoX's 'vad' effect). Every measure_freq-th of a second, a windowed frame's spectrum is smoothed,
an adaptive noise estimate is subtracted, and the power of the cepstrum between the lifter
frequencies (voicing) is the frame's measure; once its running mean reaches trigger_level the
audio is kept from the earliest nearby burst (within search_time, gaps up to allowed_gap) less
pre_trigger_time. A (channels, time) input is one recording: the earliest channel wins."""
import math

import numpy as np

from mycel.dataset.audio.transforms import AudioTensorOperation
from mycel.dataset.audio.utils import check_float, check_int

__all__ = ["Vad"]


def _hann(n):
    # torch.hann_window's periodic form, which the reference uses for both windows
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n) if n > 1 else np.ones(n)


class Vad(AudioTensorOperation):
    """Voice activity detection trimming the front of a waveform (..., time); to trim the back
    too, reverse, apply, reverse. Returns an empty time axis when nothing triggers."""

    def __init__(self, sample_rate, trigger_level=7.0, trigger_time=0.25, search_time=1.0, allowed_gap=0.25,
                 pre_trigger_time=0.0, boot_time=0.35, noise_up_time=0.1, noise_down_time=0.01,
                 noise_reduction_amount=1.35, measure_freq=20.0, measure_duration=None,
                 measure_smooth_time=0.4, hp_filter_freq=50.0, lp_filter_freq=6000.0, hp_lifter_freq=150.0,
                 lp_lifter_freq=2000.0):
        owner = "Vad"
        self.sample_rate = check_int(owner, "sample_rate", sample_rate)
        if self.sample_rate == 0:
            raise ValueError(f"{owner}: sample_rate must not be 0")
        self.trigger_level = check_float(owner, "trigger_level", trigger_level)
        nonneg = dict(trigger_time=trigger_time, search_time=search_time, allowed_gap=allowed_gap,
                      pre_trigger_time=pre_trigger_time, boot_time=boot_time,
                      noise_reduction_amount=noise_reduction_amount)
        for name, v in nonneg.items():
            setattr(self, name, check_float(owner, name, v, 0.0))
        positive = dict(noise_up_time=noise_up_time, noise_down_time=noise_down_time, measure_freq=measure_freq,
                        measure_smooth_time=measure_smooth_time, hp_filter_freq=hp_filter_freq,
                        lp_filter_freq=lp_filter_freq, hp_lifter_freq=hp_lifter_freq,
                        lp_lifter_freq=lp_lifter_freq)
        for name, v in positive.items():
            setattr(self, name, check_float(owner, name, v, 0.0, lo_open=True))
        self.measure_duration = 2.0 / self.measure_freq if measure_duration is None else \
            check_float(owner, "measure_duration", measure_duration, 0.0, lo_open=True)
        self._plan()
        super().__init__()

    def _plan(self):
        """The frame, DFT, band and lifter sizes (all derived from the arguments)."""
        sr, freq = self.sample_rate, self.measure_freq
        self.measure_len = int(sr * self.measure_duration + 0.5)
        self.dft_len = 16
        while self.dft_len < self.measure_len:
            self.dft_len *= 2
        self.period = int(sr / freq + 0.5)
        self.measures_len = math.ceil(self.search_time * freq)
        self.gap_len = int(self.allowed_gap * freq + 0.5)
        self.pre_len = int(self.pre_trigger_time * sr + 0.5)
        self.spec_start = max(int(self.hp_filter_freq / sr * self.dft_len + 0.5), 1)
        self.spec_end = min(int(self.lp_filter_freq / sr * self.dft_len + 0.5), self.dft_len // 2)
        if self.spec_end <= self.spec_start:
            raise ValueError(f"Vad: the band {self.hp_filter_freq}-{self.lp_filter_freq} Hz holds no DFT bin at "
                             f"sample_rate {sr} (a {self.dft_len}-point DFT)")
        self.spec_window = 2.0 / math.sqrt(self.measure_len) * _hann(self.measure_len)
        width = self.spec_end - self.spec_start
        self.cep_window = 2.0 / math.sqrt(width) * _hann(width)
        self.cep_start = math.ceil(sr * 0.5 / self.lp_lifter_freq)
        self.cep_end = min(math.floor(sr * 0.5 / self.hp_lifter_freq), self.dft_len // 4)
        if self.cep_end <= self.cep_start:
            raise ValueError(f"Vad: the lifter band needs cepstrum_start < cepstrum_end, got "
                             f"{self.cep_start} and {self.cep_end} (sample_rate {sr}, lifter "
                             f"{self.hp_lifter_freq}-{self.lp_lifter_freq} Hz)")

    def _measure(self, frame, spectrum, noise, boot_count):
        """One frame's voicing measure; updates the channel's smoothed spectrum and noise."""
        freq = self.measure_freq
        buf = np.zeros(self.dft_len)
        buf[:self.measure_len] = frame * self.spec_window
        mag = np.abs(np.fft.rfft(buf)[self.spec_start:self.spec_end])
        band = slice(self.spec_start, self.spec_end)
        mult = boot_count / (1.0 + boot_count) if boot_count >= 0 else math.exp(-1.0 / (self.measure_smooth_time * freq))
        spectrum[band] = spectrum[band] * mult + mag * (1 - mult)
        power = spectrum[band] ** 2
        if boot_count >= 0:
            nmult = np.zeros_like(power)  # while booting the noise estimate is the spectrum itself
        else:
            up, down = math.exp(-1.0 / (self.noise_up_time * freq)), math.exp(-1.0 / (self.noise_down_time * freq))
            nmult = np.where(power > noise[band], up, down)
        noise[band] = noise[band] * nmult + power * (1 - nmult)
        clean = np.sqrt(np.maximum(0.0, power - self.noise_reduction_amount * noise[band]))
        cep = np.zeros(self.dft_len // 2)
        cep[self.spec_start:self.spec_end] = clean * self.cep_window
        total = float(np.sum(np.abs(np.fft.rfft(cep)[self.cep_start:self.cep_end]) ** 2))
        level = math.log(total / (self.cep_end - self.cep_start)) if total > 0 else -math.inf
        return max(0.0, 21 + level)

    def _apply(self, a):
        shape = a.shape
        x = a.reshape(-1, shape[-1]).astype(np.float64)
        channels, n = x.shape
        freq = self.measure_freq
        trig_mult = math.exp(-1.0 / (self.trigger_time * freq))
        boot_max = int(self.boot_time * freq - 0.5)
        spectrum = np.zeros((channels, self.dft_len))
        noise = np.zeros((channels, self.dft_len))
        measures = np.zeros((channels, self.measures_len))
        mean = np.zeros(channels)
        boot, index, flush, triggered = 0, 0, 0, False
        keep_from = None
        m = self.measures_len
        for pos in range(self.measure_len, n, self.period):
            for c in range(channels):
                meas = self._measure(x[c, pos - self.measure_len:pos], spectrum[c], noise[c], boot)
                measures[c, index] = meas
                mean[c] = mean[c] * trig_mult + meas * (1.0 - trig_mult)
                triggered = triggered or mean[c] >= self.trigger_level
                if triggered:
                    # walk back through the ring of measures: the earliest loud one reachable with
                    # gaps up to gap_len, or the silence (a zero measure) just before it
                    k, j_trig, j_zero = index, m, m
                    for j in range(m):
                        if measures[c, k] >= self.trigger_level and j <= j_trig + self.gap_len:
                            j_zero = j_trig = j
                        elif measures[c, k] == 0 and j_trig >= j_zero:
                            j_zero = j
                        k = (k + m - 1) % m
                    flush = min(max(flush, min(m - 1, j_zero)), m)
            index = (index + 1) % m
            if boot >= 0:
                boot = -1 if boot == boot_max else boot + 1
            if triggered:
                held = self.pre_len + m * self.period + self.measure_len  # audio the effect buffers
                keep_from = max(pos - held + (m - flush) * self.period, 0)
                break
        if keep_from is None:
            return x[:, :0].reshape(shape[:-1] + (0,))
        out = x[:, keep_from:]
        return out.reshape(shape[:-1] + out.shape[-1:])
