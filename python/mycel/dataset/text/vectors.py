"""Pretrained word vectors from local files (MindSpore's text.Vectors, FastText, GloVe,
CharNGram; the file formats torchtext reads) and ToVectors, which maps a string column of
tokens to their vectors. A vector file is text: one 'token v1 ... vd' line per token, space
separated, optionally after a 'count dim' header line (fastText's .vec)."""
import numbers
import os

import numpy as np

from mycel.dataset.text.transforms import TextTensorOperation

__all__ = ["Vectors", "FastText", "GloVe", "CharNGram", "ToVectors"]


def _check_max(owner, max_vectors):
    if max_vectors is not None and (not isinstance(max_vectors, numbers.Integral) or
                                    isinstance(max_vectors, bool) or max_vectors < 0):
        raise ValueError(f"{owner}.from_file: max_vectors must be an int >= 0 or None, got {max_vectors!r}")


def _load(owner, file_path, max_vectors):
    """(tokens -> row index, (n, dim) float32 matrix) of a vector file."""
    if not isinstance(file_path, (str, os.PathLike)):
        raise TypeError(f"{owner}.from_file: file_path must be a str, got {type(file_path).__name__}")
    path = os.fspath(file_path)
    if not os.path.isfile(path):
        raise ValueError(f"{owner}.from_file: the file {path} does not exist")
    _check_max(owner, max_vectors)
    index, rows, dim = {}, [], None
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if max_vectors is not None and len(rows) >= max_vectors:
                    break
                parts = line.rstrip("\r\n").rstrip(" ").split(" ")
                if len(parts) < 2 or not parts[0]:
                    if line.strip():
                        raise ValueError(f"{owner}.from_file: '{path}':{lineno}: expected a token and "
                                         f"its vector, got {line[:60]!r}")
                    continue
                if len(parts) == 2 and lineno == 1 and dim is None:
                    continue  # a 'count dim' header
                try:
                    vec = [float(v) for v in parts[1:]]
                except ValueError:
                    raise ValueError(f"{owner}.from_file: '{path}':{lineno}: the vector of "
                                     f"'{parts[0]}' holds a value that is not a number") from None
                if dim is None:
                    dim = len(vec)
                elif len(vec) != dim:
                    raise ValueError(f"{owner}.from_file: '{path}':{lineno}: the vector of '{parts[0]}' "
                                     f"has {len(vec)} values, the vectors before it {dim}")
                if parts[0] not in index:  # a repeated token keeps its first vector
                    index[parts[0]] = len(rows)
                    rows.append(vec)
    except UnicodeDecodeError as e:
        raise ValueError(f"{owner}.from_file: '{path}' is not UTF-8 text ({e})") from None
    if not rows:
        raise ValueError(f"{owner}.from_file: '{path}' holds no vectors")
    return index, np.array(rows, np.float32)


class Vectors:
    """A token -> vector table read with from_file(file_path, max_vectors=None) (the first
    max_vectors vectors of the file)."""

    def __init__(self, index, matrix):
        self._index, self._matrix = index, matrix
        self.dim = matrix.shape[1]

    @classmethod
    def from_file(cls, file_path, max_vectors=None):
        cls._check_name(file_path)
        return cls(*_load(cls.__name__, file_path, max_vectors))

    @classmethod
    def _check_name(cls, file_path):
        pass

    def __len__(self):
        return len(self._index)

    def lookup(self, token, unk, lower_case_backup):
        """The vector of token (float32), trying token.lower() when lower_case_backup, else unk."""
        i = self._index.get(token)
        if i is None and lower_case_backup:
            i = self._index.get(token.lower())
        return unk if i is None else self._matrix[i]


class FastText(Vectors):
    """fastText's .vec files (a 'count dim' header, then one vector per line)."""

    @classmethod
    def _check_name(cls, file_path):
        if isinstance(file_path, (str, os.PathLike)) and not os.fspath(file_path).endswith(".vec"):
            raise ValueError(f"FastText.from_file: the file must be a *.vec file, got {file_path}")


class GloVe(Vectors):
    """GloVe's glove.*.txt files."""

    @classmethod
    def _check_name(cls, file_path):
        if isinstance(file_path, (str, os.PathLike)):
            name = os.path.basename(os.fspath(file_path))
            if not (name.startswith("glove.") and name.endswith(".txt")):
                raise ValueError(f"GloVe.from_file: the file must be named glove.*.txt, got {name}")


class CharNGram(Vectors):
    """Character n-gram vectors (keys like '2gram-#BEGIN#a', '3gram-abc'): a token's vector is
    the mean of the vectors of its 2-, 3- and 4-grams over ['#BEGIN#', c1, ..., ck, '#END#']
    that the table holds, or unk when it holds none."""

    def lookup(self, token, unk, lower_case_backup):
        chars = ["#BEGIN#"] + list(token) + ["#END#"]
        total, count = np.zeros(self.dim, np.float64), 0
        for n in (2, 3, 4):
            for i in range(len(chars) - n + 1):
                row = self._index.get(f"{n}gram-{''.join(chars[i:i + n])}")
                if row is not None:
                    total += self._matrix[row]
                    count += 1
        return (total / count).astype(np.float32) if count else unk


class ToVectors(TextTensorOperation):
    """String tokens (...) -> their vectors (..., dim) float32 from a Vectors table; an unknown
    token gets unk_init (dim floats; zeros by default), after trying its lower case when
    lower_case_backup is set."""

    def __init__(self, vectors, unk_init=None, lower_case_backup=False):
        if not isinstance(vectors, Vectors):
            raise TypeError(f"ToVectors: vectors must be a text.Vectors, FastText, GloVe or CharNGram, "
                            f"got {type(vectors).__name__}")
        if not isinstance(lower_case_backup, bool):
            raise TypeError(f"ToVectors: lower_case_backup must be a bool, got {lower_case_backup!r}")
        if unk_init is None:
            unk = np.zeros(vectors.dim, np.float32)
        else:
            if not isinstance(unk_init, (list, tuple)) or not all(
                    isinstance(v, numbers.Real) and not isinstance(v, bool) for v in unk_init):
                raise TypeError(f"ToVectors: unk_init must be a list of numbers, got {unk_init!r}")
            if len(unk_init) != vectors.dim:
                raise ValueError(f"ToVectors: unk_init has {len(unk_init)} values, the vectors have "
                                 f"{vectors.dim} dimensions")
            unk = np.array(unk_init, np.float32)
        self.vectors, self.unk_init, self.lower_case_backup = vectors, unk_init, lower_case_backup
        self._unk = unk
        super().__init__()

    def _apply(self, tokens):
        a = self._text(tokens)
        flat = [self.vectors.lookup(t, self._unk, self.lower_case_backup) for t in a.ravel().tolist()]
        out = np.array(flat, np.float32).reshape(a.shape + (self.vectors.dim,))
        return out
