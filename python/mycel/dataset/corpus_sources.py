"""Text corpora with MindSpore's signatures: language-model corpora (EnWik9, PennTreebank,
WikiText: a row per line), tagged corpora (CoNLL2000, UDPOS: a row per sentence, each column the
1-d string array of one field of its tokens) and translation corpora (IWSLT2016, IWSLT2017,
Multi30k: rows of text and translation). Files are read when the dataset is built, in MindSpore's
folder layouts; shuffle takes a bool or a Shuffle member, as MindSpore's text sources do."""
import os

import numpy as np

from mycel.dataset.detection_sources import _parse_xml
from mycel.dataset.engine import SourceDataset, _E
from mycel.dataset.sources import _check_common, _check_dir, _check_type, _engine_args, _shuffle_flag
from mycel.dataset.text_sources import _Rows
from mycel.dataset.tfrecord import Shuffle

__all__ = ["EnWik9Dataset", "PennTreebankDataset", "WikiTextDataset", "CoNLL2000Dataset", "UDPOSDataset",
           "IWSLT2016Dataset", "IWSLT2017Dataset", "Multi30kDataset"]


def _read_lines(path, owner):
    """The lines of a UTF-8 text file, line endings dropped."""
    if not os.path.isfile(path):
        raise ValueError(f"{owner}: {path} does not exist")
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise ValueError(f"{owner}: '{path}' is not UTF-8 text ({e})") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def _usage(usage, valid, default="all"):
    usage = default if usage is None else usage
    _check_type(usage, "usage", str)
    if usage not in valid:
        raise ValueError(f"Input usage is not within the valid set of {list(valid)}.")
    return usage


class _CorpusDataset(SourceDataset):
    """Rows built by the subclass's _rows(usage) -> (rows, columns), then sampled by the engine."""

    def _setup(self, owner, dataset_dir, usage, num_samples, num_parallel_workers, shuffle, num_shards,
               shard_id):
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = usage
        shuffle = _shuffle_flag(shuffle)
        _check_common(num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id)
        rows, columns = self._rows(owner)
        if not rows:
            raise ValueError(f"{owner}: no rows in {self.dataset_dir} for usage '{usage}'")
        super().__init__(_E.py_source(_Rows(rows), columns), None,
                         **_engine_args(num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id))


# ---- a row per line ---------------------------------------------------------------------------

class EnWik9Dataset(_CorpusDataset):
    """enwik9 (the first 10^9 bytes of an English Wikipedia dump): dataset_dir/enwik9, every line
    a row of the column text, empty lines included (as MindSpore reads it)."""

    def __init__(self, dataset_dir, num_samples=None, num_parallel_workers=None, shuffle=True,
                 num_shards=None, shard_id=None, cache=None):
        self._setup("EnWik9Dataset", dataset_dir, "all", num_samples, num_parallel_workers, shuffle,
                    num_shards, shard_id)

    def _rows(self, owner):
        return [(np.array(ln),) for ln in _read_lines(os.path.join(self.dataset_dir, "enwik9"), owner)], ["text"]


class _SplitLines(_CorpusDataset):
    """One file per usage; every non-empty line is a row of the column text. usage 'all' reads
    the files in MindSpore's (name) order."""
    _files = {}

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=Shuffle.GLOBAL, num_shards=None, shard_id=None, cache=None):
        usage = _usage(usage, tuple(self._files) + ("all",))
        self._setup(type(self).__name__, dataset_dir, usage, num_samples, num_parallel_workers, shuffle,
                    num_shards, shard_id)

    def _rows(self, owner):
        names = sorted(self._files.values()) if self.usage == "all" else [self._files[self.usage]]
        rows = []
        for name in names:
            rows += [(np.array(ln),) for ln in _read_lines(os.path.join(self.dataset_dir, name), owner) if ln]
        return rows, ["text"]


