"""LibriSpeechDataset and TedliumDataset as a MindSpore user calls them, on small corpora written here
(WAV by the standard library's wave module, NIST SPHERE headers by hand): every column against the
samples and text written, sharding, and clear errors naming a missing or malformed file."""
import wave

import numpy as np
import pytest

import mycel.dataset as ds
from mycel.dataset.speech_corpus_sources import read_sph


def _rows(d):
    return list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))


def _wav(path, samples, rate=16000):
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.asarray(samples, "<i2").tobytes())


def _sph(path, samples, rate=16000, big_endian=False, coding="pcm"):
    """A NIST SPHERE file: a 1024-byte text header, then 16-bit samples."""
    path.parent.mkdir(parents=True, exist_ok=True)
    head = (f"NIST_1A\n   1024\nsample_count -i {len(samples)}\nsample_rate -i {rate}\nchannel_count -i 1\n"
            f"sample_n_bytes -i 2\nsample_byte_format -s2 {'10' if big_endian else '01'}\n"
            f"sample_coding -s{len(coding)} {coding}\nend_head\n").encode()
    path.write_bytes(head.ljust(1024, b" ") + np.asarray(samples, ">i2" if big_endian else "<i2").tobytes())


def test_librispeech_flac(tmp_path):
    """The corpus as distributed: FLAC, written by libsndfile (soundfile), an independent encoder."""
    sf = pytest.importorskip("soundfile")
    rng = np.random.default_rng(2)
    folder = tmp_path / "dev-clean" / "84" / "121123"
    folder.mkdir(parents=True)
    t = np.arange(40000) / 16000
    speech = 0.4 * np.sin(2 * np.pi * 220 * t) * np.sin(2 * np.pi * 3 * t) + 0.02 * rng.standard_normal(t.size)
    sf.write(folder / "84-121123-0000.flac", speech, 16000, subtype="PCM_16")
    sf.write(folder / "84-121123-0001.flac", np.zeros(5000), 16000, subtype="PCM_16")  # silence: constant
    (folder / "84-121123.trans.txt").write_text("84-121123-0000 GO DO YOU HEAR\n84-121123-0001 SILENCE\n")
    got = _rows(ds.LibriSpeechDataset(str(tmp_path), usage="dev-clean", shuffle=False))
    for (wav, rate, text, _, _, utt), name in zip(got, ("84-121123-0000", "84-121123-0001")):
        ref, ref_rate = sf.read(folder / f"{name}.flac", dtype="float64", always_2d=True)
        np.testing.assert_array_equal(wav, ref.T.astype(np.float32))
        assert int(rate) == ref_rate == 16000
    assert str(got[0][2]) == "GO DO YOU HEAR" and int(got[1][5]) == 1


