"""The biquad family, LFilter, Filtfilt, GriffinLim, InverseMelScale and PitchShift as a MindSpore
user calls them (imports renamed). References: a direct difference-equation loop, coefficients
written here from the Audio EQ Cookbook, closed-form frequency responses (scipy.signal.freqz),
scipy's lfilter and nnls, the analog CD de-emphasis curve, spectral peaks and convergence."""
import math

import numpy as np
import pytest
from scipy import optimize, signal

import mycel.dataset as ds
import mycel.dataset.audio as audio

SR = 16000


def _direct(x, a, b, clamp=True):
    """y[n] = (sum b[k] x[n-k] - sum_{k>=1} a[k] y[n-k]) / a[0], one sample at a time."""
    x = np.asarray(x, np.float64)
    y = np.zeros_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        row, out = x[idx], y[idx]
        for n in range(len(row)):
            acc = sum(b[k] * row[n - k] for k in range(len(b)) if n - k >= 0)
            acc -= sum(a[k] * out[n - k] for k in range(1, len(a)) if n - k >= 0)
            out[n] = acc / a[0]
    return np.clip(y, -1, 1) if clamp else y


def _noise(shape, scale=0.3, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def test_lfilter_against_difference_equation():
    x = _noise((2, 3, 300), 0.6)
    a, b = [2.0, -0.9, 0.3, 0.05], [0.4, 0.2, -0.1, 0.3]
    for clamp in (True, False):
        got = audio.LFilter(a, b, clamp=clamp)(x)
        assert got.dtype == np.float32 and got.shape == x.shape
        np.testing.assert_allclose(got, _direct(x, a, b, clamp), atol=1e-6)
    np.testing.assert_allclose(audio.LFilter(a, b, clamp=False)(x), signal.lfilter(b, a, x.astype(np.float64)),
                               atol=1e-6)
    x64 = x.astype(np.float64)
    assert audio.LFilter(a, b)(x64).dtype == np.float64
    with pytest.raises(ValueError, match="same length"):
        audio.LFilter([1.0, 0.5], [1.0])
    with pytest.raises(ValueError, match="a_coeffs\\[0\\] must not be 0"):
        audio.LFilter([0.0, 1.0], [1.0, 1.0])


def test_filtfilt_is_forward_then_backward():
    x = _noise((2, 400), 0.4, 1)
    a, b = [1.0, -1.2, 0.5], [0.1, 0.2, 0.1]
    fwd = _direct(x, a, b, clamp=False)
    expect = _direct(fwd[..., ::-1], a, b, clamp=True)[..., ::-1]
    np.testing.assert_allclose(audio.Filtfilt(a, b)(x), expect, atol=1e-6)
    # zero phase: a steady tone keeps its phase, its amplitude scaled by |H|^2
    t = np.arange(4000) / SR
    tone = 0.2 * np.sin(2 * np.pi * 500 * t)
    out = audio.Filtfilt(a, b, clamp=False)(tone)
    _, h = signal.freqz(b, a, worN=[500], fs=SR)
    mid = slice(1000, 3000)
    np.testing.assert_allclose(out[mid], abs(h[0]) ** 2 * tone[mid], atol=1e-4)


def _cookbook(kind, f0, q=0.707, gain=0.0):
    """(b, a) from Robert Bristow-Johnson's Audio EQ Cookbook."""
    w0 = 2 * math.pi * f0 / SR
    cw, sw = math.cos(w0), math.sin(w0)
    alpha = sw / (2 * q)
    amp = 10 ** (gain / 40)
    if kind == "lowpass":
        return [(1 - cw) / 2, 1 - cw, (1 - cw) / 2], [1 + alpha, -2 * cw, 1 - alpha]
    if kind == "highpass":
        return [(1 + cw) / 2, -(1 + cw), (1 + cw) / 2], [1 + alpha, -2 * cw, 1 - alpha]
    if kind == "bandpass_peak":  # constant 0 dB peak gain
        return [alpha, 0, -alpha], [1 + alpha, -2 * cw, 1 - alpha]
    if kind == "bandpass_skirt":  # constant skirt gain, peak gain = Q
        return [sw / 2, 0, -sw / 2], [1 + alpha, -2 * cw, 1 - alpha]
    if kind == "notch":
        return [1, -2 * cw, 1], [1 + alpha, -2 * cw, 1 - alpha]
    if kind == "allpass":
        return [1 - alpha, -2 * cw, 1 + alpha], [1 + alpha, -2 * cw, 1 - alpha]
    if kind == "peaking":
        return [1 + alpha * amp, -2 * cw, 1 - alpha * amp], [1 + alpha / amp, -2 * cw, 1 - alpha / amp]
    sq = 2 * math.sqrt(amp) * alpha
    if kind == "lowshelf":
        return ([amp * ((amp + 1) - (amp - 1) * cw + sq), 2 * amp * ((amp - 1) - (amp + 1) * cw),
                 amp * ((amp + 1) - (amp - 1) * cw - sq)],
                [(amp + 1) + (amp - 1) * cw + sq, -2 * ((amp - 1) + (amp + 1) * cw),
                 (amp + 1) + (amp - 1) * cw - sq])
    assert kind == "highshelf"
    return ([amp * ((amp + 1) + (amp - 1) * cw + sq), -2 * amp * ((amp - 1) + (amp + 1) * cw),
             amp * ((amp + 1) + (amp - 1) * cw - sq)],
            [(amp + 1) - (amp - 1) * cw + sq, 2 * ((amp - 1) - (amp + 1) * cw),
             (amp + 1) - (amp - 1) * cw - sq])


CASES = [
    (lambda: audio.LowpassBiquad(SR, 1000.0), "lowpass", 1000, 0.707, 0),
    (lambda: audio.HighpassBiquad(SR, 2000.0, Q=0.5), "highpass", 2000, 0.5, 0),
    (lambda: audio.BandpassBiquad(SR, 1500.0, Q=0.9), "bandpass_peak", 1500, 0.9, 0),
    (lambda: audio.BandpassBiquad(SR, 1500.0, Q=0.6, const_skirt_gain=True), "bandpass_skirt", 1500, 0.6, 0),
    (lambda: audio.BandrejectBiquad(SR, 3000.0, Q=1.0), "notch", 3000, 1.0, 0),
    (lambda: audio.AllpassBiquad(SR, 800.0), "allpass", 800, 0.707, 0),
    (lambda: audio.EqualizerBiquad(SR, 1200.0, 6.0, Q=0.8), "peaking", 1200, 0.8, 6.0),
    (lambda: audio.BassBiquad(SR, -8.0), "lowshelf", 100, 0.707, -8.0),
    (lambda: audio.TrebleBiquad(SR, 5.0, central_freq=2500.0, Q=0.9), "highshelf", 2500, 0.9, 5.0),
]


@pytest.mark.parametrize("make,kind,f0,q,gain", CASES, ids=[c[1] for c in CASES])
def test_biquads_are_the_cookbook_filters(make, kind, f0, q, gain):
    b, a = _cookbook(kind, f0, q, gain)
    x = _noise((2, 256), 0.5, 2)
    got = make()(x)
    np.testing.assert_allclose(got, _direct(x, a, b), atol=2e-6)
    # the closed-form responses of each design
    _, h = signal.freqz(b, a, worN=[1e-3, f0, SR / 2 - 1e-3], fs=SR)
    db = 20 * np.log10(np.abs(h))
    if kind == "lowpass":
        assert abs(db[0]) < 1e-6 and abs(db[1] + 3.01) < 0.01
    elif kind in ("bandpass_peak", "allpass"):
        assert abs(db[1]) < 1e-6
    elif kind == "bandpass_skirt":
        assert abs(np.abs(h[1]) - q) < 1e-6
    elif kind == "notch":
        assert np.abs(h[1]) < 1e-9
    elif kind == "peaking":
        assert abs(db[1] - gain) < 1e-6
    elif kind == "lowshelf":
        assert abs(db[0] - gain) < 1e-4
    elif kind == "highshelf":
        assert abs(db[2] - gain) < 1e-4


def test_band_biquad_and_generic_biquad():
    # SoX's 'band': a resonator at f0 with bandwidth f0 / Q (MindSpore allows Q in (0, 1])
    f0, q = 2000.0, 1.0
    x = _noise((1, 300), 0.5, 3)
    band = audio.BandBiquad(SR, f0, Q=q)
    bw = f0 / q
    a2 = math.exp(-2 * math.pi * bw / SR)
    a1 = -4 * a2 / (1 + a2) * math.cos(2 * math.pi * f0 / SR)
    b0 = math.sqrt(1 - a1 * a1 / (4 * a2)) * (1 - a2)
    np.testing.assert_allclose(band(x), _direct(x, [1, a1, a2], [b0, 0, 0]), atol=2e-6)
    freqs = np.linspace(1, SR / 2 - 1, 20000)
    _, h = signal.freqz([b0, 0, 0], [1, a1, a2], worN=freqs, fs=SR)
    assert abs(freqs[np.argmax(np.abs(h))] - f0) < 0.05 * f0
    assert abs(np.abs(h).max() - 1) < 0.01  # unit gain at the peak
    # noise mode (SoX's -n): b0 set for unit gain on white noise, sqrt(((1+a2)^2 - a1^2)(1-a2)/(1+a2))
    b0n = math.sqrt(((1 + a2) ** 2 - a1 * a1) * (1 - a2) / (1 + a2))
    np.testing.assert_allclose(audio.BandBiquad(SR, f0, Q=q, noise=True)(x),
                               _direct(x, [1, a1, a2], [b0n, 0, 0]), atol=2e-6)
    _, h = signal.freqz([b0n, 0, 0], [1, a1, a2], worN=4096)
    assert abs(np.mean(np.abs(h) ** 2) - 1) < 0.01  # unit power gain on white noise
    got = audio.Biquad(0.2, 0.3, 0.1, 1.5, -0.4, 0.2)(x)
    np.testing.assert_allclose(got, _direct(x, [1.5, -0.4, 0.2], [0.2, 0.3, 0.1]), atol=1e-6)
    with pytest.raises(ValueError, match="a0 must not be 0"):
        audio.Biquad(1, 0, 0, 0, 0, 0)
    with pytest.raises(ValueError, match="Q must be > 0"):
        audio.LowpassBiquad(SR, 100.0, Q=0.0)
    with pytest.raises(ValueError, match="Q must be <= 1"):
        audio.BandBiquad(SR, 100.0, Q=2.0)
    with pytest.raises(ValueError, match="sample_rate must not be 0"):
        audio.HighpassBiquad(0, 100.0)


def test_deemph_follows_the_cd_curve():
    # CD de-emphasis: time constants 50 us and 15 us, |H| = |1 + j w t2| / |1 + j w t1|
    for sr in (44100, 48000):
        d = audio.DeemphBiquad(sr)
        f = np.array([100.0, 1000, 3000, 6000, 10000, 16000])
        _, h = signal.freqz(d.b, d.a, worN=f, fs=sr)
        w = 2 * np.pi * f
        analog = np.abs(1 + 1j * w * 15e-6) / np.abs(1 + 1j * w * 50e-6)
        np.testing.assert_allclose(20 * np.log10(np.abs(h)), 20 * np.log10(analog), atol=0.1)
    with pytest.raises(ValueError, match="44100 or 48000"):
        audio.DeemphBiquad(16000)


def test_filters_in_a_pipeline():
    x = _noise((4, 1, 200), 0.3, 4)
    d = ds.NumpySlicesDataset(x, column_names=["audio"], shuffle=False)
    d = d.map(operations=[audio.LowpassBiquad(SR, 500.0)], input_columns=["audio"])
    b, a = _cookbook("lowpass", 500)
    for row, ref in zip(d.create_tuple_iterator(output_numpy=True), x):
        np.testing.assert_allclose(row[0], _direct(ref, a, b), atol=2e-6)


def _spectral_convergence(spec_power, wave, n_fft):
    target = np.sqrt(spec_power)
    got = audio.Spectrogram(n_fft=n_fft, power=1.0)(wave)
    return float(np.linalg.norm(target - got) / np.linalg.norm(target))


def test_griffin_lim_converges():
    t = np.arange(8000) / SR
    x = (0.4 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 1250 * t + 0.3)).astype(np.float32)
    n_fft = 256
    spec = audio.Spectrogram(n_fft=n_fft, power=2.0)(x)
    errs = [_spectral_convergence(spec, audio.GriffinLim(n_fft=n_fft, n_iter=k, rand_init=False, length=8000)(spec),
                                  n_fft) for k in (1, 8, 32)]
    assert errs[0] > errs[1] > errs[2] and errs[2] < 0.2 * errs[0]
    out = audio.GriffinLim(n_fft=n_fft, n_iter=16, momentum=0.0)(spec)
    # without length: hop * (frames - 1) samples (hop = n_fft // 2), as torch.istft trims
    assert out.shape == (128 * (spec.shape[-1] - 1),) and out.dtype == np.float32
    assert _spectral_convergence(spec, np.pad(out, (0, 8000 - out.shape[0])), n_fft) < errs[0]
    with pytest.raises(ValueError, match="129"):
        audio.GriffinLim(n_fft=256)(spec[:100])
    with pytest.raises(ValueError, match="momentum must be < 1"):
        audio.GriffinLim(momentum=1.0)