class PennTreebankDataset(_SplitLines):
    """Penn Treebank (Mikolov's language-model version): dataset_dir/ptb.{train,valid,test}.txt;
    usage train, valid, test or all (None)."""
    _files = {"train": "ptb.train.txt", "valid": "ptb.valid.txt", "test": "ptb.test.txt"}


class WikiTextDataset(_SplitLines):
    """WikiText-2/103: dataset_dir/wiki.{train,valid,test}.tokens; usage train, valid, test or
    all (None)."""
    _files = {"train": "wiki.train.tokens", "valid": "wiki.valid.tokens", "test": "wiki.test.tokens"}


# ---- a row per sentence -----------------------------------------------------------------------

def _sentences(path, owner, ncols, sep):
    """[(column arrays)] of a file of '<field> ... <field>' token lines, sentences separated by
    blank lines."""
    out, tokens = [], []

    def flush():
        if tokens:
            out.append(tuple(np.array([t[k] for t in tokens]) for k in range(ncols)))
            tokens.clear()

    for lineno, line in enumerate(_read_lines(path, owner), 1):
        line = line.strip(" ")
        if not line:
            flush()
            continue
        fields = line.split(sep) if sep else line.split()
        if len(fields) < ncols:
            raise ValueError(f"{owner}: '{path}':{lineno}: expected {ncols} fields, got {len(fields)} "
                             f"({line[:80]!r})")
        tokens.append(fields[:ncols])
    flush()
    return out


class CoNLL2000Dataset(_CorpusDataset):
    """CoNLL-2000 chunking: dataset_dir/train.txt and test.txt, 'word POS chunk' lines,
    sentences separated by blank lines. Columns word, pos_tag and chunk_tag: the sentence's 1-d
    string arrays. usage train, test or all (None)."""
    _files = {"train": "train.txt", "test": "test.txt"}

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=Shuffle.GLOBAL, num_shards=None, shard_id=None, cache=None):
        usage = _usage(usage, ("train", "test", "all"))
        self._setup("CoNLL2000Dataset", dataset_dir, usage, num_samples, num_parallel_workers, shuffle,
                    num_shards, shard_id)

    def _rows(self, owner):
        rows = []
        for part in (("test", "train") if self.usage == "all" else (self.usage,)):
            rows += _sentences(os.path.join(self.dataset_dir, self._files[part]), owner, 3, " ")
        return rows, ["word", "pos_tag", "chunk_tag"]


class UDPOSDataset(_CorpusDataset):
    """UD English part-of-speech tags: dataset_dir/en-ud-tag.v2.{train,dev,test}.txt,
    'word<TAB>universal tag<TAB>Stanford tag' lines, sentences separated by blank lines. Columns
    word, universal and stanford (1-d string arrays); usage train, valid (the dev file), test or
    all (None)."""
    _files = {"train": "en-ud-tag.v2.train.txt", "valid": "en-ud-tag.v2.dev.txt",
              "test": "en-ud-tag.v2.test.txt"}

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=Shuffle.GLOBAL, num_shards=None, shard_id=None, cache=None):
        usage = _usage(usage, ("train", "valid", "test", "all"))
        self._setup("UDPOSDataset", dataset_dir, usage, num_samples, num_parallel_workers, shuffle,
                    num_shards, shard_id)

    def _rows(self, owner):
        names = sorted(self._files.values()) if self.usage == "all" else [self._files[self.usage]]
        rows = []
        for name in names:
            rows += _sentences(os.path.join(self.dataset_dir, name), owner, 3, "\t")
        return rows, ["word", "universal", "stanford"]


# ---- translation pairs ------------------------------------------------------------------------

def _language_pair(owner, pair, default, allowed):
    pair = list(default) if pair is None else pair
    _check_type(pair, "language_pair", (list, tuple))
    if len(pair) != 2 or not all(isinstance(p, str) for p in pair):
        raise TypeError(f"{owner}: language_pair must be a sequence of two str, got {pair!r}")
    if tuple(pair) not in allowed:
        raise ValueError(f"{owner}: language_pair {list(pair)} is not one of {sorted(list(p) for p in allowed)}")
    return list(pair)


