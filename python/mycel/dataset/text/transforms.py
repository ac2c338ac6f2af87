"""Text transforms: each is a Python function over numpy str arrays, which the map op runs on
its workers; called directly on a str, a list or an array it runs eagerly."""
import numbers

import numpy as np

from mycel import _mycel
from mycel.dataset.text.vocab import Vocab, to_str

__all__ = ["TextTensorOperation", "Lookup", "UnicodeCharTokenizer", "PythonTokenizer", "Ngram",
           "Truncate", "TruncateSequencePair", "ToNumber", "AddToken", "SlidingWindow", "CaseFold"]


class TextTensorOperation:
    """Base of the text transforms: `_apply(*arrays)` on numpy arrays, wrapped as an engine
    transform (`_handle`) for Dataset.map."""

    def __init__(self):
        self.__name__ = type(self).__name__  # the name the engine's errors show

    @property
    def _handle(self):
        # Made on demand, so the op does not hold the handle that holds it (no cycle).
        return _mycel.data.py_transform(self)

    def __call__(self, *inputs):
        if not inputs:
            raise TypeError(f"{self.__name__}: expected at least one input")
        arrays = [x.asnumpy() if isinstance(x, _mycel.Tensor) else np.asarray(x) for x in inputs]
        return self._apply(*arrays)

    def _apply(self, *arrays):
        raise NotImplementedError

    def _text(self, a, ndims=None, what="input"):
        """a as a str array, checking it holds strings (and its rank when ndims is given)."""
        a = np.asarray(a)
        if a.dtype.kind not in "US":
            raise TypeError(f"{self.__name__}: the {what} must hold strings, got dtype {a.dtype} "
                            f"of shape {a.shape}")
        if ndims is not None and a.ndim not in ndims:
            want = " or ".join(f"{n}-d" for n in ndims)
            raise ValueError(f"{self.__name__}: the {what} must be {want}, got shape {a.shape}")
        return to_str(a)

    def __repr__(self):
        return f"{type(self).__name__}()"


def _np_type(owner, data_type):
    import mycel
    if isinstance(data_type, mycel.dtype):
        name = data_type.name
    else:
        try:
            name = np.dtype(data_type).name
        except TypeError:
            raise TypeError(f"{owner}: unsupported data_type {data_type!r}") from None
    if name == "bfloat16":
        raise TypeError(f"{owner}: data_type bfloat16 has no numpy type; use float32")
    return np.dtype(name)


def _offsets(tokens_with_starts, text):
    """Byte offsets (start, limit) in the UTF-8 text of tokens given with their char starts,
    uint32 as MindSpore's tokenizers give them."""
    starts, limits = [], []
    for tok, c in tokens_with_starts:
        b = len(text[:c].encode("utf-8"))
        starts.append(b)
        limits.append(b + len(tok.encode("utf-8")))
    return np.array(starts, np.uint32), np.array(limits, np.uint32)


def _tokens(owner, toks, with_offsets, text):
    # No token at all is the one token '' at 0..0, as MindSpore's tokenizers return it.
    toks = toks or [("", 0)]
    out = np.array([t for t, _ in toks], dtype=str)
    if not with_offsets:
        return out
    return (out,) + _offsets(toks, text)


class Lookup(TextTensorOperation):
    """Tokens -> ids through a Vocab; an unknown token takes unknown_token's id (or is an error
    when unknown_token is None). Output dtype data_type (int32 by default)."""

    def __init__(self, vocab, unknown_token=None, data_type=None):
        if not isinstance(vocab, Vocab):
            raise TypeError(f"Lookup: vocab must be a text.Vocab, got {type(vocab).__name__}")
        self.vocab, self.unknown_token = vocab, unknown_token
        self._unk = None
        if unknown_token is not None:
            if unknown_token not in vocab:
                raise ValueError(f"Lookup: unknown_token '{unknown_token}' is not in the vocabulary")
            self._unk = vocab.vocab()[unknown_token]
        import mycel
        self._dtype = _np_type("Lookup", mycel.int32 if data_type is None else data_type)
        if self._dtype.kind not in "iu":
            raise TypeError(f"Lookup: data_type must be an integer type, got {self._dtype}")
        self._table = vocab.vocab()
        super().__init__()

    def _apply(self, tokens):
        a = self._text(tokens)
        flat = a.ravel().tolist()
        ids = []
        for t in flat:
            i = self._table.get(t, self._unk)
            if i is None:
                raise ValueError(f"Lookup: token '{t}' is not in the vocabulary and no "
                                 "unknown_token was given")
            ids.append(i)
        return np.array(ids, dtype=np.int64).reshape(a.shape).astype(self._dtype)


