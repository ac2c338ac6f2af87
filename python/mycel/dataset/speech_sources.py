"""SpeechCommandsDataset with MindSpore's signature: Google's Speech Commands folder tree, one
folder per word of <speaker>_nohash_<n>.wav files, split by validation_list.txt and
testing_list.txt (training: every file in neither). The tree is listed when the dataset is built;
each WAV file is read when its row is drawn."""
import os
import re

import numpy as np

from mycel.dataset.audio_sources import read_wav
from mycel.dataset.detection_sources import _LazyRows
from mycel.dataset.engine import SourceDataset, _E
from mycel.dataset.sources import _check_common, _check_dir, _check_usage, _engine_args

__all__ = ["SpeechCommandsDataset"]

_NAME = re.compile(r"^([0-9A-Za-z]+)_nohash_([0-9]+)\.wav$")


class SpeechCommandsDataset(SourceDataset):
    """Columns waveform (samples,) float32 in [-1, 1) (mono, as the set is), sample_rate ()
    int32, label (the folder's word) and speaker_id (str), utterance_number () int32; usage
    'train', 'valid', 'test' or 'all' (None), files in path order; '_background_noise_' is
    skipped."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "SpeechCommandsDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        usage = _check_usage(usage, ("train", "valid", "test", "all"))
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        self.usage = usage
        lists = {name: self._list(name, owner) for name in ("validation_list.txt", "testing_list.txt")}
        records = []
        for label in sorted(os.listdir(self.dataset_dir)):
            folder = os.path.join(self.dataset_dir, label)
            if label.startswith("_") or not os.path.isdir(folder):
                continue
            for f in sorted(os.listdir(folder)):
                m = _NAME.match(f)
                if not m:
                    continue
                rel = f"{label}/{f}"
                part = "valid" if rel in lists["validation_list.txt"] else \
                    "test" if rel in lists["testing_list.txt"] else "train"
                if usage in ("all", part):
                    records.append((os.path.join(folder, f), label, m.group(1), int(m.group(2))))
        if not records:
            raise ValueError(f"{owner}: no <word>/<speaker>_nohash_<n>.wav files for usage '{usage}' "
                             f"under {self.dataset_dir}")

        def row(rec):
            wav, rate = read_wav(rec[0], owner)
            return (wav[0] if wav.shape[0] == 1 else wav, np.array(rate, np.int32), np.array(rec[1]),
                    np.array(rec[2]), np.array(rec[3], np.int32))

        super().__init__(_E.py_source(_LazyRows(owner, records, row),
                                      ["waveform", "sample_rate", "label", "speaker_id", "utterance_number"]),
                         None, **_engine_args(num_samples, num_parallel_workers, shuffle, sampler,
                                              num_shards, shard_id))

    def _list(self, name, owner):
        """The relative paths a split list names (an absent list names none)."""
        path = os.path.join(self.dataset_dir, name)
        if not os.path.isfile(path):
            return set()
        try:
            with open(path, encoding="utf-8") as f:
                return {line.strip().replace("\\", "/") for line in f if line.strip()}
        except UnicodeDecodeError as e:
            raise ValueError(f"{owner}: '{path}' is not UTF-8 text ({e})") from None