_IWSLT_TAGS = ("<url", "<keywords", "<talkid", "<description", "<reviewer", "<translator", "<title",
               "<speaker", "<doc", "</doc")


def _iwslt_train(src, tgt, owner):
    """Line k of the source talk transcript with line k of the target one, the metadata lines
    (<url>, <talkid>, ...) of either left out."""
    a, b = _read_lines(src, owner), _read_lines(tgt, owner)
    if len(a) != len(b):
        raise ValueError(f"{owner}: '{src}' has {len(a)} lines but '{tgt}' {len(b)}")
    return [(np.array(x.strip(" ")), np.array(y.strip(" "))) for x, y in zip(a, b)
            if x and y and not any(t in x or t in y for t in _IWSLT_TAGS)]


def _iwslt_segments(path, owner):
    """[[segment text] per <doc>] of an IWSLT evaluation XML file."""
    if not os.path.isfile(path):
        raise ValueError(f"{owner}: {path} does not exist")
    with open(path, "rb") as f:
        root = _parse_xml(f.read(), path, owner)
    docs = [d for c in root.children for d in c.children if d.tag == "doc"]
    if not docs:
        raise ValueError(f"{owner}: '{path}' has no <doc> element under its first level")
    return [[s.text.strip(" ") for s in d.children if s.tag == "seg"] for d in docs]


def _iwslt_eval(src, tgt, owner):
    rows = []
    for da, db in zip(_iwslt_segments(src, owner), _iwslt_segments(tgt, owner)):
        rows += [(np.array(x), np.array(y)) for x, y in zip(da, db) if x and y]
    return rows


class _IWSLTDataset(_CorpusDataset):
    _year = _prefix = None
    _pairs = _sets = ()
    _default_pair = ("de", "en")

    def __init__(self, dataset_dir, usage=None, language_pair=None, valid_set=None, test_set=None,
                 num_samples=None, num_parallel_workers=None, shuffle=Shuffle.GLOBAL, num_shards=None,
                 shard_id=None, cache=None):
        owner = type(self).__name__
        usage = _usage(usage, ("train", "valid", "test", "all"))
        self.language_pair = _language_pair(owner, language_pair, self._default_pair, self._pairs)
        for name, value, default in (("valid_set", valid_set, self._valid), ("test_set", test_set, self._test)):
            value = default if value is None else value
            _check_type(value, name, str)
            if value not in self._sets:
                raise ValueError(f"{owner}: {name} {value!r} is not one of {list(self._sets)}")
            setattr(self, name, value)
        self._setup(owner, dataset_dir, usage, num_samples, num_parallel_workers, shuffle, num_shards, shard_id)

    def _rows(self, owner):
        src, tgt = self.language_pair
        folder = self._folder(src, tgt)
        rows = []
        if self.usage in ("train", "all"):
            stem = os.path.join(folder, f"train.tags.{src}-{tgt}.")
            rows += _iwslt_train(stem + src, stem + tgt, owner)
        for part, which in (("valid", self.valid_set), ("test", self.test_set)):
            if self.usage in (part, "all"):
                stem = os.path.join(folder, f"{self._prefix}.TED.{which}.{src}-{tgt}.")
                rows += _iwslt_eval(stem + src + ".xml", stem + tgt + ".xml", owner)
        return rows, ["text", "translation"]


_IWSLT16_PAIRS = {("en", x) for x in ("ar", "de", "fr", "cs")} | {(x, "en") for x in ("ar", "de", "fr", "cs")}
_IWSLT17_LANGS = ("de", "en", "it", "nl", "ro")