class UnicodeCharTokenizer(TextTensorOperation):
    """A string -> its Unicode characters (code points)."""

    def __init__(self, with_offsets=False):
        self.with_offsets = bool(with_offsets)
        super().__init__()

    def _apply(self, text):
        s = str(self._text(text, (0,)))
        return _tokens(self.__name__, [(ch, i) for i, ch in enumerate(s)], self.with_offsets, s)


class PythonTokenizer(TextTensorOperation):
    """A string -> tokenizer(string), a Python function returning a list of str."""

    def __init__(self, tokenizer):
        if not callable(tokenizer):
            raise TypeError(f"PythonTokenizer: tokenizer must be callable, got {type(tokenizer).__name__}")
        self.tokenizer = tokenizer
        super().__init__()

    def _apply(self, text):
        toks = list(self.tokenizer(str(self._text(text, (0,)))))
        if not all(isinstance(t, str) for t in toks):
            raise TypeError("PythonTokenizer: the tokenizer must return a list of str")
        return np.array(toks, dtype=str) if toks else np.array([], dtype="<U1")


def _pad_arg(owner, name, pad):
    if (not isinstance(pad, (tuple, list)) or len(pad) != 2 or not isinstance(pad[0], str)
            or not isinstance(pad[1], numbers.Integral) or pad[1] < 0):
        raise ValueError(f"{owner}: {name} must be a (str, int >= 0) pair, got {pad!r}")
    return pad[0], int(pad[1])


class Ngram(TextTensorOperation):
    """The n-grams of a 1-d string column for each n in `n`, joined by separator. Each side is
    padded with up to n-1 copies of its pad string (left_pad/right_pad = (str, width)); a
    sequence shorter than n gives one empty string for that n (MindSpore's rule)."""

    def __init__(self, n, left_pad=("", 0), right_pad=("", 0), separator=" "):
        ns = [n] if isinstance(n, numbers.Integral) else list(n)
        if not ns or not all(isinstance(k, numbers.Integral) and not isinstance(k, bool) and k > 0 for k in ns):
            raise ValueError(f"Ngram: n must be a positive int or a list of them, got {n!r}")
        if not isinstance(separator, str):
            raise TypeError(f"Ngram: separator must be a str, got {separator!r}")
        self.n = [int(k) for k in ns]
        self.left_pad = _pad_arg("Ngram", "left_pad", left_pad)
        self.right_pad = _pad_arg("Ngram", "right_pad", right_pad)
        self.separator = separator
        super().__init__()

    def _apply(self, tokens):
        seq = self._text(tokens, (1,)).tolist()
        out = []
        for k in self.n:
            left = [self.left_pad[0]] * min(self.left_pad[1], k - 1)
            right = [self.right_pad[0]] * min(self.right_pad[1], k - 1)
            padded = left + seq + right
            if len(padded) < k:
                out.append("")
                continue
            out += [self.separator.join(padded[i:i + k]) for i in range(len(padded) - k + 1)]
        return np.array(out, dtype=str)


def _check_len(owner, name, v):
    if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 0:
        raise ValueError(f"{owner}: {name} must be an int >= 0, got {v!r}")
    return int(v)


class Truncate(TextTensorOperation):
    """The first max_seq_len items of a 1-d column (strings or numbers)."""

    def __init__(self, max_seq_len):
        self.max_seq_len = _check_len("Truncate", "max_seq_len", max_seq_len)
        super().__init__()

    def _apply(self, a):
        a = np.asarray(a)
        if a.ndim != 1:
            raise ValueError(f"Truncate: the input must be 1-d, got shape {a.shape}")
        return a[:self.max_seq_len]


