"""SQuADDataset with MindSpore's signature: the SQuAD 1.1 / 2.0 JSON files, read when the dataset is
built (a malformed file fails at once, naming it and the entry). Rows go through the engine's
sampling, shuffling and sharding like every source."""
import json
import os

import numpy as np

from mycel.dataset.engine import SourceDataset
from mycel.dataset.folder_sources import _choice
from mycel.dataset.image_sources import _source
from mycel.dataset.sources import _check_common, _check_dir, _shuffle_flag
from mycel.dataset.text_sources import _Rows

__all__ = ["SQuADDataset"]

_NO_ANSWER = 0xFFFFFFFF  # answer_start of an unanswerable SQuAD 2.0 question: -1 as uint32


def _squad_rows(path, owner):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{owner}: cannot read the JSON file '{path}' ({e})") from None

    def need(obj, key, kind, where):
        value = obj.get(key) if isinstance(obj, dict) else None
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"{owner}: '{path}': {where} lacks a {kind.__name__} '{key}'")
        return value

    rows = []
    for a, article in enumerate(need(doc, "data", list, "the document")):
        for p, para in enumerate(need(article, "paragraphs", list, f"data[{a}]")):
            where = f"data[{a}].paragraphs[{p}]"
            context = need(para, "context", str, where)
            for q, qa in enumerate(need(para, "qas", list, where)):
                question = need(qa, "question", str, f"{where}.qas[{q}]")
                texts, starts = [], []
                for n, ans in enumerate(need(qa, "answers", list, f"{where}.qas[{q}]")):
                    texts.append(need(ans, "text", str, f"{where}.qas[{q}].answers[{n}]"))
                    start = need(ans, "answer_start", int, f"{where}.qas[{q}].answers[{n}]")
                    if not 0 <= start < _NO_ANSWER:
                        raise ValueError(f"{owner}: '{path}': {where}.qas[{q}].answers[{n}] has answer_start "
                                         f"{start}, outside [0, 2^32 - 1)")
                    starts.append(start)
                if not texts:
                    texts, starts = [""], [_NO_ANSWER]
                rows.append((np.array(context), np.array(question), np.array(texts),
                             np.array(starts, np.uint32)))
    return rows


class SQuADDataset(SourceDataset):
    """SQuAD: dataset_dir/train-v1.1.json and dev-v1.1.json, or train-v2.0.json and dev-v2.0.json
    (whichever versions are present, 1.1 first). usage 'train', 'dev' or 'all' (None: train then
    dev). One row per question: context, question (str), text (1-d str: the answers) and
    answer_start (1-d uint32: each answer's character offset in the context). An unanswerable
    2.0 question has text [''] and answer_start [4294967295] (-1 as uint32). shuffle: bool or
    Shuffle (default Shuffle.GLOBAL); every mode shuffles rows globally."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None, shuffle=True,
                 num_shards=None, shard_id=None, cache=None):
        owner = "SQuADDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _choice(usage, "usage", ("train", "dev", "all"), "all")
        shuffle = _shuffle_flag(shuffle)
        _check_common(num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id)
        rows = []
        for part in (("train", "dev") if self.usage == "all" else (self.usage,)):
            files = [os.path.join(self.dataset_dir, f"{part}-v{v}.json") for v in ("1.1", "2.0")]
            present = [f for f in files if os.path.isfile(f)]
            if not present:
                raise ValueError(f"{owner}: neither {files[0]} nor {files[1]} exists (usage '{self.usage}')")
            for f in present:
                rows += _squad_rows(f, owner)
        SourceDataset.__init__(self, **_source(owner, _Rows(rows), ["context", "question", "text", "answer_start"],
                                               num_samples, num_parallel_workers, shuffle, None, num_shards,
                                               shard_id))
