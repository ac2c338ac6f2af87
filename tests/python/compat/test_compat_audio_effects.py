"""DCShift, Dither, Overdrive, Flanger, Phaser, LFCC, DetectPitchFrequency, SlidingWindowCmn and
Magphase as a MindSpore user calls them, against references written here sample by sample in
plain Python from the algorithms' definitions (torchaudio's documented numerics, after SoX and
Kaldi), plus closed forms: a pure tone's pitch, a complex number's modulus and argument."""
import math

import numpy as np
import pytest

import mycel.dataset as ds
import mycel.dataset.audio as audio


def _wave(seed, shape, scale=0.6):
    return np.random.default_rng(seed).uniform(-scale, scale, shape).astype(np.float32)


# ---- DCShift, Dither, Overdrive ----------------------------------------------------------------

def _dcshift_ref(v, shift, gain):
    thr = 1.0 - (abs(shift) - gain)
    if shift > 0 and v > thr:
        return min((v - thr) * gain / (1 - thr) + thr + shift, thr)
    if shift < 0 and v < -thr:
        return max((v + thr) * gain / (1 - thr) - thr + shift, -thr)
    return min(max(v + shift, -1.0), 1.0)


@pytest.mark.parametrize("shift,gain", [(0.5, None), (-0.4, 0.05), (0.3, 0.02), (1.5, None)])
def test_dcshift(shift, gain):
    x = np.linspace(-1, 1, 41).astype(np.float32)
    got = audio.DCShift(shift, gain)(x)
    ref = [_dcshift_ref(float(v), shift, shift if gain is None else gain) for v in x]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="shift must be <= 2.0"):
        audio.DCShift(2.5)


def test_dither_tpdf_and_noise_shaping():
    x = _wave(0, (2, 50)).astype(np.float64)
    n = x.shape[1]
    tri = np.bartlett(n + 1)[:-1]  # the periodic triangle: numpy's symmetric one, one point longer
    ref = np.array([[round(v * 32766 + tri[t]) / 32768 for t, v in enumerate(row)] for row in x])
    np.testing.assert_allclose(audio.Dither()(x), ref, rtol=0, atol=1e-12)
    shaped = audio.Dither(noise_shaping=True)(x)
    ref_shaped = ref.copy()
    for r in range(2):
        for t in range(1, n):
            ref_shaped[r, t] = ref[r, t] + (ref[r, t - 1] - x[r, t - 1])
    np.testing.assert_allclose(shaped, ref_shaped, rtol=0, atol=1e-12)
    with pytest.raises(TypeError, match="density_function must be a DensityFunction"):
        audio.Dither("TPDF")


def test_dither_rpdf_gpdf_offsets():
    x = _wave(1, (3, 40)).astype(np.float64)
    got = audio.Dither(audio.DensityFunction.RPDF)(x)
    # one sample x[c, t] (c < 2, t < 39) minus 0.5 is added to every scaled sample before rounding
    hits = [(c, t) for c in range(2) for t in range(39)
            if np.array_equal(got, np.round(x * 32766 + (x[c, t] - 0.5)) / 32768)]
    assert hits
    got = audio.Dither(audio.DensityFunction.GPDF)(x)
    offset = got * 32768 - x * 32766  # one constant, up to the rounding
    assert offset.max() - offset.min() <= 1.0 + 1e-9
    assert abs(offset.mean()) <= 7 * 0.6 + 1


def test_overdrive():
    x = _wave(2, (2, 60), 0.3)
    gain, color = 12.0, 30.0
    g = 10 ** (gain / 20)
    ref = np.zeros(x.shape)
    for r in range(2):
        last_in = last_out = 0.0
        for t in range(60):
            c = float(x[r, t]) * g + color / 200
            c = -2 / 3 if c < -1 else 2 / 3 if c > 1 else c - c ** 3 / 3
            last_out = c - last_in + 0.995 * last_out
            last_in = c
            ref[r, t] = min(max(float(x[r, t]) * 0.5 + last_out * 0.75, -1.0), 1.0)
    np.testing.assert_allclose(audio.Overdrive(gain, color)(x), ref, rtol=0, atol=2e-6)


