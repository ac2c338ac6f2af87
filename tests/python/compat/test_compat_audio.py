"""mindspore.dataset.audio as a MindSpore user writes it (imports renamed), each transform
against an independent reference: brute-force DFTs, the mel filter formulas evaluated point by
point, scipy's DCT, sine waves for resampling, and the closed forms of the gains and deltas."""
import math

import numpy as np
import pytest

import mycel.dataset as ds
import mycel.dataset.audio as audio

RNG = np.random.default_rng(0)


def _hann(n):  # periodic Hann, written as sin^2
    return np.sin(np.pi * np.arange(n) / n) ** 2


def _brute_stft(x, n_fft, hop, win_length, center, mode, onesided=True):
    win = np.zeros(n_fft)
    left = (n_fft - win_length) // 2
    win[left:left + win_length] = _hann(win_length)
    if center:
        x = np.pad(x, n_fft // 2, mode=mode)
    frames = []
    for start in range(0, len(x) - n_fft + 1, hop):
        seg = x[start:start + n_fft] * win
        bins = n_fft // 2 + 1 if onesided else n_fft
        frames.append([sum(seg[n] * np.exp(-2j * np.pi * k * n / n_fft) for n in range(n_fft))
                       for k in range(bins)])
    return np.array(frames).T, win


@pytest.mark.parametrize("n_fft,win,hop,center,mode,power,normalized,onesided", [
    (16, None, None, True, audio.BorderType.REFLECT, 2.0, False, True),
    (16, 12, 5, True, audio.BorderType.CONSTANT, 1.0, True, True),
    (20, 20, 7, False, audio.BorderType.REFLECT, None, False, True),
    (8, 8, 3, True, audio.BorderType.EDGE, 2.0, False, False),
])
def test_spectrogram_is_a_brute_force_dft(n_fft, win, hop, center, mode, power, normalized, onesided):
    x = RNG.standard_normal((2, 70)).astype(np.float32)
    op = audio.Spectrogram(n_fft=n_fft, win_length=win, hop_length=hop, power=power,
                           normalized=normalized, center=center, pad_mode=mode, onesided=onesided)
    got = op(x)
    wl = win or n_fft
    for c in range(2):
        ref, w = _brute_stft(x[c].astype(np.float64), n_fft, hop or wl // 2, wl, center, mode.value, onesided)
        if normalized:
            ref = ref / np.sqrt((w ** 2).sum())
        if power is None:
            ref = np.stack([ref.real, ref.imag], -1)
        else:
            ref = np.abs(ref) ** power
        assert got.dtype == np.float32
        np.testing.assert_allclose(got[c], ref, rtol=1e-4, atol=1e-4)


def _mel(f, htk):
    if htk:
        return 2595 * math.log10(1 + f / 700)
    return f / (200 / 3) if f < 1000 else 15 + math.log(f / 1000) / (math.log(6.4) / 27)


def _hz(m, htk):
    if htk:
        return 700 * (10 ** (m / 2595) - 1)
    return m * 200 / 3 if m < 15 else 1000 * math.exp((m - 15) * math.log(6.4) / 27)


@pytest.mark.parametrize("mel_type", list(audio.MelType))
@pytest.mark.parametrize("norm", list(audio.NormType))
def test_melscale_fbanks_pointwise(mel_type, norm):
    n_freqs, f_min, f_max, n_mels, sr = 65, 30.0, 7000.0, 12, 16000
    got = audio.melscale_fbanks(n_freqs, f_min, f_max, n_mels, sr, norm, mel_type)
    htk = mel_type is audio.MelType.HTK
    lo, hi = _mel(f_min, htk), _mel(f_max, htk)
    pts = [_hz(lo + (hi - lo) * i / (n_mels + 1), htk) for i in range(n_mels + 2)]
    assert got.shape == (n_freqs, n_mels) and got.dtype == np.float32
    for k in range(n_freqs):
        f = k * (sr / 2) / (n_freqs - 1)
        for m in range(n_mels):
            a, b, c = pts[m], pts[m + 1], pts[m + 2]
            v = (f - a) / (b - a) if a <= f <= b else (c - f) / (c - b) if b < f <= c else 0.0
            if norm is audio.NormType.SLANEY:
                v *= 2 / (c - a)
            assert got[k, m] == pytest.approx(v, rel=1e-5, abs=1e-7), (k, m)
    assert _mel(1000, False) == 15  # Slaney's scale turns logarithmic at 1 kHz


@pytest.mark.parametrize("norm", list(audio.NormMode))
def test_create_dct_against_scipy(norm):
    fft = pytest.importorskip("scipy.fft")
    got = audio.create_dct(13, 40, norm)
    ref = fft.dct(np.eye(40), type=2, norm="ortho" if norm is audio.NormMode.ORTHO else None, axis=1)[:, :13]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    if norm is audio.NormMode.ORTHO:
        np.testing.assert_allclose(got.T @ got, np.eye(13), atol=1e-5)


def _db(x, mult, ref=1.0, amin=1e-10, top_db=None):
    d = mult * np.log10(np.maximum(x, amin)) - mult * np.log10(max(amin, ref))
    return d if top_db is None else np.maximum(d, d.max() - top_db)


def test_melspectrogram_amplitude_to_db_and_mfcc():
    fft = pytest.importorskip("scipy.fft")
    x = RNG.standard_normal(800).astype(np.float32)
    kw = dict(sample_rate=8000, n_fft=64, hop_length=32, n_mels=20)
    mel = audio.MelSpectrogram(**kw)(x)
    spec = audio.Spectrogram(n_fft=64, hop_length=32)(x).astype(np.float64)
    fb = audio.melscale_fbanks(33, 0.0, 4000.0, 20, 8000).astype(np.float64)
    np.testing.assert_allclose(mel, fb.T @ spec, rtol=1e-4, atol=1e-6)
    for stype, mult in [(audio.ScaleType.POWER, 10), (audio.ScaleType.MAGNITUDE, 20)]:
        got = audio.AmplitudeToDB(stype, ref_value=2.0, top_db=30.0)(mel)
        np.testing.assert_allclose(got, _db(mel.astype(np.float64), mult, 2.0, top_db=30.0), rtol=1e-4, atol=1e-3)
    mfcc = audio.MFCC(sample_rate=8000, n_mfcc=10, melkwargs=dict(n_fft=64, hop_length=32, n_mels=20))(x)
    ref = fft.dct(_db(mel.astype(np.float64), 10, top_db=80.0), type=2, norm="ortho", axis=0)[:10]
    np.testing.assert_allclose(mfcc, ref, rtol=1e-3, atol=1e-3)
    logm = audio.MFCC(sample_rate=8000, n_mfcc=10, log_mels=True,
                      melkwargs=dict(n_fft=64, hop_length=32, n_mels=20))(x)
    np.testing.assert_allclose(logm, fft.dct(np.log(mel.astype(np.float64) + 1e-6), type=2, norm="ortho",
                                             axis=0)[:10], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("orig,new,method", [(16000, 8000, audio.ResampleMethod.SINC_INTERPOLATION),
                                             (8000, 16000, audio.ResampleMethod.SINC_INTERPOLATION),
                                             (44100, 16000, audio.ResampleMethod.KAISER_WINDOW)])
def test_resample_sine_waves(orig, new, method):
    n = orig // 10  # 0.1 s
    t = np.arange(n) / orig
    x = (0.5 * np.sin(2 * np.pi * 440 * t) + 0.3 * np.sin(2 * np.pi * 1250 * t + 0.4)).astype(np.float32)
    y = audio.Resample(orig, new, method)(np.stack([x, -x]))
    assert y.shape == (2, math.ceil(n * new / orig))
    tn = np.arange(y.shape[1]) / new
    ref = 0.5 * np.sin(2 * np.pi * 440 * tn) + 0.3 * np.sin(2 * np.pi * 1250 * tn + 0.4)
    inner = slice(60, -60)  # away from the zero-padded ends
    np.testing.assert_allclose(y[0][inner], ref[inner], atol=5e-3)
    np.testing.assert_allclose(y[1], -y[0], atol=1e-6)
    assert np.array_equal(audio.Resample(16000, 16000)(x), x)


def test_time_stretch_phase_vocoder():
    x = RNG.standard_normal(2000).astype(np.float32)
    spec = audio.Spectrogram(n_fft=64, hop_length=16, power=None)(x)  # (33, frames, 2)
    assert np.array_equal(audio.TimeStretch(16, 33)(spec), spec)
    rate = 1.7
    got = audio.TimeStretch(hop_length=16, n_freq=33, fixed_rate=rate)(spec).astype(np.float64)
    frames = spec.shape[1]
    assert got.shape == (33, math.ceil(frames / rate), 2)
    z = spec[..., 0].astype(np.float64) + 1j * spec[..., 1]
    mag = np.abs(np.pad(z, [(0, 0), (0, 2)]))
    for j in range(got.shape[1]):
        s = j * rate
        i, a = int(s), s - int(s)
        np.testing.assert_allclose(np.hypot(got[:, j, 0], got[:, j, 1]), (1 - a) * mag[:, i] + a * mag[:, i + 1],
                                   rtol=1e-4, atol=1e-4)
    # the first frame keeps its phase; the next advances by the phase step between input frames
    # 0 and 1, taken as the principal value around the expected advance of each bin per hop
    out = got[..., 0] + 1j * got[..., 1]
    np.testing.assert_allclose(out[:, 0], z[:, 0], rtol=1e-4, atol=1e-4)
    adv = np.pi * 16 * np.arange(33) / 32
    step = np.angle(z[:, 1]) - np.angle(z[:, 0]) - adv
    step = (step + np.pi) % (2 * np.pi) - np.pi + adv
    np.testing.assert_allclose(out[:, 1], np.abs(out[:, 1]) * np.exp(1j * (np.angle(z[:, 0]) + step)),
                               rtol=1e-4, atol=1e-4)


def test_masking():
    spec = RNG.random((2, 10, 12)).astype(np.float32)
    got = audio.FrequencyMasking(False, 3, 4, -1.0)(spec)
    ref = spec.copy()
    ref[:, 4:7, :] = -1.0
    assert np.array_equal(got, ref)
    got = audio.TimeMasking(False, 5, 7, 0.5)(spec)
    ref = spec.copy()
    ref[..., 7:12] = 0.5
    assert np.array_equal(got, ref)
    with pytest.raises(ValueError, match="exceeds the 12 bins"):
        audio.TimeMasking(False, 6, 7)(spec)
    # iid masks: per channel one contiguous band of width <= param, reproducible per seed/row
    d = ds.NumpySlicesDataset({"s": np.repeat(spec[None], 4, 0)}, shuffle=False)
    d = d.map(operations=audio.TimeMasking(True, 4, mask_value=-9.0), input_columns=["s"])
    runs = [[r[0] for r in d.create_tuple_iterator(num_epochs=1, output_numpy=True)] for _ in range(2)]
    for a, b in zip(*runs):
        assert np.array_equal(a, b)
        for ch in range(2):
            cols = np.where((a[ch] == -9.0).all(axis=0))[0]
            assert len(cols) <= 4 and (len(cols) == 0 or cols[-1] - cols[0] + 1 == len(cols))
            assert np.array_equal(np.delete(a[ch], cols, axis=1), np.delete(spec[ch], cols, axis=1))


def test_vol_gain_fade_deltas():
    x = (RNG.random((2, 50)) * 1.6 - 0.8).astype(np.float32)
    np.testing.assert_allclose(audio.Vol(1.5)(x), np.clip(x * 1.5, -1, 1), rtol=1e-6)
    np.testing.assert_allclose(audio.Vol(-6.0, audio.GainType.DB)(x), np.clip(x * 10 ** (-6 / 20), -1, 1), rtol=1e-6)
    np.testing.assert_allclose(audio.Vol(0.25, audio.GainType.POWER)(x), np.clip(x * 0.5, -1, 1), rtol=1e-5)
    np.testing.assert_allclose(audio.Gain(3.0)(x), x * 10 ** (3 / 20), rtol=1e-6)
    curves = {audio.FadeShape.LINEAR: lambda t: t, audio.FadeShape.EXPONENTIAL: lambda t: 2 ** ((t - 1) * 5),
              audio.FadeShape.LOGARITHMIC: lambda t: math.log10(0.1 + t) + 1,
              audio.FadeShape.QUARTER_SINE: lambda t: math.sin(t * math.pi / 2),
              audio.FadeShape.HALF_SINE: lambda t: math.sin(t * math.pi - math.pi / 2) / 2 + 0.5}
    for shape, f in curves.items():
        got = audio.Fade(10, 7, shape)(x)
        g = [1.0] * 50
        for i in range(10):
            g[i] = f(i / 9)
        for i in range(7):
            g[50 - 7 + i] *= f((6 - i) / 6)
        np.testing.assert_allclose(got, x * np.array(g), rtol=1e-5, atol=1e-7)
    spec = RNG.standard_normal((3, 9)).astype(np.float32)
    for win in (3, 5, 6):
        n = (win - 1) // 2
        got = audio.ComputeDeltas(win)(spec)
        ref = np.zeros_like(spec, dtype=np.float64)
        for t in range(9):
            c = lambda j: spec[:, min(max(j, 0), 8)].astype(np.float64)  # noqa: E731 (edge padding)
            ref[:, t] = sum(k * (c(t + k) - c(t - k)) for k in range(1, n + 1)) / (2 * sum(k * k for k in range(1, n + 1)))
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_audio_in_a_pipeline_and_errors():
    waves = RNG.standard_normal((4, 1600)).astype(np.float32)
    d = ds.NumpySlicesDataset({"audio": waves}, shuffle=False)
    d = d.map(operations=[audio.MelSpectrogram(sample_rate=16000, n_fft=128, n_mels=16),
                          audio.AmplitudeToDB()], input_columns=["audio"]).batch(2)
    out = [r[0] for r in d.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert [o.shape for o in out] == [(2, 16, 1600 // 64 + 1)] * 2
    eager = audio.AmplitudeToDB()(audio.MelSpectrogram(sample_rate=16000, n_fft=128, n_mels=16)(waves[3]))
    np.testing.assert_allclose(out[1][1], eager, rtol=1e-5, atol=1e-4)
    with pytest.raises(ValueError, match="shorter than n_fft"):
        audio.Spectrogram(n_fft=400, center=False)(waves[0, :100])
    with pytest.raises(ValueError, match="has 30 frequency bins"):
        audio.MelScale(n_stft=201)(np.ones((30, 5), np.float32))
    with pytest.raises(TypeError, match="window must be a WindowType"):
        audio.Spectrogram(window="hann")
    with pytest.raises(ValueError, match="n_mfcc \\(50\\) must not exceed n_mels \\(20\\)"):
        audio.MFCC(n_mfcc=50, melkwargs=dict(n_mels=20))
    with pytest.raises(TypeError, match="must be numeric"):
        audio.Gain()(np.array(["a"]))


def test_mask_along_axis_db_to_amplitude_complex_norm_angle():
    spec = RNG.random((2, 6, 9)).astype(np.float32)
    ref = spec.copy()
    ref[:, 2:5, :] = 7.0
    assert np.array_equal(audio.MaskAlongAxis(2, 3, 7.0, 1)(spec), ref)
    ref = spec.copy()
    ref[..., 0:4] = -1.0
    assert np.array_equal(audio.MaskAlongAxis(0, 4, -1.0, 2)(spec), ref)
    got = audio.MaskAlongAxisIID(3, 5.0, 1)(spec)
    for ch in range(2):
        rows = np.where((got[ch] == 5.0).all(axis=1))[0]
        assert len(rows) <= 3 and np.array_equal(np.delete(got[ch], rows, 0), np.delete(spec[ch], rows, 0))
    with pytest.raises(ValueError, match="axis must be 1 .* or 2"):
        audio.MaskAlongAxis(0, 1, 0.0, 0)
    db = audio.AmplitudeToDB(top_db=None)(spec)
    np.testing.assert_allclose(audio.DBToAmplitude(1.0, 1.0)(db), spec, rtol=1e-5)
    np.testing.assert_allclose(audio.DBToAmplitude(2.0, 0.5)(db), 2.0 * np.sqrt(spec), rtol=1e-5)
    z = RNG.standard_normal((4, 5, 2)).astype(np.float32)
    np.testing.assert_allclose(audio.ComplexNorm(2.0)(z), z[..., 0] ** 2 + z[..., 1] ** 2, rtol=1e-5)
    np.testing.assert_allclose(audio.Angle()(z), np.angle(z[..., 0] + 1j * z[..., 1]), rtol=1e-5, atol=1e-6)