def test_inverse_mel_scale_is_a_nonnegative_fit():
    n_stft, n_mels = 33, 10
    fb = audio.melscale_fbanks(n_stft, 0.0, 8000.0, n_mels, SR).astype(np.float64)
    spec = np.abs(np.random.default_rng(5).standard_normal((n_stft, 6)))
    mel = (spec.T @ fb).T.astype(np.float32)
    inv = audio.InverseMelScale(n_stft, n_mels=n_mels, sample_rate=SR, max_iter=3000,
                                tolerance_change=1e-10)
    got = inv(mel)
    assert got.shape == (n_stft, 6) and got.min() >= 0
    resid = np.linalg.norm((got.T.astype(np.float64) @ fb).T - mel, axis=0)
    best = np.array([optimize.nnls(fb.T, mel[:, k].astype(np.float64))[1] for k in range(6)])
    assert np.all(resid <= best + 0.02 * np.linalg.norm(mel, axis=0))
    with pytest.raises(ValueError, match="5 mel bins .* n_mels is 10"):
        inv(mel[:5])
    with pytest.raises(ValueError, match="sgdargs"):
        audio.InverseMelScale(n_stft, sgdargs={"lr": 0.1})


@pytest.mark.parametrize("n_steps", [12, -12, 4, -3])
def test_pitch_shift_moves_the_peak(n_steps):
    t = np.arange(SR) / SR
    x = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    y = audio.PitchShift(SR, n_steps)(x)
    assert y.shape == x.shape
    spec = np.abs(np.fft.rfft(y * np.hanning(len(y))))
    peak = np.argmax(spec) * SR / len(y)
    assert abs(peak - 440 * 2 ** (n_steps / 12)) <= 1.5


