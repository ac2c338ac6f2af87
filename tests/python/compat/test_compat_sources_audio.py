"""LibriTTS, GTZAN and CMU ARCTIC datasets as a MindSpore user calls them, on small trees in each
corpus's layout with 16-bit WAV files written here: waveforms against the written samples / 2^15,
transcripts and ids against what was written."""
import wave

import numpy as np
import pytest

import mycel.dataset as ds


def _write_wav(path, samples, rate):
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.asarray(samples, "<i2").tobytes())
    return np.asarray(samples, np.float64)[None, :] / 32768.0


def _rows(d):
    return list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))


def _pcm(seed, n=40):
    return np.random.default_rng(seed).integers(-32768, 32768, n)


def test_libritts(tmp_path):
    utts = {("dev-clean", 84, 121123): [("84_121123_000007_000001", "He said: \"Yes.\"", "He said: \"Yes.\"")],
            ("train-clean-100", 19, 198): [("19_198_000000_000000", "Chapter 1.", "Chapter one."),
                                            ("19_198_000000_000002", "Mr. Smith", "Mister Smith")]}
    waves = {}
    for k, ((usage, spk, chap), lines) in enumerate(utts.items()):
        folder = tmp_path / usage / str(spk) / str(chap)
        folder.mkdir(parents=True)
        (folder / f"{spk}_{chap}.trans.tsv").write_text("".join("\t".join(x) + "\n" for x in lines))
        for j, (uid, _, _) in enumerate(lines):
            waves[uid] = _write_wav(folder / f"{uid}.wav", _pcm(10 * k + j), 24000)
    d = ds.LibriTTSDataset(str(tmp_path), usage="train-clean-100", shuffle=False)
    assert d.get_col_names() == ["waveform", "sample_rate", "original_text", "normalized_text", "speaker_id",
                                 "chapter_id", "utterance_id"]
    got = _rows(d)
    assert len(got) == 2
    for row, (uid, orig, norm) in zip(got, utts[("train-clean-100", 19, 198)]):
        np.testing.assert_allclose(row[0], waves[uid], rtol=0, atol=1e-7)
        assert row[0].dtype == np.float32 and row[0].shape == (1, 40)
        assert int(row[1]) == 24000 and row[1].dtype == np.uint32
        assert (str(row[2]), str(row[3])) == (orig, norm)
        assert (int(row[4]), int(row[5]), str(row[6])) == (19, 198, uid)
    every = _rows(ds.LibriTTSDataset(str(tmp_path), shuffle=False))  # dev-clean comes first
    assert [str(r[6]) for r in every] == ["84_121123_000007_000001", "19_198_000000_000000", "19_198_000000_000002"]
    with pytest.raises(ValueError, match="test-clean does not exist"):
        ds.LibriTTSDataset(str(tmp_path), usage="test-clean")
    bad = tmp_path / "dev-other/1/2"
    bad.mkdir(parents=True)
    (bad / "1_2.trans.tsv").write_text("1_2_3\tno\tids\n")
    with pytest.raises(ValueError, match=r"1_2.trans.tsv':1: expected"):
        ds.LibriTTSDataset(str(tmp_path), usage="dev-other")


def test_libritts_checks_sample_rate(tmp_path):
    folder = tmp_path / "dev-clean/1/2"
    folder.mkdir(parents=True)
    (folder / "1_2.trans.tsv").write_text("1_2_000000_000000\ta\ta\n")
    _write_wav(folder / "1_2_000000_000000.wav", _pcm(0), 16000)
    with pytest.raises(ValueError, match="has sample rate 16000 Hz; the corpus's files are 24000 Hz"):
        _rows(ds.LibriTTSDataset(str(tmp_path), usage="dev-clean"))


def test_gtzan_split(tmp_path):
    # blues.00000 is in the validation part, blues.00012 in test, blues.00029 in train, and
    # jazz.00033 in none of them (it is one of the tracks the filtered split drops)
    tracks = {"blues.00000": 0, "blues.00012": 1, "blues.00029": 2, "jazz.00033": 3, "rock.00099": 4}
    waves = {}
    for name, seed in tracks.items():
        genre = name.split(".")[0]
        waves[name] = _write_wav(tmp_path / genre / f"{name}.wav", _pcm(seed), 22050)
    parts = {"valid": ["blues.00000"], "test": ["blues.00012"], "train": ["blues.00029", "rock.00099"]}
    for usage, names in parts.items():
        got = _rows(ds.GTZANDataset(str(tmp_path), usage=usage, shuffle=False))
        assert [str(r[2]) for r in got] == [n.split(".")[0] for n in names]
        for row, n in zip(got, names):
            np.testing.assert_allclose(row[0], waves[n], rtol=0, atol=1e-7)
            assert int(row[1]) == 22050
    every = _rows(ds.GTZANDataset(str(tmp_path), shuffle=False))
    assert [str(r[2]) for r in every] == ["blues", "blues", "blues", "jazz", "rock"]
    assert ds.GTZANDataset(str(tmp_path), num_shards=2, shard_id=1).get_dataset_size() == 3  # ceil(5 / 2)
    with pytest.raises(ValueError, match="Input usage is not within"):
        ds.GTZANDataset(str(tmp_path), usage="dev")


def test_cmu_arctic(tmp_path):
    root = tmp_path / "cmu_us_slt_arctic"
    (root / "etc").mkdir(parents=True)
    lines = [("arctic_a0001", "Author of the danger trail, Philip Steels, etc."),
             ("arctic_b0539", "It was \"no\" to him.")]
    (root / "etc/txt.done.data").write_text("".join(f'( {u} "{t}" )\n' for u, t in lines))
    waves = {u: _write_wav(root / "wav" / f"{u}.wav", _pcm(k), 16000) for k, (u, _) in enumerate(lines)}
    d = ds.CMUArcticDataset(str(tmp_path), name="slt", shuffle=False)
    assert d.get_col_names() == ["waveform", "sample_rate", "transcript", "utterance_id"]
    for row, (u, t) in zip(_rows(d), lines):
        np.testing.assert_allclose(row[0], waves[u], rtol=0, atol=1e-7)
        assert (int(row[1]), str(row[2]), str(row[3])) == (16000, t, u)
    with pytest.raises(ValueError, match="cmu_us_aew_arctic/etc/txt.done.data does not exist"):
        ds.CMUArcticDataset(str(tmp_path))
    with pytest.raises(ValueError, match="Input name is not within"):
        ds.CMUArcticDataset(str(tmp_path), name="xyz")
    (root / "etc/txt.done.data").write_text("arctic_a0001 no quotes\n")
    with pytest.raises(ValueError, match=r"txt.done.data':1: expected"):
        ds.CMUArcticDataset(str(tmp_path), name="slt")
