"""BERT's tokenizers (MindSpore's text.BasicTokenizer, WordpieceTokenizer, BertTokenizer) and
NormalizeUTF8, in Python: BasicTokenizer splits a string at whitespace, punctuation and CJK
characters (optionally lower-casing and stripping accents); WordpieceTokenizer splits each word
into the longest vocabulary pieces from the left, later pieces marked with suffix_indicator."""
import enum
import re
import unicodedata

import numpy as np

from mycel.dataset.text.transforms import TextTensorOperation
from mycel.dataset.text.vocab import Vocab

__all__ = ["NormalizeForm", "NormalizeUTF8", "BasicTokenizer", "WordpieceTokenizer", "BertTokenizer"]


class NormalizeForm(enum.Enum):
    """Unicode normalization forms (NONE leaves the text as it is)."""
    NONE = "NONE"
    NFC = "NFC"
    NFKC = "NFKC"
    NFD = "NFD"
    NFKD = "NFKD"


def _normalize(s, form):
    return s if form is NormalizeForm.NONE else unicodedata.normalize(form.value, s)


def _check_form(owner, form):
    if not isinstance(form, NormalizeForm):
        raise TypeError(f"{owner}: normalization_form must be a NormalizeForm, got {form!r}")
    return form


class NormalizeUTF8(TextTensorOperation):
    """Strings in a Unicode normalization form (NFKC by default)."""

    def __init__(self, normalize_form=NormalizeForm.NFKC):
        self.normalize_form = _check_form("NormalizeUTF8", normalize_form)
        super().__init__()

    def _apply(self, text):
        a = self._text(text)
        return np.array([_normalize(s, self.normalize_form) for s in a.ravel().tolist()],
                        dtype=str).reshape(a.shape)


def _is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(ch):
    cp = ord(ch)
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


_UNUSED = re.compile(r"\[(UNK|CLS|SEP|PAD|MASK|unused\d+)\]")


def _strings(a):
    return np.array(a, dtype=str) if a else np.array([], dtype="<U1")


def _basic_tokens(s, lower_case, keep_whitespace, form, preserve_unused):
    s = _normalize(s, form)
    out, word = [], []

    def flush():
        if word:
            out.append("".join(word))
            word.clear()
    i = 0
    while i < len(s):
        if preserve_unused and s[i] == "[":
            m = _UNUSED.match(s, i)
            if m:
                flush()
                out.append(m.group())
                i = m.end()
                continue
        chars = s[i]
        if lower_case:  # fold case, then drop the accents NFD separates out
            chars = [c for c in unicodedata.normalize("NFD", chars.lower()) if unicodedata.category(c) != "Mn"]
        for c in chars:
            if c.isspace() or _is_punctuation(c) or _is_cjk(c):
                flush()
                if not c.isspace() or keep_whitespace:
                    out.append(c)
            else:
                word.append(c)
        i += 1
    flush()
    return out


class BasicTokenizer(TextTensorOperation):
    """A string -> tokens split at whitespace (dropped unless keep_whitespace), punctuation and
    CJK characters (each its own token); lower_case folds case and strips accents; the special
    tokens [UNK], [CLS], [SEP], [PAD], [MASK], [unusedN] stay whole (preserve_unused_token)."""

    def __init__(self, lower_case=False, keep_whitespace=False, normalization_form=NormalizeForm.NONE,
                 preserve_unused_token=True, with_offsets=False):
        if with_offsets:
            raise NotImplementedError("BasicTokenizer: with_offsets=True is not supported yet")
        self.lower_case, self.keep_whitespace = bool(lower_case), bool(keep_whitespace)
        self.normalization_form = _check_form("BasicTokenizer", normalization_form)
        self.preserve_unused_token = bool(preserve_unused_token)
        super().__init__()

    def _apply(self, text):
        s = str(self._text(text, (0,)))
        return _strings(_basic_tokens(s, self.lower_case, self.keep_whitespace, self.normalization_form,
                                      self.preserve_unused_token))


def _wordpieces(word, table, suffix, max_bytes, unknown):
    if len(word.encode("utf-8")) > max_bytes:
        return [unknown if unknown else word]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else suffix + word[start:end]
            if piece in table:
                break
            end -= 1
        if end == start:  # no piece fits: the whole word is unknown
            return [unknown if unknown else word]
        pieces.append(word[start:end] if start == 0 else suffix + word[start:end])
        start = end
    return pieces


class WordpieceTokenizer(TextTensorOperation):
    """Words (a 1-d string column) -> their word pieces: the longest vocabulary entry from the
    left, then the longest suffix_indicator + rest, and so on; a word that cannot be split (or
    longer than max_bytes_per_token) becomes unknown_token ('' keeps the word)."""

    def __init__(self, vocab, suffix_indicator="##", max_bytes_per_token=100, unknown_token="[UNK]",
                 with_offsets=False):
        if not isinstance(vocab, Vocab):
            raise TypeError(f"WordpieceTokenizer: vocab must be a text.Vocab, got {type(vocab).__name__}")
        if with_offsets:
            raise NotImplementedError("WordpieceTokenizer: with_offsets=True is not supported yet")
        self.vocab, self.suffix_indicator = vocab, suffix_indicator
        self.max_bytes_per_token, self.unknown_token = int(max_bytes_per_token), unknown_token
        self._table = vocab.vocab()
        super().__init__()

    def _apply(self, words):
        out = []
        for w in self._text(words, (0, 1)).ravel().tolist():
            out += _wordpieces(w, self._table, self.suffix_indicator, self.max_bytes_per_token,
                               self.unknown_token)
        return _strings(out)


class BertTokenizer(TextTensorOperation):
    """BasicTokenizer then WordpieceTokenizer: a string -> BERT's word pieces."""

    def __init__(self, vocab, suffix_indicator="##", max_bytes_per_token=100, unknown_token="[UNK]",
                 lower_case=False, keep_whitespace=False, normalization_form=NormalizeForm.NONE,
                 preserve_unused_token=True, with_offsets=False):
        self._basic = BasicTokenizer(lower_case, keep_whitespace, normalization_form,
                                     preserve_unused_token, with_offsets)
        self._wordpiece = WordpieceTokenizer(vocab, suffix_indicator, max_bytes_per_token, unknown_token,
                                             with_offsets)
        super().__init__()

    def _apply(self, text):
        words = self._basic._apply(text)
        return self._wordpiece._apply(words) if words.size else words