def test_pitch_shift_resampler_matches_resample():
    from mycel.dataset.audio.inverse import resample_sinc
    x = _noise((2, 500), 0.3, 6).astype(np.float64)
    for orig, new in ((32000, 16000), (16000, 24000), (3, 5)):
        np.testing.assert_allclose(resample_sinc(x, orig, new), audio.Resample(orig, new)(x), atol=1e-9)


def test_riaa_follows_the_playback_curve():
    # RIAA playback: time constants 3180, 318 and 75 us, normalised to 0 dB at 1 kHz; a biquad
    # matches the analog curve to within half a decibel over the audio band
    def analog(f):
        w = 2 * np.pi * f
        return np.abs(1 + 1j * w * 318e-6) / np.abs(1 + 1j * w * 3180e-6) / np.abs(1 + 1j * w * 75e-6)
    f = np.array([20.0, 100, 1000, 5000, 10000, 15000])
    for sr in (44100, 48000, 88200, 96000):
        d = audio.RiaaBiquad(sr)
        _, h = signal.freqz(d.b, d.a, worN=f, fs=sr)
        np.testing.assert_allclose(20 * np.log10(np.abs(h)), 20 * np.log10(analog(f) / analog(1000.0)), atol=0.5)
    with pytest.raises(ValueError, match="RiaaBiquad: sample_rate"):
        audio.RiaaBiquad(22050)


