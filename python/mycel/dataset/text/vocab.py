"""Vocab: a token <-> id table built from a list, a dict, a file or a dataset column."""
import collections
import numbers
import os

import numpy as np

__all__ = ["Vocab", "to_str", "to_bytes"]


def _check_specials(owner, special_tokens, special_first):
    if special_tokens is None:
        return []
    if not isinstance(special_tokens, (list, tuple)) or not all(isinstance(t, str) for t in special_tokens):
        raise TypeError(f"{owner}: special_tokens must be a list of str, got {special_tokens!r}")
    if len(set(special_tokens)) != len(special_tokens):
        raise ValueError(f"{owner}: special_tokens has duplicates {list(special_tokens)}")
    if not isinstance(special_first, bool):
        raise TypeError(f"{owner}: special_first must be a bool, got {special_first!r}")
    return list(special_tokens)


def _with_specials(owner, words, specials, special_first):
    clash = [w for w in words if w in set(specials)]
    if clash:
        raise ValueError(f"{owner}: special token '{clash[0]}' is also among the words")
    return specials + words if special_first else words + specials


class Vocab:
    """A mapping token -> id (ids 0..n-1 for from_list/from_file/from_dataset; any ints for
    from_dict). Build one with the from_* class methods."""

    def __init__(self, table=None):
        self._ids = dict(table or {})
        self._tokens = {}
        for w, i in self._ids.items():
            self._tokens.setdefault(i, w)

    @classmethod
    def from_list(cls, word_list, special_tokens=None, special_first=True):
        """Ids in list order; special_tokens go before (special_first) or after the words."""
        owner = "Vocab.from_list"
        if not isinstance(word_list, (list, tuple)) or not all(isinstance(w, str) for w in word_list):
            raise TypeError(f"{owner}: word_list must be a list of str, got {word_list!r}")
        if len(set(word_list)) != len(word_list):
            dup = [w for w, c in collections.Counter(word_list).items() if c > 1][0]
            raise ValueError(f"{owner}: word_list has duplicate word '{dup}'")
        specials = _check_specials(owner, special_tokens, special_first)
        words = _with_specials(owner, list(word_list), specials, special_first)
        return cls({w: i for i, w in enumerate(words)})

    @classmethod
    def from_dict(cls, word_dict):
        """The given {word: id} table (ids must be ints >= 0)."""
        if not isinstance(word_dict, dict):
            raise TypeError(f"Vocab.from_dict: word_dict must be a dict, got {type(word_dict).__name__}")
        for w, i in word_dict.items():
            if not isinstance(w, str) or not isinstance(i, numbers.Integral) or isinstance(i, bool) or i < 0:
                raise ValueError(f"Vocab.from_dict: entries must be str -> int >= 0, got {w!r}: {i!r}")
        return cls({w: int(i) for w, i in word_dict.items()})

    @classmethod
    def from_file(cls, file_path, delimiter="", vocab_size=None, special_tokens=None, special_first=True):
        """One word per line (the text before `delimiter` when given); the first vocab_size
        lines when given."""
        owner = "Vocab.from_file"
        if not isinstance(file_path, (str, os.PathLike)):
            raise TypeError(f"{owner}: file_path must be a str, got {type(file_path).__name__}")
        if not os.path.isfile(file_path):
            raise ValueError(f"{owner}: no such file '{file_path}'")
        if vocab_size is not None and (not isinstance(vocab_size, numbers.Integral) or vocab_size < 0):
            raise ValueError(f"{owner}: vocab_size must be None or an int >= 0, got {vocab_size!r}")
        specials = _check_specials(owner, special_tokens, special_first)
        words, seen = [], set()
        with open(file_path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if vocab_size is not None and len(words) >= vocab_size:
                    break
                line = line.rstrip("\r\n")
                word = line.split(delimiter, 1)[0] if delimiter else line
                if not word:
                    continue
                if word in seen:
                    raise ValueError(f"{owner}: '{file_path}' line {lineno}: duplicate word '{word}'")
                words.append(word)
                seen.add(word)
        return cls({w: i for i, w in enumerate(_with_specials(owner, words, specials, special_first))})

    @classmethod
    def from_dataset(cls, dataset, columns=None, freq_range=None, top_k=None, special_tokens=None,
                     special_first=True):
        """Words of the dataset's string columns, most frequent first (ties in lexicographic order), kept
        when their count is in freq_range=(min, max) and among the top_k."""
        owner = "Vocab.from_dataset"
        specials = _check_specials(owner, special_tokens, special_first)
        names = dataset.get_col_names()
        cols = [columns] if isinstance(columns, str) else list(columns or names)
        for c in cols:
            if c not in names:
                raise ValueError(f"{owner}: column '{c}' is not among {names}")
        counts = collections.Counter()
        for row in dataset.create_dict_iterator(num_epochs=1, output_numpy=True):
            for c in cols:
                a = np.asarray(row[c])
                if a.dtype.kind not in "US":
                    raise TypeError(f"{owner}: column '{c}' holds {a.dtype}, not strings")
                counts.update(to_str(a).ravel().tolist())
        lo, hi = (0, None) if freq_range is None else freq_range
        lo = 0 if lo is None else lo
        ranked = sorted(counts.items(), key=lambda wn: (-wn[1], wn[0]))
        words = [w for w, n in ranked if n >= lo and (hi is None or n <= hi)]
        if top_k is not None:
            words = words[:top_k]
        return cls({w: i for i, w in enumerate(_with_specials(owner, words, specials, special_first))})

    def vocab(self):
        """The {word: id} table."""
        return dict(self._ids)

    def tokens_to_ids(self, tokens):
        """Id of a token (or a list of ids); -1 for a token not in the vocabulary."""
        if isinstance(tokens, str):
            return self._ids.get(tokens, -1)
        if isinstance(tokens, np.ndarray):
            tokens = to_str(tokens).tolist()
        return [self._ids.get(t, -1) for t in tokens]

    def ids_to_tokens(self, ids):
        """Token of an id (or a list of tokens); '' for an id not in the vocabulary."""
        if isinstance(ids, numbers.Integral):
            return self._tokens.get(int(ids), "")
        return [self._tokens.get(int(i), "") for i in np.asarray(ids).ravel()]

    def __len__(self):
        return len(self._ids)

    def __contains__(self, token):
        return token in self._ids

    def __repr__(self):
        return f"Vocab({len(self._ids)} tokens)"


def to_str(array, encoding="utf8"):
    """A numpy bytes array decoded to str (str arrays pass through)."""
    a = np.asarray(array)
    if a.dtype.kind == "U":
        return a
    if a.dtype.kind != "S":
        raise TypeError(f"to_str: expected a bytes or str array, got dtype {a.dtype}")
    return np.char.decode(a, encoding)


def to_bytes(array, encoding="utf8"):
    """A numpy str array encoded to bytes (bytes arrays pass through)."""
    a = np.asarray(array)
    if a.dtype.kind == "S":
        return a
    if a.dtype.kind != "U":
        raise TypeError(f"to_bytes: expected a bytes or str array, got dtype {a.dtype}")
    return np.char.encode(a, encoding)
