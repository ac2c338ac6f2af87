"""SpeechCommandsDataset as a MindSpore user calls it (imports renamed), on a small tree in the
real layout, WAV files written by scipy.io.wavfile (an independent writer)."""
import numpy as np
import pytest

import mycel.dataset as ds


def _rows(d):
    return list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))


def test_speech_commands(tmp_path):
    wavfile = pytest.importorskip("scipy.io.wavfile")
    rng = np.random.default_rng(0)
    files = {"yes/0a7c2a8d_nohash_0.wav": 300, "yes/0a7c2a8d_nohash_1.wav": 200, "yes/c1d39ce8_nohash_3.wav": 100,
             "no/0a7c2a8d_nohash_0.wav": 250, "no/ffd2ba2f_nohash_12.wav": 150}
    data = {}
    for rel, n in files.items():
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        data[rel] = rng.integers(-32768, 32767, n, dtype=np.int16)
        wavfile.write(tmp_path / rel, 16000, data[rel])
    (tmp_path / "_background_noise_").mkdir()
    wavfile.write(tmp_path / "_background_noise_" / "white_noise.wav", 16000, data["no/0a7c2a8d_nohash_0.wav"])
    (tmp_path / "validation_list.txt").write_text("yes/c1d39ce8_nohash_3.wav\n")
    (tmp_path / "testing_list.txt").write_text("no/ffd2ba2f_nohash_12.wav\nyes/0a7c2a8d_nohash_1.wav\n")
    splits = {"all": sorted(files), "valid": ["yes/c1d39ce8_nohash_3.wav"],
              "test": ["no/ffd2ba2f_nohash_12.wav", "yes/0a7c2a8d_nohash_1.wav"],
              "train": ["no/0a7c2a8d_nohash_0.wav", "yes/0a7c2a8d_nohash_0.wav"]}
    for usage, expect in splits.items():
        d = ds.SpeechCommandsDataset(str(tmp_path), usage=usage, shuffle=False)
        assert d.get_col_names() == ["waveform", "sample_rate", "label", "speaker_id", "utterance_number"]
        got = _rows(d)
        assert len(got) == len(expect)
        for (wav, rate, label, speaker, utt), rel in zip(got, expect):
            word, name = rel.split("/")
            np.testing.assert_array_equal(wav, data[rel] / 32768.0)
            assert wav.dtype == np.float32 and wav.ndim == 1
            assert rate.dtype == np.int32 and int(rate) == 16000
            assert str(label) == word and str(speaker) == name.split("_")[0]
            assert utt.dtype == np.int32 and int(utt) == int(name[:-4].split("_")[-1])
    assert len(_rows(ds.SpeechCommandsDataset(str(tmp_path), num_shards=2, shard_id=0))) == 3
    with pytest.raises(ValueError, match="valid set"):
        ds.SpeechCommandsDataset(str(tmp_path), usage="validation")
    (tmp_path / "no" / "ffd2ba2f_nohash_12.wav").write_bytes(b"RIFFxxxx")
    with pytest.raises(Exception, match="ffd2ba2f_nohash_12.wav' is not a PCM WAV file"):
        _rows(ds.SpeechCommandsDataset(str(tmp_path), usage="test", shuffle=False))