def _speech_like(onset_s, total_s=2.3, seed=0):
    """Low noise, then from onset_s on 1.5 s of a 150 Hz tone rich in harmonics (voiced)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(1.5 * SR)) / SR
    voiced = sum(0.3 / k * np.sin(2 * np.pi * 150 * k * t) for k in range(1, 20))
    x = rng.standard_normal(int(total_s * SR)) * 1e-3
    start = int(onset_s * SR)
    x[start:start + len(voiced)] += voiced[:len(x) - start]
    return x.astype(np.float32)


def test_vad_trims_the_leading_silence():
    x = _speech_like(0.8)
    y = audio.Vad(SR)(x)
    cut = len(x) - len(y)
    np.testing.assert_array_equal(y, x[cut:])  # a suffix of the input, untouched
    # cut where the voicing starts, to within one search step of the detector (1 / measure_freq)
    assert 0.8 - 0.15 <= cut / SR <= 0.8
    pre = audio.Vad(SR, pre_trigger_time=0.2)(x)
    assert len(pre) - len(y) == int(0.2 * SR + 0.5)  # pre_trigger_time keeps that much more
    assert audio.Vad(SR)(x[:int(0.8 * SR)]).shape == (0,)  # noise only: nothing triggers
    # channels are one recording: the earliest onset wins
    two = np.stack([x, _speech_like(0.5)])
    out = audio.Vad(SR)(two)
    assert out.shape[0] == 2 and 0.5 - 0.15 <= (len(x) - out.shape[1]) / SR <= 0.5
    with pytest.raises(ValueError, match="Vad: sample_rate must not be 0"):
        audio.Vad(0)
    with pytest.raises(ValueError, match="lifter band"):
        audio.Vad(SR, hp_lifter_freq=2000.0, lp_lifter_freq=150.0)


def test_contrast_and_mu_law():
    x = np.linspace(-1, 1, 101).astype(np.float32)
    # SoX's contrast: sin(x pi/2 + amount/750 sin(2 pi x))
    np.testing.assert_allclose(audio.Contrast(75.0)(x), np.sin(x * np.pi / 2 + 0.1 * np.sin(2 * np.pi * x)),
                               atol=1e-6)
    np.testing.assert_allclose(audio.Contrast(0.0)(x), np.sin(x * np.pi / 2), atol=1e-6)
    with pytest.raises(ValueError, match="enhancement_amount must be <= 100"):
        audio.Contrast(101.0)
    # mu-law (G.711's continuous curve, mu = 255): the codes of known points, then the round trip
    codes = audio.MuLawEncoding()(np.array([-1.0, 0.0, 1.0, 0.5]))
    mu = 255.0
    half = round((math.log1p(mu * 0.5) / math.log1p(mu) + 1) / 2 * mu)
    assert codes.dtype == np.int32 and codes.tolist() == [0, 128, 255, half]
    wave = np.random.default_rng(7).uniform(-1, 1, 1000)
    back = audio.MuLawDecoding()(audio.MuLawEncoding()(wave))
    assert back.dtype == np.float32
    # decoding inverts encoding up to half a code step of the companded value
    step = np.abs(np.sign(wave) * np.log1p(mu * np.abs(wave)) / np.log1p(mu)
                  - np.sign(back) * np.log1p(mu * np.abs(back)) / np.log1p(mu))
    assert step.max() <= 1.0 / mu + 1e-6
    np.testing.assert_allclose(audio.MuLawDecoding(16)(np.arange(16)),
                               [np.sign(y) * ((1 + 15) ** abs(y) - 1) / 15 for y in np.arange(16) / 15 * 2 - 1],
                               atol=1e-6)


def test_inverse_spectrogram_round_trip():
    x = _noise((2, 1000), 0.3, 8).astype(np.float64)
    for pad, normalized in ((0, False), (7, True)):
        spec = audio.Spectrogram(n_fft=128, hop_length=32, pad=pad, power=None, normalized=normalized)(x)
        back = audio.InverseSpectrogram(length=1000, n_fft=128, hop_length=32, pad=pad, normalized=normalized)(spec)
        np.testing.assert_allclose(back, x, atol=1e-9)  # Hann at 75% overlap: perfect reconstruction
    with pytest.raises(ValueError, match="65 frequency bins, n_fft 400 needs 201"):
        audio.InverseSpectrogram()(spec)


def test_phase_vocoder_matches_time_stretch_and_keeps_pitch():
    t = np.arange(8000) / SR
    x = 0.5 * np.sin(2 * np.pi * 1000 * t)
    n_fft, hop = 256, 64
    spec = audio.Spectrogram(n_fft=n_fft, hop_length=hop, power=None)(x)
    advance = np.linspace(0, np.pi * hop, n_fft // 2 + 1)[:, None]
    fast = audio.PhaseVocoder(2.0, advance)(spec)
    np.testing.assert_array_equal(fast, audio.TimeStretch(hop, n_fft // 2 + 1, 2.0)(spec))
    assert fast.shape[-2] == math.ceil(spec.shape[-2] / 2)
    # half as long, same pitch: the strongest bin of a middle frame stays at 1000 Hz
    mag = np.hypot(fast[..., 0], fast[..., 1])
    assert abs(np.argmax(mag[:, mag.shape[1] // 2]) * SR / n_fft - 1000) <= SR / n_fft
    with pytest.raises(ValueError, match="phase_advance must have shape"):
        audio.PhaseVocoder(1.5, np.zeros(5))


def test_spectral_centroid():
    x = _noise((2, 3000), 0.3, 9)
    n_fft = 256
    got = audio.SpectralCentroid(SR, n_fft=n_fft)(x)
    mag = audio.Spectrogram(n_fft=n_fft, power=1.0)(x).astype(np.float64)
    freqs = np.arange(n_fft // 2 + 1) * (SR / 2) / (n_fft // 2)
    expect = np.einsum("f,cft->ct", freqs, mag) / mag.sum(axis=1)
    assert got.shape == (2, 1, mag.shape[-1])
    np.testing.assert_allclose(got[:, 0], expect, rtol=1e-5)
    tone = np.sin(2 * np.pi * 2000 * np.arange(4000) / SR)  # a pure tone: the centroid is its frequency
    assert abs(np.median(audio.SpectralCentroid(SR, n_fft=512)(tone)) - 2000) < 40