class IWSLT2016Dataset(_IWSLTDataset):
    """IWSLT 2016 TED talks: dataset_dir/texts/<src>/<tgt>/<src>-<tgt>/ holding
    train.tags.<src>-<tgt>.<lang> (talk transcripts, metadata lines left out) and
    IWSLT16.TED.<set>.<src>-<tgt>.<lang>.xml (<doc><seg> segments). language_pair: en with
    ar, de, fr or cs, either way (default ['de', 'en']); valid_set (default 'tst2013') and
    test_set (default 'tst2014'): dev2010, tst2010 ... tst2014. Columns text (source language)
    and translation; usage train, valid, test or all (None: train, valid, then test)."""
    _prefix, _pairs = "IWSLT16", _IWSLT16_PAIRS
    _sets = ("dev2010", "tst2010", "tst2011", "tst2012", "tst2013", "tst2014")
    _valid, _test = "tst2013", "tst2014"

    def _folder(self, src, tgt):
        return os.path.join(self.dataset_dir, "texts", src, tgt, f"{src}-{tgt}")


class IWSLT2017Dataset(_IWSLTDataset):
    """IWSLT 2017 multilingual TED talks: the files of IWSLT2016Dataset under
    dataset_dir/texts/DeEnItNlRo/DeEnItNlRo/DeEnItNlRo-DeEnItNlRo/, named IWSLT17.TED.*.
    language_pair: two different languages of de, en, it, nl, ro (default ['de', 'en']);
    valid_set 'dev2010' and test_set 'tst2010' (the defaults and only choices)."""
    _prefix = "IWSLT17"
    _pairs = {(a, b) for a in _IWSLT17_LANGS for b in _IWSLT17_LANGS if a != b}
    _sets = ("dev2010", "tst2010")
    _valid, _test = "dev2010", "tst2010"

    def __init__(self, dataset_dir, usage=None, language_pair=None, num_samples=None, num_parallel_workers=None,
                 shuffle=Shuffle.GLOBAL, num_shards=None, shard_id=None, cache=None):
        super().__init__(dataset_dir, usage, language_pair, None, None, num_samples, num_parallel_workers,
                         shuffle, num_shards, shard_id)

    def _folder(self, src, tgt):
        return os.path.join(self.dataset_dir, "texts", "DeEnItNlRo", "DeEnItNlRo", "DeEnItNlRo-DeEnItNlRo")


_MULTI30K = {"train": "training/train", "test": "mmt16_task1_test/test", "valid": "validation/val"}


class Multi30kDataset(_CorpusDataset):
    """Multi30k English-German captions: dataset_dir/training/train.{en,de},
    validation/val.{en,de} and mmt16_task1_test/test.{en,de}, line k of one language with line
    k of the other. language_pair ['en', 'de'] (None) or ['de', 'en']: the first is the column
    text, the second translation. usage train, valid, test or all (None: test, train, valid, in
    MindSpore's file-name order)."""

    def __init__(self, dataset_dir, usage=None, language_pair=None, num_samples=None, num_parallel_workers=None,
                 shuffle=None, num_shards=None, shard_id=None, cache=None):
        owner = "Multi30kDataset"
        usage = _usage(usage, ("train", "valid", "test", "all"))
        self.language_pair = _language_pair(owner, language_pair, ("en", "de"), {("en", "de"), ("de", "en")})
        self._setup(owner, dataset_dir, usage, num_samples, num_parallel_workers,
                    Shuffle.GLOBAL if shuffle is None else shuffle, num_shards, shard_id)

    def _rows(self, owner):
        parts = sorted(_MULTI30K.values()) if self.usage == "all" else [_MULTI30K[self.usage]]
        rows = []
        for stem in parts:
            base = os.path.join(self.dataset_dir, stem)
            en, de = _read_lines(base + ".en", owner), _read_lines(base + ".de", owner)
            if len(en) != len(de):
                raise ValueError(f"{owner}: '{base}.en' has {len(en)} lines but '{base}.de' {len(de)}")
            for a, b in zip(en, de):
                if a or b:
                    rows.append((np.array(a), np.array(b)) if self.language_pair[0] == "en" else
                                (np.array(b), np.array(a)))
        return rows, ["text", "translation"]