# ---- Flanger, Phaser ---------------------------------------------------------------------------

def _table(triangular, size, lo, hi, phase):
    start = int(phase / math.pi / 2 * size + 0.5)
    out = []
    for t in range(size):
        p = (t + start) % size
        if triangular:
            d = p * 2 / size
            q = 4 * p // size
            d = d + 0.5 if q == 0 else d - 1.5 if q == 3 else 1.5 - d
        else:
            d = (math.sin(p / size * 2 * math.pi) + 1) / 2
        out.append(d * (hi - lo) + lo)
    return out


def _flanger_ref(x, sr, delay, depth, regen, width, speed, phase, triangular, quadratic):
    channels, n = x.shape
    fb, wet = regen / 100, width / 100
    dry = 1 / (1 + wet)
    wet = wet / (1 + wet) * (1 - abs(fb))
    length = int((delay + depth) / 1000 * sr + 0.5) + 2
    lfo_len = int(sr / speed)
    lfo = [float(np.float32(v)) for v in
           _table(triangular, lfo_len, math.floor(delay / 1000 * sr + 0.5), length - 2.0, 3 * math.pi / 2)]
    out = np.zeros((channels, n))
    for c in range(channels):
        line = [0.0] * length
        last, pos = 0.0, 0
        shift = int(c * lfo_len * phase / 100 + 0.5)
        for t in range(n):
            pos = (pos - 1) % length
            line[pos] = float(x[c, t]) + last * fb
            d = lfo[(t % lfo_len + shift) % lfo_len]
            k, f = int(math.floor(d)), d - math.floor(d)
            y0, y1, y2 = (line[(pos + k + j) % length] for j in range(3))
            if quadratic:  # the parabola through (0, y0), (1, y1), (2, y2) at f
                a = (y2 - y0) / 2 - (y1 - y0)
                b = 2 * (y1 - y0) - (y2 - y0) / 2
                last = y0 + (a * f + b) * f
            else:
                last = y0 + (y1 - y0) * f
            out[c, t] = min(max(float(x[c, t]) * dry + last * wet, -1.0), 1.0)
    return out


@pytest.mark.parametrize("mod,interp", [(audio.Modulation.SINUSOIDAL, audio.Interpolation.LINEAR),
                                        (audio.Modulation.TRIANGULAR, audio.Interpolation.QUADRATIC)])
def test_flanger(mod, interp):
    sr = 4000
    x = _wave(3, (2, 400))
    args = dict(delay=1.0, depth=3.0, regen=40.0, width=60.0, speed=5.0, phase=30.0)
    got = audio.Flanger(sr, modulation=mod, interpolation=interp, **args)(x)
    ref = _flanger_ref(x, sr, triangular=mod is audio.Modulation.TRIANGULAR,
                       quadratic=interp is audio.Interpolation.QUADRATIC, **args)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5)
    batch = audio.Flanger(sr, modulation=mod, interpolation=interp, **args)(np.stack([x, x[::-1]]))
    np.testing.assert_allclose(batch[0], got, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="rank >= 2"):
        audio.Flanger(sr)(x[0])
    with pytest.raises(ValueError, match="regen must be <= 95"):
        audio.Flanger(sr, regen=99.0)


@pytest.mark.parametrize("sinusoidal", [True, False])
def test_phaser(sinusoidal):
    sr, gain_in, gain_out, delay_ms, decay, speed = 8000, 0.5, 0.8, 2.0, 0.6, 2.0
    x = _wave(4, (3, 500))
    length = int(delay_ms * 0.001 * sr + 0.5)
    mod_len = int(sr / speed + 0.5)
    mod = [int(v - 0.5) if v < 0 else int(v + 0.5) for v in
           _table(not sinusoidal, mod_len, 1.0, float(length), math.pi / 2)]
    ref = np.zeros(x.shape)
    for r in range(3):
        line = [0.0] * length
        wpos = mpos = 0
        for t in range(500):
            y = float(x[r, t]) * gain_in + line[(wpos + mod[mpos]) % length]
            mpos = (mpos + 1) % mod_len
            wpos = (wpos + 1) % length
            line[wpos] = y * decay
            ref[r, t] = min(max(y * gain_out, -1.0), 1.0)
    got = audio.Phaser(sr, gain_in, gain_out, delay_ms, decay, speed, sinusoidal)(x)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)


