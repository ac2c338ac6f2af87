"""IMDBDataset, CLUEDataset, YesNoDataset and LJSpeechDataset as a MindSpore user calls them
(imports renamed), on small files written here: rows against what was written (WAV files
written by scipy.io.wavfile, an independent writer)."""
import json
import os

import numpy as np
import pytest

import mycel.dataset as ds


def _rows(d):
    return list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))


def test_imdb(tmp_path):
    reviews = {("train", "pos"): ["great film", "loved it"], ("train", "neg"): ["dull"],
               ("test", "pos"): ["fine 中文"], ("test", "neg"): ["bad", "worse", "worst"]}
    for (part, lab), texts in reviews.items():
        (tmp_path / part / lab).mkdir(parents=True)
        for i, t in enumerate(texts):
            (tmp_path / part / lab / f"{i}_{7 - i}.txt").write_text(t, encoding="utf-8")
    (tmp_path / "train" / "unsup").mkdir()  # ignored, as MindSpore ignores it
    (tmp_path / "train" / "unsup" / "0_0.txt").write_text("x")
    for usage in ("train", "test", "all", None):
        parts = ("train", "test") if usage in ("all", None) else (usage,)
        expect = [(t, 1 if lab == "pos" else 0) for p in parts for lab in ("pos", "neg")
                  for t in reviews[(p, lab)]]
        got = _rows(ds.IMDBDataset(str(tmp_path), usage=usage, shuffle=False))
        assert [(str(r[0]), int(r[1])) for r in got] == expect
        assert got[0][1].dtype == np.uint32
    assert len(_rows(ds.IMDBDataset(str(tmp_path), num_shards=2, shard_id=1, shuffle=False))) == 4
    with pytest.raises(ValueError, match="valid set"):
        ds.IMDBDataset(str(tmp_path), usage="eval")


def test_clue(tmp_path):
    afqmc = [{"sentence1": "双十一花呗提额在哪", "sentence2": "哪里可以提花呗额度", "label": "0"},
             {"sentence1": "a", "sentence2": "b", "label": "1"}]
    (tmp_path / "train.json").write_text("\n".join(json.dumps(o, ensure_ascii=False) for o in afqmc) + "\n\n",
                                         encoding="utf-8")
    d = ds.CLUEDataset(str(tmp_path / "train.json"), task="AFQMC", usage="train", shuffle=False)
    assert d.get_col_names() == ["sentence1", "sentence2", "label"]
    assert [[str(v) for v in r] for r in _rows(d)] == [[o["sentence1"], o["sentence2"], o["label"]] for o in afqmc]
    test = [{"id": 300, "sentence1": "x", "sentence2": "y"}]
    (tmp_path / "test.json").write_text(json.dumps(test[0]), encoding="utf-8")
    (row,) = _rows(ds.CLUEDataset(str(tmp_path / "test.json"), "AFQMC", "test", shuffle=False))
    assert row[0].dtype == np.int64 and int(row[0]) == 300 and str(row[1]) == "x"
    wsc = {"target": {"span2_index": 37, "span1_index": 5, "span1_text": "床", "span2_text": "它"},
           "idx": 0, "label": "false", "text": "我把床铺好了它很软"}
    (tmp_path / "wsc.json").write_text(json.dumps(wsc, ensure_ascii=False), encoding="utf-8")
    d = ds.CLUEDataset(str(tmp_path / "wsc.json"), "WSC", "eval", shuffle=False)
    (row,) = _rows(d)
    assert d.get_col_names() == ["span1_index", "span2_index", "span1_text", "span2_text", "idx", "text", "label"]
    assert [int(row[0]), int(row[1]), str(row[2]), str(row[3]), int(row[4]), str(row[5]), str(row[6])] == \
        [5, 37, "床", "它", 0, wsc["text"], "false"]
    csl = {"id": 1, "abst": "摘要", "keyword": ["水声", "模型"], "label": "1"}
    (tmp_path / "csl.json").write_text(json.dumps(csl, ensure_ascii=False), encoding="utf-8")
    (row,) = _rows(ds.CLUEDataset(str(tmp_path / "csl.json"), "CSL", "train", shuffle=False))
    assert [int(row[0]), str(row[1]), str(row[2]), str(row[3])] == [1, "摘要", "水声 模型", "1"]
    (tmp_path / "bad.json").write_text('{"sentence1": "a"}\n{not json}\n')
    with pytest.raises(ValueError, match=r"bad.json:2: not a JSON object"):
        ds.CLUEDataset(str(tmp_path / "bad.json"))
    with pytest.raises(ValueError, match="task is not in"):
        ds.CLUEDataset(str(tmp_path / "train.json"), task="SST2")