class TruncateSequencePair(TextTensorOperation):
    """Two 1-d columns cut so their lengths sum to at most max_length, always from the longer
    one (the first when equal)."""

    def __init__(self, max_length):
        self.max_length = _check_len("TruncateSequencePair", "max_length", max_length)
        super().__init__()

    def _apply(self, a, b):
        a, b = np.asarray(a), np.asarray(b)
        if a.ndim != 1 or b.ndim != 1:
            raise ValueError(f"TruncateSequencePair: both inputs must be 1-d, got shapes {a.shape} and {b.shape}")
        la, lb = len(a), len(b)
        while la + lb > self.max_length:
            if la >= lb:
                la -= 1
            else:
                lb -= 1
        return a[:la], b[:lb]


class ToNumber(TextTensorOperation):
    """Strings parsed as numbers of data_type; a string that is not a number, or a number out
    of the type's range, is an error naming it."""

    def __init__(self, data_type):
        self._dtype = _np_type("ToNumber", data_type)
        if self._dtype.kind not in "iuf":
            raise TypeError(f"ToNumber: data_type must be numeric, got {self._dtype}")
        super().__init__()

    def _apply(self, text):
        a = self._text(text)
        out = np.empty(a.shape, self._dtype)
        flat = out.reshape(-1)
        for i, s in enumerate(a.ravel().tolist()):
            flat[i] = self._parse(s)
        return out

    def _parse(self, s):
        t = s.strip()
        try:
            if self._dtype.kind in "iu":
                v = int(t)
                info = np.iinfo(self._dtype)
                if not info.min <= v <= info.max:
                    raise ValueError(f"ToNumber: '{s}' is out of the range of {self._dtype} "
                                     f"[{info.min}, {info.max}]")
                return v
            v = float(t)
        except ValueError as e:
            if str(e).startswith("ToNumber"):
                raise
            raise ValueError(f"ToNumber: '{s}' is not a valid {self._dtype} number") from None
        with np.errstate(over="ignore"):
            cast = self._dtype.type(v)
        if np.isfinite(v) and not np.isfinite(cast):
            raise ValueError(f"ToNumber: '{s}' is out of the range of {self._dtype}")
        return cast


class AddToken(TextTensorOperation):
    """token added at the start (begin=True) or end of a 1-d string column."""

    def __init__(self, token, begin=True):
        if not isinstance(token, str):
            raise TypeError(f"AddToken: token must be a str, got {token!r}")
        self.token, self.begin = token, bool(begin)
        super().__init__()

    def _apply(self, tokens):
        a = self._text(tokens, (1,)).tolist()
        return np.array([self.token] + a if self.begin else a + [self.token], dtype=str)


class SlidingWindow(TextTensorOperation):
    """Windows of `width` consecutive items of a 1-d column, as rows of a (n - width + 1, width)
    array (empty when width > n)."""

    def __init__(self, width, axis=0):
        if not isinstance(width, numbers.Integral) or width < 1:
            raise ValueError(f"SlidingWindow: width must be an int >= 1, got {width!r}")
        if axis not in (0, -1):
            raise ValueError(f"SlidingWindow: only axis 0 of a 1-d input is supported, got {axis!r}")
        self.width = int(width)
        super().__init__()

    def _apply(self, a):
        a = np.asarray(a)
        if a.ndim != 1:
            raise ValueError(f"SlidingWindow: the input must be 1-d, got shape {a.shape}")
        n = max(0, len(a) - self.width + 1)
        return np.stack([a[i:i + self.width] for i in range(n)]) if n else a[:0].reshape(0, self.width)


class CaseFold(TextTensorOperation):
    """Strings case-folded (Unicode full case folding, as str.casefold)."""

    def _apply(self, text):
        a = self._text(text)
        return np.array([s.casefold() for s in a.ravel().tolist()], dtype=str).reshape(a.shape)


# MindSpore's module path mindspore.dataset.text.transforms also holds the C++ tokenizers.
from mycel.dataset.text.native_tokenizers import (JiebaTokenizer, RegexReplace, RegexTokenizer,  # noqa: E402,F401
                                                  SentencePieceTokenizer, UnicodeScriptTokenizer,
                                                  WhitespaceTokenizer)