# ---- LFCC ------------------------------------------------------------------------------------

def test_lfcc_against_a_direct_computation():
    sr, n_fft, n_filter, n_lfcc = 8000, 64, 12, 5
    x = _wave(5, (300,)).astype(np.float64)
    got = audio.LFCC(sr, n_filter, n_lfcc, f_min=100.0, f_max=3000.0,
                     speckwargs={"n_fft": n_fft, "hop_length": 16})(x)
    # power spectrogram: frames of the reflect-padded signal times a periodic Hann window
    pad = np.pad(x, n_fft // 2, mode="reflect")
    win = [0.5 - 0.5 * math.cos(2 * math.pi * k / n_fft) for k in range(n_fft)]
    frames = [pad[s:s + n_fft] * win for s in range(0, len(pad) - n_fft + 1, 16)]
    bins = n_fft // 2 + 1
    spec = np.array([[abs(sum(fr[k] * np.exp(-2j * math.pi * f * k / n_fft) for k in range(n_fft))) ** 2
                      for fr in frames] for f in range(bins)])
    # triangular filters with corners evenly spaced in Hz
    corners = [100 + (3000 - 100) * i / (n_filter + 1) for i in range(n_filter + 2)]
    fb = np.zeros((bins, n_filter))
    for b in range(bins):
        hz = (sr // 2) * b / (bins - 1)
        for m in range(n_filter):
            lo, mid, hi = corners[m:m + 3]
            fb[b, m] = max(0.0, min((hz - lo) / (mid - lo), (hi - hz) / (hi - mid)))
    lin = fb.T @ spec
    db = 10 * np.log10(np.maximum(lin, 1e-10))
    db = np.maximum(db, db.max() - 80)
    dct = np.array([[math.cos(math.pi / n_filter * (m + 0.5) * k) for m in range(n_filter)]
                    for k in range(n_lfcc)])
    dct[0] *= 1 / math.sqrt(2)
    dct *= math.sqrt(2 / n_filter)
    np.testing.assert_allclose(got, dct @ db, rtol=1e-4, atol=1e-3)
    logged = audio.LFCC(sr, n_filter, n_lfcc, f_min=100.0, f_max=3000.0, log_lf=True,
                        speckwargs={"n_fft": n_fft, "hop_length": 16})(x)
    np.testing.assert_allclose(logged, dct @ np.log(lin + 1e-6), rtol=1e-4, atol=1e-3)
    with pytest.raises(ValueError, match=r"n_lfcc \(20\) must not exceed n_filter \(10\)"):
        audio.LFCC(n_filter=10, n_lfcc=20)


# ---- DetectPitchFrequency ------------------------------------------------------------------------

def test_pitch_of_pure_tones():
    sr = 8000
    t = np.arange(4000) / sr
    # periods of 40 and 32 samples: twice each is past the lower half of the 95 lags searched,
    # so no octave error can win the 1 % preference for short lags
    for hz in (200.0, 250.0):
        got = audio.DetectPitchFrequency(sr, win_length=3)(np.sin(2 * math.pi * hz * t))
        np.testing.assert_allclose(got[5:-5], hz, rtol=1e-6)


def _pitch_ref(x, sr, frame_time, win, lo_hz, hi_hz):
    lags = math.ceil(sr / lo_hz)
    size = math.ceil(sr * frame_time)
    frames = math.ceil(len(x) / size)
    x = list(x) + [0.0] * (lags + frames * size - len(x))
    lag_min = math.ceil(sr / hi_hz)
    picks = []
    for f in range(frames):
        a = x[f * size:(f + 1) * size]
        nccf = []
        for lag in range(1, lags + 1):
            b = x[f * size + lag:(f + 1) * size + lag]
            num = sum(p * q for p, q in zip(a, b))
            nccf.append(num / (1e-9 + math.sqrt(sum(p * p for p in a))) ** 2 /
                        (1e-9 + math.sqrt(sum(q * q for q in b))) ** 2)
        cand = nccf[lag_min:]
        best = cand.index(max(cand))
        low = nccf[lag_min:lags // 2]
        if low and max(low) > 0.99 * cand[best]:
            best = low.index(max(low))
        picks.append(best + lag_min + 1)
    pad = (win - 1) // 2
    seq = [picks[0]] * pad + picks
    med = [sorted(seq[i:i + win])[(win - 1) // 2] for i in range(len(seq) - win + 1)]
    return [sr / (1e-9 + m) for m in med]


def test_pitch_against_a_direct_computation():
    sr = 4000
    rng = np.random.default_rng(6)
    x = (np.sin(2 * math.pi * 180 * np.arange(900) / sr) + 0.3 * rng.standard_normal(900)).astype(np.float32)
    got = audio.DetectPitchFrequency(sr, frame_time=0.02, win_length=5, freq_low=60, freq_high=1000)(x)
    ref = _pitch_ref(x.astype(np.float64), sr, 0.02, 5, 60, 1000)
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    two = audio.DetectPitchFrequency(sr, frame_time=0.02, win_length=5, freq_low=60, freq_high=1000)(
        np.stack([x, x]))
    assert two.shape == (2, len(ref))


# ---- SlidingWindowCmn ----------------------------------------------------------------------------

def _cmn_ref(x, window, min_window, center, norm_vars):
    n = x.shape[0]
    out = np.zeros_like(x)
    for t in range(n):
        if center:
            start, end = t - window // 2, t - window // 2 + window
        else:
            start, end = t - window, t + 1
        if start < 0:
            end, start = end - start, 0
        if not center and end > t:
            end = max(t + 1, min_window)
        if end > n:
            start, end = max(start - (end - n), 0), n
        part = x[start:end]
        out[t] = x[t] - part.mean(axis=0)
        if norm_vars:
            out[t] = 0.0 if end - start == 1 else out[t] / part.std(axis=0)
    return out


@pytest.mark.parametrize("window,min_window,center,norm_vars",
                         [(600, 100, False, False), (7, 3, False, True), (6, 2, True, False), (5, 1, True, True),
                          (4, 1, False, True)])
def test_sliding_window_cmn(window, min_window, center, norm_vars):
    x = _wave(7, (2, 30, 4)).astype(np.float64)
    got = audio.SlidingWindowCmn(window, min_window, center, norm_vars)(x)
    for k in range(2):
        np.testing.assert_allclose(got[k], _cmn_ref(x[k], window, min_window, center, norm_vars),
                                   rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="cmn_window must be an int >= 0"):
        audio.SlidingWindowCmn(-1)


# ---- Magphase ----------------------------------------------------------------------------------

def test_magphase_eager_and_in_a_pipeline():
    z = _wave(8, (3, 5, 2))
    c = z[..., 0].astype(np.float64) + 1j * z[..., 1]
    mag, phase = audio.Magphase(2.0)(z)
    np.testing.assert_allclose(mag, np.abs(c) ** 2, rtol=1e-6)
    np.testing.assert_allclose(phase, np.angle(c), rtol=1e-6)
    data = ds.NumpySlicesDataset({"spec": z[None].repeat(2, 0)}, shuffle=False)
    data = data.map(audio.Magphase(), input_columns=["spec"], output_columns=["mag", "phase"])
    rows = list(data.create_dict_iterator(num_epochs=1, output_numpy=True))
    assert len(rows) == 2
    np.testing.assert_allclose(rows[0]["mag"], np.abs(c), rtol=1e-6)
    np.testing.assert_allclose(rows[1]["phase"], np.angle(c), rtol=1e-6)
    with pytest.raises(ValueError, match=r"complex \(\.\.\., 2\)"):
        audio.Magphase()(np.ones((3, 3)))
