"""Audio sources with MindSpore's signatures: YesNoDataset and LJSpeechDataset, over PCM WAV
files (read with the standard library's wave module, which checks the RIFF structure; samples
are scaled to [-1, 1) float32 as MindSpore's)."""
import csv
import os
import struct
import wave

import numpy as np

from mycel.dataset.engine import SourceDataset, _E
from mycel.dataset.sources import _check_common, _check_dir, _engine_args
from mycel.dataset.text_sources import _Rows

__all__ = ["YesNoDataset", "LJSpeechDataset"]


def read_wav(path, owner="read_wav"):
    """(waveform (channels, samples) float32 in [-1, 1), sample_rate) of a PCM WAV file (8-bit
    unsigned, 16-, 24- or 32-bit signed); ValueError naming the file when it is not one."""
    try:
        with wave.open(os.fspath(path), "rb") as w:
            channels, width, rate, n = w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()
            raw = w.readframes(n)
    except (wave.Error, EOFError, RuntimeError, struct.error) as e:
        # the wave module reports a chunk size past the end of the file as a bare RuntimeError
        # (its seek) or struct.error (a short header), found by tests/fuzz's wav target
        raise ValueError(f"{owner}: '{path}' is not a PCM WAV file ({type(e).__name__}: {e})") from None
    if width not in (1, 2, 3, 4) or channels < 1:
        raise ValueError(f"{owner}: '{path}' has {width}-byte samples; 1 to 4 bytes are supported")
    frames = len(raw) // (width * channels)  # a truncated data chunk yields the whole frames
    raw = raw[:frames * width * channels]
    if width == 1:
        x = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        x = (np.where(v >= 1 << 23, v - (1 << 24), v) / float(1 << 23)).astype(np.float32)
    else:
        dt = np.dtype("<i2") if width == 2 else np.dtype("<i4")
        x = (np.frombuffer(raw, dt) / float(1 << (8 * width - 1))).astype(np.float32)
    return x.reshape(frames, channels).T.copy(), rate


class YesNoDataset(SourceDataset):
    """The YesNo recordings: every *.wav in dataset_dir, named like 0_1_0_0_1_0_1_1.wav. Columns
    waveform (channels, samples) float32, sample_rate uint32 and label (int32, one 0/1 per
    word of the name), files sorted by name."""

    def __init__(self, dataset_dir, num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, num_shards=None, shard_id=None, cache=None):
        self.dataset_dir = _check_dir(dataset_dir)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        files = sorted(f for f in os.listdir(self.dataset_dir) if f.endswith(".wav"))
        if not files:
            raise ValueError(f"YesNoDataset: no .wav files in {self.dataset_dir}")
        rows = []
        for f in files:
            try:
                label = np.array([int(t) for t in f[:-4].split("_")], np.int32)
            except ValueError:
                raise ValueError(f"YesNoDataset: '{f}' is not named like 0_1_0_0_1_0_1_1.wav") from None
            wav, rate = read_wav(os.path.join(self.dataset_dir, f), "YesNoDataset")
            rows.append((wav, np.array(rate, np.uint32), label))
        super().__init__(_E.py_source(_Rows(rows), ["waveform", "sample_rate", "label"]), None,
                         **_engine_args(num_samples, num_parallel_workers, shuffle, sampler,
                                        num_shards, shard_id))


class LJSpeechDataset(SourceDataset):
    """LJSpeech: dataset_dir/metadata.csv ("id|transcription|normalized transcription" lines)
    and dataset_dir/wavs/<id>.wav. Columns waveform (channels, samples) float32, sample_rate
    uint32, transcription and normalized_transcription (str), in metadata order."""

    def __init__(self, dataset_dir, num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, num_shards=None, shard_id=None, cache=None):
        self.dataset_dir = _check_dir(dataset_dir)
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        meta = os.path.join(self.dataset_dir, "metadata.csv")
        if not os.path.isfile(meta):
            raise ValueError(f"LJSpeechDataset: {meta} is missing")
        rows = []
        with open(meta, encoding="utf-8", newline="") as f:
            for lineno, rec in enumerate(csv.reader(f, delimiter="|", quoting=csv.QUOTE_NONE), 1):
                if not rec:
                    continue
                if len(rec) != 3:
                    raise ValueError(f"LJSpeechDataset: {meta}:{lineno}: expected 'id|transcription|"
                                     f"normalized transcription', got {len(rec)} fields")
                wav, rate = read_wav(os.path.join(self.dataset_dir, "wavs", rec[0] + ".wav"),
                                     "LJSpeechDataset")
                rows.append((wav, np.array(rate, np.uint32), np.array(rec[1]), np.array(rec[2])))
        super().__init__(_E.py_source(_Rows(rows), ["waveform", "sample_rate", "transcription",
                                                    "normalized_transcription"]), None,
                         **_engine_args(num_samples, num_parallel_workers, shuffle, sampler,
                                        num_shards, shard_id))
