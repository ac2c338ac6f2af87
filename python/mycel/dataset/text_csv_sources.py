"""Text-classification sources kept as CSV/TSV files, with MindSpore's signatures: AGNews,
AmazonReview, DBpedia, SogouNews, YahooAnswers, YelpReview (train.csv / test.csv, quoted CSV
without a header) and SST2 (train.tsv / dev.tsv / test.tsv with a header). Every column is a
string, as MindSpore's; the files are read with the csv module when the dataset is built."""
import csv
import os

import numpy as np

from mycel.dataset.engine import SourceDataset, _E
from mycel.dataset.sources import _check_common, _check_dir, _check_type, _engine_args, _shuffle_flag
from mycel.dataset.text_sources import _Rows
from mycel.dataset.tfrecord import Shuffle

__all__ = ["AGNewsDataset", "AmazonReviewDataset", "DBpediaDataset", "SogouNewsDataset",
           "YahooAnswersDataset", "YelpReviewDataset", "SST2Dataset"]

csv.field_size_limit(1 << 24)  # reviews and articles can exceed the module's 128 KiB default


def _read_csv(path, owner, ncols, delimiter=",", header=False, quoting=csv.QUOTE_MINIMAL):
    if not os.path.isfile(path):
        raise ValueError(f"{owner}: {path} does not exist")
    rows = []
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.reader(f, delimiter=delimiter, quoting=quoting)
            for rec in reader:
                if header:
                    header = False
                    continue
                if not rec:
                    continue
                if len(rec) != ncols:
                    raise ValueError(f"{owner}: '{path}':{reader.line_num}: expected {ncols} fields, "
                                     f"got {len(rec)}")
                rows.append(tuple(np.array(v) for v in rec))
    except UnicodeDecodeError as e:
        raise ValueError(f"{owner}: '{path}' is not UTF-8 text ({e})") from None
    except csv.Error as e:
        raise ValueError(f"{owner}: '{path}': {e}") from None
    return rows


class _CsvTextDataset(SourceDataset):
    """dataset_dir/{train,test}.csv with the subclass's columns; usage 'train', 'test' or
    'all' (None: all, train rows then test rows)."""
    _columns_ = ()

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=Shuffle.GLOBAL, num_shards=None, shard_id=None, cache=None):
        owner = type(self).__name__
        self.dataset_dir = _check_dir(dataset_dir)
        usage = "all" if usage is None else usage
        _check_type(usage, "usage", str)
        if usage not in ("train", "test", "all"):
            raise ValueError("Input usage is not within the valid set of ['train', 'test', 'all'].")
        shuffle = _shuffle_flag(shuffle)
        _check_common(num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id)
        self.usage = usage
        rows = []
        for part in (("train", "test") if usage == "all" else (usage,)):
            rows += _read_csv(os.path.join(self.dataset_dir, part + ".csv"), owner, len(self._columns_))
        super().__init__(_E.py_source(_Rows(rows), list(self._columns_)), None,
                         **_engine_args(num_samples, num_parallel_workers, shuffle, None, num_shards,
                                        shard_id))


class AGNewsDataset(_CsvTextDataset):
    """AG's News: columns index (the class, 1-4), title and description."""
    _columns_ = ("index", "title", "description")


class AmazonReviewDataset(_CsvTextDataset):
    """Amazon reviews (polarity or full): columns label, title and content."""
    _columns_ = ("label", "title", "content")


class DBpediaDataset(_CsvTextDataset):
    """DBpedia ontology classes: columns class, title and content."""
    _columns_ = ("class", "title", "content")


class SogouNewsDataset(_CsvTextDataset):
    """Sogou News: columns index, title and content."""
    _columns_ = ("index", "title", "content")


class YahooAnswersDataset(_CsvTextDataset):
    """Yahoo! Answers: columns class, title, content and answer."""
    _columns_ = ("class", "title", "content", "answer")


class YelpReviewDataset(_CsvTextDataset):
    """Yelp reviews (polarity or full): columns label and text."""
    _columns_ = ("label", "text")


class SST2Dataset(SourceDataset):
    """Stanford Sentiment Treebank v2 (GLUE's SST-2): dataset_dir/{train,dev,test}.tsv, each with
    a header line. usage 'train' (the default), 'dev' -- columns sentence and label -- or
    'test' -- column sentence (the file's index column is dropped)."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=Shuffle.GLOBAL, num_shards=None, shard_id=None, cache=None):
        owner = "SST2Dataset"
        self.dataset_dir = _check_dir(dataset_dir)
        usage = "train" if usage is None else usage
        _check_type(usage, "usage", str)
        if usage not in ("train", "test", "dev"):
            raise ValueError("Input usage is not within the valid set of ['train', 'test', 'dev'].")
        shuffle = _shuffle_flag(shuffle)
        _check_common(num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id)
        self.usage = usage
        # GLUE's TSVs are not quoted: a sentence may hold a bare '"'
        rows = _read_csv(os.path.join(self.dataset_dir, usage + ".tsv"), owner, 2, "\t", True, csv.QUOTE_NONE)
        if usage == "test":
            rows, columns = [(r[1],) for r in rows], ["sentence"]
        else:
            columns = ["sentence", "label"]
        super().__init__(_E.py_source(_Rows(rows), columns), None,
                         **_engine_args(num_samples, num_parallel_workers, shuffle, None, num_shards,
                                        shard_id))