def test_flac_reader_against_libsndfile(tmp_path):
    sf = pytest.importorskip("soundfile")
    from mycel.dataset.flac import read_flac
    rng = np.random.default_rng(3)
    for subtype, rate, channels, n in (("PCM_24", 44100, 2, 6000), ("PCM_S8", 8000, 1, 3000),
                                       ("PCM_16", 22050, 3, 1000)):
        x = rng.uniform(-0.9, 0.9, (n, channels)) * np.linspace(0, 1, n)[:, None]
        sf.write(tmp_path / "a.flac", x, rate, subtype=subtype, format="FLAC")
        ref, ref_rate = sf.read(tmp_path / "a.flac", dtype="float64", always_2d=True)
        got, got_rate = read_flac(str(tmp_path / "a.flac"))
        assert got_rate == ref_rate and got.shape == (channels, n)
        np.testing.assert_array_equal(got, ref.T.astype(np.float32))
    raw = (tmp_path / "a.flac").read_bytes()
    (tmp_path / "b.flac").write_bytes(raw[:len(raw) // 2])
    with pytest.raises(ValueError, match="b.flac' is not a supported FLAC file"):
        read_flac(str(tmp_path / "b.flac"))
    (tmp_path / "c.flac").write_bytes(b"RIFF" + raw[4:])
    with pytest.raises(ValueError, match="no 'fLaC' marker"):
        read_flac(str(tmp_path / "c.flac"))


def test_librispeech(tmp_path):
    rng = np.random.default_rng(0)
    written = {}
    for part, speaker, chapter, n in (("dev-clean", 84, 121123, 2), ("test-other", 1688, 142285, 1)):
        folder = tmp_path / part / str(speaker) / str(chapter)
        lines = []
        for u in range(n):
            uid = f"{speaker}-{chapter}-{u:04d}"
            samples = rng.integers(-32768, 32768, 50 + u)
            _wav(folder / f"{uid}.wav", samples)
            lines.append(f"{uid} WORDS OF LINE {u}")
            written[uid] = samples
        (folder / f"{speaker}-{chapter}.trans.txt").write_text("\n".join(lines) + "\n")
    d = ds.LibriSpeechDataset(str(tmp_path), usage="dev-clean", shuffle=False)
    assert d.get_col_names() == ["waveform", "sample_rate", "transcript", "speaker_id", "chapter_id", "utterance_id"]
    got = _rows(d)
    assert len(got) == 2
    for k, (wav, rate, text, spk, chap, utt) in enumerate(got):
        np.testing.assert_array_equal(wav, written[f"84-121123-{k:04d}"][None] / 32768.0)
        assert wav.dtype == np.float32 and int(rate) == 16000 and rate.dtype == np.uint32
        assert str(text) == f"WORDS OF LINE {k}"
        assert (int(spk), int(chap), int(utt)) == (84, 121123, k) and utt.dtype == np.uint32
    assert ds.LibriSpeechDataset(str(tmp_path)).get_dataset_size() == 3
    assert ds.LibriSpeechDataset(str(tmp_path), num_shards=2, shard_id=1).get_dataset_size() == 2  # ceil(3 / 2)
    (tmp_path / "test-other/1688/142285/1688-142285-0000.wav").unlink()
    with pytest.raises(ValueError, match="1688-142285-0000.flac \\(or .wav\\) does not exist"):
        ds.LibriSpeechDataset(str(tmp_path), usage="test-other")
    with pytest.raises(ValueError, match="train-clean-100 does not exist"):
        ds.LibriSpeechDataset(str(tmp_path), usage="train-clean-100")


@pytest.mark.parametrize("big_endian", [False, True])
def test_read_sph(tmp_path, big_endian):
    samples = np.arange(-500, 500, 7)
    _sph(tmp_path / "a.sph", samples, rate=8000, big_endian=big_endian)
    wav, rate = read_sph(str(tmp_path / "a.sph"))
    assert rate == 8000 and wav.shape == (1, len(samples))
    np.testing.assert_array_equal(wav[0], samples / 32768.0)
    part, _ = read_sph(str(tmp_path / "a.sph"), start=10, end=20)
    np.testing.assert_array_equal(part[0], samples[10:20] / 32768.0)


def test_read_sph_bad_files(tmp_path):
    _sph(tmp_path / "s.sph", [1, 2, 3], coding="pcm,embedded-shorten-v2.00")
    with pytest.raises(ValueError, match="only uncompressed pcm"):
        read_sph(str(tmp_path / "s.sph"))
    _sph(tmp_path / "t.sph", np.zeros(100))
    raw = (tmp_path / "t.sph").read_bytes()
    (tmp_path / "t.sph").write_bytes(raw[:1100])
    with pytest.raises(ValueError, match="sample_count 100 but only 38 frames"):
        read_sph(str(tmp_path / "t.sph"))
    (tmp_path / "u.sph").write_bytes(b"RIFF" + bytes(100))
    with pytest.raises(ValueError, match="no 'NIST_1A' header"):
        read_sph(str(tmp_path / "u.sph"))
    (tmp_path / "v.sph").write_bytes(b"NIST_1A\n   9999\n" + bytes(100))
    with pytest.raises(ValueError, match="header size 9999"):
        read_sph(str(tmp_path / "v.sph"))


def test_tedlium(tmp_path):
    rng = np.random.default_rng(1)
    rate = 1000
    talks = {}
    root = tmp_path / "TEDLIUM_release1"
    for part, talk in (("train", "AlGore_2009"), ("test", "BillGates_2010")):
        samples = rng.integers(-32768, 32768, 3 * rate)
        _sph(root / part / "sph" / f"{talk}.sph", samples, rate=rate)
        talks[talk] = samples
        (root / part / "stm").mkdir(parents=True)
        (root / part / "stm" / f"{talk}.stm").write_text(
            f"{talk} 1 {talk} 0.5 1.25 <o,f0,male> first words here\n"
            f";; a comment line\n"
            f"{talk} 1 inter_segment_gap 2.0 2.5 <o,,unknown> ignore_time_segment_in_scoring\n")
    d = ds.TedliumDataset(str(root), "release1", usage="train", shuffle=False)  # the release folder, as MindSpore
    assert d.get_col_names() == ["waveform", "sample_rate", "transcript", "talk_id", "speaker_id", "identifier"]
    (w0, r0, t0, talk0, spk0, id0), (w1, _, t1, _, spk1, _) = _rows(d)
    np.testing.assert_array_equal(w0[0], talks["AlGore_2009"][500:1250] / 32768.0)
    np.testing.assert_array_equal(w1[0], talks["AlGore_2009"][2000:2500] / 32768.0)
    assert int(r0) == rate and r0.dtype == np.int32
    assert (str(t0), str(talk0), str(spk0), str(id0)) == ("first words here", "AlGore_2009", "AlGore_2009",
                                                          "<o,f0,male>")
    assert str(t1) == "ignore_time_segment_in_scoring" and str(spk1) == "inter_segment_gap"
    with pytest.raises(ValueError, match="TEDLIUM_release1/dev/stm does not exist"):
        ds.TedliumDataset(str(tmp_path), "release1")  # 'all' needs train, test and dev
    (root / "dev" / "stm").mkdir(parents=True)
    assert ds.TedliumDataset(str(tmp_path), "release1").get_dataset_size() == 4
    assert ds.TedliumDataset(str(tmp_path), "release1", num_shards=4, shard_id=3).get_dataset_size() == 1
    (root / "test" / "stm" / "BillGates_2010.stm").write_text("Nobody 1 x 0 1 <o> hi\n")
    with pytest.raises(ValueError, match="the audio file .*test/sph/Nobody.sph does not exist"):
        ds.TedliumDataset(str(tmp_path), "release1", usage="test")
    with pytest.raises(ValueError, match="Input usage is not within"):
        ds.TedliumDataset(str(tmp_path), "release3", usage="train")
    # release 3 and WAV audio
    r3 = tmp_path / "TEDLIUM_release-3" / "data"
    _wav(r3 / "sph" / "Talk.wav", talks["BillGates_2010"], rate=rate)
    (r3 / "stm").mkdir(parents=True)
    (r3 / "stm" / "Talk.stm").write_text("Talk 1 Spk 1.0 2.0 <o,f0,female> some text\n")
    (w,), = [r[:1] for r in _rows(ds.TedliumDataset(str(tmp_path), "release3", extensions=".wav"))]
    np.testing.assert_array_equal(w[0], talks["BillGates_2010"][1000:2000] / 32768.0)
