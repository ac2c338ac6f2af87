"""Text sources with MindSpore's signatures: IMDBDataset (the aclImdb folder tree) and
CLUEDataset (CLUE's JSON-lines files). Files are read in Python when the dataset is built; rows
go through the engine's sampling, shuffling and sharding like every source."""
import json
import os

import numpy as np

from mycel.dataset.engine import SourceDataset, _E
from mycel.dataset.sources import (_check_common, _check_dir, _check_type, _engine_args, _find_files,
                                   _shuffle_flag)

__all__ = ["IMDBDataset", "CLUEDataset"]


class _Rows:
    """Random access to a list of row tuples."""

    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


def _read_text(path, owner):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError as e:
        raise ValueError(f"{owner}: '{path}' is not UTF-8 text ({e})") from None


class IMDBDataset(SourceDataset):
    """The IMDB reviews of an aclImdb folder: dataset_dir/{train,test}/{pos,neg}/*.txt. Columns
    text (str) and label (uint32: 1 for pos, 0 for neg); usage 'train', 'test' or 'all'
    (default), read in the order train then test, pos then neg, files sorted by name."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None, cache=None):
        self.dataset_dir = _check_dir(dataset_dir)
        if usage is None:
            usage = "all"
        _check_type(usage, "usage", str)
        if usage not in ("train", "test", "all"):
            raise ValueError("Input usage is not within the valid set of ['train', 'test', 'all'].")
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        rows = []
        for part in (("train", "test") if usage == "all" else (usage,)):
            for name, label in (("pos", 1), ("neg", 0)):
                folder = os.path.join(self.dataset_dir, part, name)
                if not os.path.isdir(folder):
                    continue
                for f in sorted(os.listdir(folder)):
                    if f.endswith(".txt"):
                        text = _read_text(os.path.join(folder, f), "IMDBDataset")
                        rows.append((np.array(text), np.array(label, np.uint32)))
        if not rows:
            raise ValueError(f"IMDBDataset: no reviews under {self.dataset_dir} for usage '{usage}' "
                             "(expected <usage>/pos/*.txt and <usage>/neg/*.txt)")
        super().__init__(_E.py_source(_Rows(rows), ["text", "label"]), None,
                         **_engine_args(num_samples, num_parallel_workers, shuffle, sampler,
                                        num_shards, shard_id))


# CLUE's columns per task and usage: (name, json key, kind) with kind 's' a string and 'i' an
# integer (int64; MindSpore documents uint8, which would not hold ids past 255).
_S, _I = "s", "i"
_CLUE = {
    "AFQMC": {"train": [("sentence1", _S), ("sentence2", _S), ("label", _S)],
              "test": [("id", _I), ("sentence1", _S), ("sentence2", _S)],
              "eval": [("sentence1", _S), ("sentence2", _S), ("label", _S)]},
    "TNEWS": {u: [("label", _S), ("label_des", _S), ("sentence", _S), ("keywords", _S)]
              for u in ("train", "test", "eval")},
    "IFLYTEK": {"train": [("label", _S), ("label_des", _S), ("sentence", _S)],
                "test": [("id", _S), ("sentence", _S)],
                "eval": [("label", _S), ("label_des", _S), ("sentence", _S)]},
    "CMNLI": {"train": [("sentence1", _S), ("sentence2", _S), ("label", _S)],
              "test": [("id", _I), ("sentence1", _S), ("sentence2", _S)],
              "eval": [("sentence1", _S), ("sentence2", _S), ("label", _S)]},
    "WSC": {u: [("span1_index", _I), ("span2_index", _I), ("span1_text", _S), ("span2_text", _S),
                ("idx", _I), ("text", _S)] + ([("label", _S)] if u != "test" else [])
            for u in ("train", "test", "eval")},
    "CSL": {u: [("id", _I), ("abst", _S), ("keyword", _S)] + ([("label", _S)] if u != "test" else [])
            for u in ("train", "test", "eval")},
}
_WSC_TARGET = {"span1_index", "span2_index", "span1_text", "span2_text"}


def _clue_value(obj, key, kind, where):
    v = obj.get(key)
    if kind == _I:
        if v is None or v == "":
            return np.array(0, np.int64)
        try:
            return np.array(int(v), np.int64)
        except (TypeError, ValueError):
            raise ValueError(f"CLUEDataset: {where}: '{key}' must be an integer, got {v!r}") from None
    if v is None:
        return np.array("")
    if isinstance(v, list):  # CSL's keyword list
        v = " ".join(str(x) for x in v)
    return np.array(str(v))


class CLUEDataset(SourceDataset):
    """CLUE benchmark files (one JSON object per line). task: AFQMC, TNEWS, IFLYTEK, CMNLI, WSC
    or CSL; usage: train, test or eval; the columns are MindSpore's for that pair (strings, and
    int64 ids and indices). A key a line lacks gives '' (0 for an integer)."""

    def __init__(self, dataset_files, task="AFQMC", usage="train", num_samples=None,
                 num_parallel_workers=None, shuffle=True, num_shards=None, shard_id=None, cache=None):
        self.dataset_files = _find_files(dataset_files)
        _check_type(task, "task", str)
        task = "TNEWS" if task == "Tnews" else task
        if task not in _CLUE:
            raise ValueError(f"task is not in ['AFQMC', 'TNEWS', 'IFLYTEK', 'CMNLI', 'WSC', 'CSL'], got {task!r}")
        _check_type(usage, "usage", str)
        if usage not in ("train", "test", "eval"):
            raise ValueError("Input usage is not within the valid set of ['train', 'test', 'eval'].")
        shuffle = _shuffle_flag(shuffle)
        _check_common(num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id)
        cols = _CLUE[task][usage]
        rows = []
        for path in self.dataset_files:
            for lineno, line in enumerate(_read_text(path, "CLUEDataset").splitlines(), 1):
                if not line.strip():
                    continue
                where = f"{path}:{lineno}"
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"CLUEDataset: {where}: not a JSON object ({e.msg})") from None
                if not isinstance(obj, dict):
                    raise ValueError(f"CLUEDataset: {where}: not a JSON object")
                if task == "WSC" and isinstance(obj.get("target"), dict):
                    obj = dict(obj, **{k: v for k, v in obj["target"].items() if k in _WSC_TARGET})
                rows.append(tuple(_clue_value(obj, name, kind, where) for name, kind in cols))
        super().__init__(_E.py_source(_Rows(rows), [name for name, _ in cols]), None,
                         **_engine_args(num_samples, num_parallel_workers, shuffle, None, num_shards,
                                        shard_id))
