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
# The special words lower_case leaves as they are (MindSpore's list: not [unusedN]).
_NO_FOLD = re.compile(r"\[(UNK|CLS|SEP|PAD|MASK)\]")


def _strings(a):
    return np.array(a, dtype=str) if a else np.array([], dtype="<U1")


def _with_offsets(pieces, with_offsets):
    """Tokens [(token, start, limit)] as MindSpore's tokenizers return them: the token strings,
    and with_offsets the uint32 byte offsets too; no token at all is the one token '' at 0..0."""
    if not pieces:
        pieces = [("", 0, 0)]
    toks = _strings([t for t, _, _ in pieces])
    if not with_offsets:
        return toks
    return (toks, np.array([a for _, a, _ in pieces], np.uint32),
            np.array([b for _, _, b in pieces], np.uint32))


def _fold(s):
    # NFKC case folding (ICU's, which MindSpore's CaseFold uses): compatibility forms and case.
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", s).casefold())


def _basic_text(s, lower_case, form, preserve_unused):
    """The text BasicTokenizer splits, as MindSpore prepares it: lower_case folds case (keeping
    the special words) and strips accents (NFD, then marks removed), else the normalization form;
    control and format characters become spaces. Offsets count bytes of this text."""
    if lower_case:
        if preserve_unused:
            parts, pos = [], 0
            for m in _NO_FOLD.finditer(s):
                parts += [_fold(s[pos:m.start()]), m.group()]
                pos = m.end()
            s = "".join(parts) + _fold(s[pos:])
        else:
            s = _fold(s)
        s = "".join(c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn")
    else:
        s = _normalize(s, form)
    return "".join(" " if unicodedata.category(c) in ("Cc", "Cf") else c for c in s)


def _basic_tokens(s, lower_case, keep_whitespace, form, preserve_unused):
    """[(token, byte start, byte limit)] of BasicTokenizer: words split at whitespace runs (kept
    as one token with keep_whitespace), punctuation and CJK characters (each its own token); the
    special words stay whole (preserve_unused)."""
    s = _basic_text(s, lower_case, form, preserve_unused)
    spans, word, i = [], None, 0  # spans: (char start, char end); word: start of the open word

    def close(at):
        if word is not None:
            spans.append((word, at))
    while i < len(s):
        m = _UNUSED.match(s, i) if preserve_unused and s[i] == "[" else None
        if m:
            close(i)
            word = None
            spans.append((i, m.end()))
            i = m.end()
            continue
        c = s[i]
        if c.isspace():
            close(i)
            word = None
            j = i
            while j < len(s) and s[j].isspace():
                j += 1
            if keep_whitespace:
                spans.append((i, j))
            i = j
            continue
        if _is_punctuation(c) or _is_cjk(c):
            close(i)
            word = None
            spans.append((i, i + 1))
        elif word is None:
            word = i
        i += 1
    close(len(s))
    out, byte, pos = [], 0, 0
    for a, b in spans:  # char spans -> byte offsets, in one pass
        byte += len(s[pos:a].encode("utf-8"))
        tok = s[a:b]
        n = len(tok.encode("utf-8"))
        out.append((tok, byte, byte + n))
        byte, pos = byte + n, b
    return out


class BasicTokenizer(TextTensorOperation):
    """A string -> tokens split at whitespace (dropped unless keep_whitespace), punctuation and
    CJK characters (each its own token); lower_case folds case and strips accents; the special
    tokens [UNK], [CLS], [SEP], [PAD], [MASK], [unusedN] stay whole (preserve_unused_token).
    with_offsets adds each token's byte offsets (start, limit) in the prepared text (after case
    folding or normalization, control characters as spaces), as MindSpore's do."""

    def __init__(self, lower_case=False, keep_whitespace=False, normalization_form=NormalizeForm.NONE,
                 preserve_unused_token=True, with_offsets=False):
        self.lower_case, self.keep_whitespace = bool(lower_case), bool(keep_whitespace)
        self.normalization_form = _check_form("BasicTokenizer", normalization_form)
        self.preserve_unused_token = bool(preserve_unused_token)
        self.with_offsets = bool(with_offsets)
        super().__init__()

    def _pieces(self, text):
        s = str(self._text(text, (0,)))
        return _basic_tokens(s, self.lower_case, self.keep_whitespace, self.normalization_form,
                             self.preserve_unused_token)

    def _apply(self, text):
        return _with_offsets(self._pieces(text), self.with_offsets)


def _wordpieces(word, start, table, suffix, max_bytes, unknown):
    """[(piece, byte start, byte limit)] of one word whose first byte is at `start`."""
    nbytes = len(word.encode("utf-8"))
    if nbytes > max_bytes:
        # MindSpore's limit here is the unknown token's length, not the word's.
        return [(unknown, start, start + len(unknown.encode("utf-8")))] if unknown else \
            [(word, start, start + nbytes)]
    pieces, i, byte = [], 0, start
    while i < len(word):
        end = len(word)
        while end > i:
            piece = word[i:end] if i == 0 else suffix + word[i:end]
            if piece in table:
                break
            end -= 1
        if end == i:  # no piece fits: the whole word is unknown
            return [(unknown if unknown else word, start, start + nbytes)]
        n = len(word[i:end].encode("utf-8"))
        pieces.append((word[i:end] if i == 0 else suffix + word[i:end], byte, byte + n))
        i, byte = end, byte + n
    return pieces


class WordpieceTokenizer(TextTensorOperation):
    """Words (a 1-d string column) -> their word pieces: the longest vocabulary entry from the
    left, then the longest suffix_indicator + rest, and so on; a word that cannot be split (or
    longer than max_bytes_per_token) becomes unknown_token ('' keeps the word). with_offsets adds
    each piece's byte offsets in its word (the suffix indicator not counted)."""

    def __init__(self, vocab, suffix_indicator="##", max_bytes_per_token=100, unknown_token="[UNK]",
                 with_offsets=False):
        if not isinstance(vocab, Vocab):
            raise TypeError(f"WordpieceTokenizer: vocab must be a text.Vocab, got {type(vocab).__name__}")
        self.vocab, self.suffix_indicator = vocab, suffix_indicator
        self.max_bytes_per_token, self.unknown_token = int(max_bytes_per_token), unknown_token
        self.with_offsets = bool(with_offsets)
        self._table = vocab.vocab()
        super().__init__()

    def _pieces(self, words, starts=None):
        out = []
        flat = self._text(words, (0, 1)).ravel().tolist()
        for k, w in enumerate(flat):
            out += _wordpieces(w, 0 if starts is None else starts[k], self._table, self.suffix_indicator,
                               self.max_bytes_per_token, self.unknown_token)
        return out

    def _apply(self, words):
        return _with_offsets(self._pieces(words), self.with_offsets)


class BertTokenizer(TextTensorOperation):
    """BasicTokenizer then WordpieceTokenizer: a string -> BERT's word pieces."""

    def __init__(self, vocab, suffix_indicator="##", max_bytes_per_token=100, unknown_token="[UNK]",
                 lower_case=False, keep_whitespace=False, normalization_form=NormalizeForm.NONE,
                 preserve_unused_token=True, with_offsets=False):
        self._basic = BasicTokenizer(lower_case, keep_whitespace, normalization_form,
                                     preserve_unused_token, with_offsets)
        self._wordpiece = WordpieceTokenizer(vocab, suffix_indicator, max_bytes_per_token, unknown_token,
                                             with_offsets)
        self.with_offsets = bool(with_offsets)
        super().__init__()

    def _apply(self, text):
        # Each word's pieces are placed at the word's offset in the prepared text.
        basic = [p for p in self._basic._pieces(text) if p[0]]
        pieces = self._wordpiece._pieces(np.array([t for t, _, _ in basic], dtype=str),
                                         [a for _, a, _ in basic]) if basic else []
        return _with_offsets(pieces, self.with_offsets)