def test_yesno_and_ljspeech(tmp_path):
    wavfile = pytest.importorskip("scipy.io.wavfile")
    rng = np.random.default_rng(0)
    labels = ["0_1_1_0_0_1_0_1", "1_1_1_0_0_0_0_1"]
    data = [rng.integers(-32768, 32767, 800, dtype=np.int16), rng.integers(-32768, 32767, 500, dtype=np.int16)]
    for name, x in zip(labels, data):
        wavfile.write(tmp_path / f"{name}.wav", 8000, x)
    got = _rows(ds.YesNoDataset(str(tmp_path), shuffle=False))
    for (wav, rate, label), name, x in zip(got, labels, data):
        assert wav.dtype == np.float32 and wav.shape == (1, len(x))
        np.testing.assert_array_equal(wav[0], x / 32768.0)
        assert int(rate) == 8000 and label.tolist() == [int(t) for t in name.split("_")]
    lj = tmp_path / "LJSpeech-1.1"
    (lj / "wavs").mkdir(parents=True)
    stereo = rng.integers(-2**31, 2**31 - 1, (300, 2), dtype=np.int32)
    wavfile.write(lj / "wavs" / "LJ001-0001.wav", 22050, stereo)
    u8 = rng.integers(0, 255, 100, dtype=np.uint8)
    wavfile.write(lj / "wavs" / "LJ001-0002.wav", 16000, u8)
    (lj / "metadata.csv").write_text('LJ001-0001|Printing, "in the only sense"|Printing, in the only sense\n'
                                     "LJ001-0002|Dr. Smith|Doctor Smith\n", encoding="utf-8")
    rows = _rows(ds.LJSpeechDataset(str(lj), shuffle=False))
    np.testing.assert_allclose(rows[0][0], stereo.T / 2.0 ** 31, rtol=1e-7)
    assert int(rows[0][1]) == 22050 and str(rows[0][2]) == 'Printing, "in the only sense"'
    np.testing.assert_array_equal(rows[1][0][0], (u8.astype(np.float32) - 128) / 128)
    assert str(rows[1][3]) == "Doctor Smith"
    (lj / "wavs" / "LJ001-0002.wav").write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunk")
    with pytest.raises(ValueError, match="LJ001-0002.wav' is not a PCM WAV file"):
        ds.LJSpeechDataset(str(lj))
    (tmp_path / "yes.wav").write_bytes(b"")
    with pytest.raises(ValueError, match="not named like|not a PCM WAV"):
        ds.YesNoDataset(str(tmp_path))


def test_24_bit_wav(tmp_path):
    import wave
    v = np.array([0, 1, -1, 2**23 - 1, -2**23, 12345, -54321], np.int64)
    raw = b"".join(int(x & 0xFFFFFF).to_bytes(3, "little") for x in v)
    with wave.open(str(tmp_path / "0_1.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(3)
        w.setframerate(44100)
        w.writeframes(raw)
    (wav, rate, label), = _rows(ds.YesNoDataset(str(tmp_path)))
    np.testing.assert_array_equal(wav[0], (v / 2.0 ** 23).astype(np.float32))
    assert int(rate) == 44100 and label.tolist() == [0, 1]
