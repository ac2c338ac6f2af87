"""Text transforms that run in C++ (src/mycel/data/text): JiebaTokenizer (Jieba's algorithm over
cppjieba-format dictionaries), UnicodeScriptTokenizer (ICU's script property),
WhitespaceTokenizer (ICU's White_Space), RegexTokenizer and RegexReplace (ICU's regular
expressions, as MindSpore's) and SentencePieceTokenizer with SentencePieceVocab (the
SentencePiece library). The tokenizers take a scalar string and give a 1-d string column (plus
uint32 byte offsets with with_offsets); RegexReplace maps a string column of any shape."""
import enum
import numbers
import os

from mycel import _mycel
from mycel.dataset.transforms import TensorOperation

__all__ = ["JiebaMode", "JiebaTokenizer", "UnicodeScriptTokenizer", "WhitespaceTokenizer",
           "RegexTokenizer", "RegexReplace", "SentencePieceModel",
           "SPieceTokenizerOutType", "SPieceTokenizerLoadType", "SentencePieceVocab",
           "SentencePieceTokenizer"]


def _check_bool(owner, name, v):
    if not isinstance(v, bool):
        raise TypeError(f"{owner}: {name} must be a bool, got {v!r}")
    return v


def _check_file(owner, name, path):
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{owner}: {name} must be a file path, got {path!r}")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"{owner}: {name} '{path}' is not a file")
    return path


class _Native(TensorOperation):
    """A C++ transform built on first use from _params (so that add_word and friends can still
    change it before that)."""

    def _set(self, **params):
        self._name, self._params, self._built = type(self).__name__, params, None

    @property
    def _handle(self):
        if self._built is None:
            self._built = _mycel.data.make_transform(self._name, **self._params)
        return self._built


class JiebaMode(enum.Enum):
    """MP: maximum-probability route through the dictionary; HMM: the hidden Markov model
    alone; MIX: MP, with runs of single characters re-cut by the HMM."""
    MIX = "mix"
    MP = "mp"
    HMM = "hmm"


class JiebaTokenizer(_Native):
    """Chinese word segmentation with Jieba's algorithm. hmm_path is cppjieba's hmm_model.utf8
    (start/transition/emission log probabilities of B, E, M, S), mp_path its dictionary
    ("word freq [tag]" lines); add_word/add_dict add words before the first use."""

    def __init__(self, hmm_path, mp_path, mode=JiebaMode.MIX, with_offsets=False):
        if not isinstance(mode, JiebaMode):
            raise TypeError(f"JiebaTokenizer: mode must be a JiebaMode, got {mode!r}")
        self.hmm_path = _check_file("JiebaTokenizer", "hmm_path", hmm_path)
        self.mp_path = _check_file("JiebaTokenizer", "mp_path", mp_path)
        self.mode = mode
        self.with_offsets = _check_bool("JiebaTokenizer", "with_offsets", with_offsets)
        self._words, self._freqs = [], []
        self._set(hmm_path=self.hmm_path, mp_path=self.mp_path, mode=mode.value,
                  with_offsets=self.with_offsets)
        # Load (and check) the dictionary and the model now, as MindSpore does.
        self._handle  # noqa: B018

    def add_word(self, word, freq=None):
        """Adds word with weight log(freq / total), or the dictionary's median weight when freq
        is None (cppjieba's rule)."""
        if not isinstance(word, str) or not word:
            raise TypeError(f"JiebaTokenizer.add_word: word must be a non-empty str, got {word!r}")
        if freq is not None and (not isinstance(freq, numbers.Integral) or isinstance(freq, bool)
                                 or freq < 0):
            raise ValueError(f"JiebaTokenizer.add_word: freq must be an int >= 0 or None, got {freq!r}")
        self._words.append(word)
        self._freqs.append(0 if freq is None else int(freq))
        self._set(**dict(self._params, words=list(self._words), freqs=list(self._freqs)))

    def add_dict(self, user_dict):
        """Adds the words of a {word: freq or None} dict, or of a file of "word [freq]" lines."""
        if isinstance(user_dict, dict):
            for w, f in user_dict.items():
                self.add_word(w, f)
            return
        path = _check_file("JiebaTokenizer.add_dict", "user_dict", user_dict)
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                fields = line.lstrip("\ufeff").split()
                if not fields:
                    continue
                if len(fields) > 2 or (len(fields) == 2 and not fields[1].isdigit()):
                    raise ValueError(f"JiebaTokenizer.add_dict: {path}:{lineno}: expected "
                                     f"'word [freq]', got {line.rstrip()!r}")
                self.add_word(fields[0], int(fields[1]) if len(fields) == 2 else None)


class UnicodeScriptTokenizer(_Native):
    """Splits where the Unicode script changes (ICU's script property) or whitespace starts or
    ends; whitespace tokens are dropped unless keep_whitespace."""

    def __init__(self, keep_whitespace=False, with_offsets=False):
        self.keep_whitespace = _check_bool("UnicodeScriptTokenizer", "keep_whitespace", keep_whitespace)
        self.with_offsets = _check_bool("UnicodeScriptTokenizer", "with_offsets", with_offsets)
        self._set(keep_whitespace=self.keep_whitespace, with_offsets=self.with_offsets)


def _check_str(owner, name, v):
    if not isinstance(v, str):
        raise TypeError(f"{owner}: {name} must be a str, got {v!r}")
    return v


class WhitespaceTokenizer(_Native):
    """Splits at runs of whitespace (ICU's White_Space property), which are dropped."""

    def __init__(self, with_offsets=False):
        self.with_offsets = _check_bool("WhitespaceTokenizer", "with_offsets", with_offsets)
        self._set(with_offsets=self.with_offsets)


class RegexTokenizer(_Native):
    """Splits a string at the matches of delim_pattern (ICU regular-expression syntax); a
    delimiter that keep_delim_pattern matches as a whole is kept as a token. The pattern is
    checked here: a bad one is a ValueError naming ICU's error and its offset."""

    def __init__(self, delim_pattern, keep_delim_pattern="", with_offsets=False):
        self.delim_pattern = _check_str("RegexTokenizer", "delim_pattern", delim_pattern)
        self.keep_delim_pattern = _check_str("RegexTokenizer", "keep_delim_pattern", keep_delim_pattern)
        self.with_offsets = _check_bool("RegexTokenizer", "with_offsets", with_offsets)
        self._set(delim_pattern=delim_pattern, keep_delim_pattern=keep_delim_pattern,
                  with_offsets=self.with_offsets)
        self._handle  # compile now, so a bad pattern fails where it is written


class RegexReplace(_Native):
    """Replaces the matches of pattern (ICU syntax) in every string of a column by replace, where
    $1 or ${name} stand for groups; all matches, or the first with replace_all=False."""

    def __init__(self, pattern, replace, replace_all=True):
        self.pattern = _check_str("RegexReplace", "pattern", pattern)
        self.replace = _check_str("RegexReplace", "replace", replace)
        self.replace_all = _check_bool("RegexReplace", "replace_all", replace_all)
        self._set(pattern=pattern, replace=replace, replace_all=self.replace_all)
        self._handle  # compile now, so a bad pattern fails where it is written


class SentencePieceModel(str, enum.Enum):
    """The SentencePiece model types."""
    UNIGRAM = "unigram"
    BPE = "bpe"
    CHAR = "char"
    WORD = "word"


class SPieceTokenizerOutType(enum.Enum):
    """SentencePieceTokenizer's output: the pieces (STRING) or their ids (INT, int32)."""
    STRING = "string"
    INT = "int"


class SPieceTokenizerLoadType(enum.Enum):
    """Where a SentencePieceTokenizer's model comes from (MindSpore 1.x names)."""
    FILE = 0
    MODEL = 1


def _train(owner, sentences, files, vocab_size, character_coverage, model_type, params):
    if not isinstance(vocab_size, numbers.Integral) or isinstance(vocab_size, bool) or vocab_size < 1:
        raise ValueError(f"{owner}: vocab_size must be an int >= 1, got {vocab_size!r}")
    if not isinstance(character_coverage, numbers.Real) or not 0.98 <= character_coverage <= 1.0:
        raise ValueError(f"{owner}: character_coverage must be in [0.98, 1.0], got {character_coverage!r}")
    if not isinstance(model_type, SentencePieceModel):
        raise TypeError(f"{owner}: model_type must be a SentencePieceModel, got {model_type!r}")
    if params is not None and not isinstance(params, dict):
        raise TypeError(f"{owner}: params must be a dict of trainer options, got {params!r}")
    options = {str(k): str(v).lower() if isinstance(v, bool) else str(v)
               for k, v in (params or {}).items()}
    options.update(vocab_size=str(int(vocab_size)), character_coverage=repr(float(character_coverage)),
                   model_type=model_type.value)
    return SentencePieceVocab(_mycel.data.sentencepiece_train(sentences, files, options))


class SentencePieceVocab:
    """A trained SentencePiece model (its serialized bytes), for SentencePieceTokenizer."""

    def __init__(self, model=None):
        if model is not None:
            if not isinstance(model, bytes):
                raise TypeError(f"SentencePieceVocab: model must be bytes, got {type(model).__name__}")
            _mycel.data.sentencepiece_check(model)
        self._model = model

    @classmethod
    def from_file(cls, file_path, vocab_size, character_coverage, model_type, params):
        """A model trained on the text files file_path (one sentence per line)."""
        owner = "SentencePieceVocab.from_file"
        if isinstance(file_path, (str, os.PathLike)):
            file_path = [file_path]
        if not isinstance(file_path, (list, tuple)) or not file_path:
            raise TypeError(f"{owner}: file_path must be a non-empty list of paths, got {file_path!r}")
        files = [_check_file(owner, "file_path", p) for p in file_path]
        return _train(owner, [], files, vocab_size, character_coverage, model_type, params)

    @classmethod
    def from_dataset(cls, dataset, col_names, vocab_size, character_coverage, model_type, params):
        """A model trained on the strings of the dataset's columns col_names (every string of
        every row is one sentence)."""
        owner = "SentencePieceVocab.from_dataset"
        import numpy as np
        names = dataset.get_col_names()
        cols = [col_names] if isinstance(col_names, str) else list(col_names or names)
        for c in cols:
            if c not in names:
                raise ValueError(f"{owner}: column '{c}' is not among {names}")
        sentences = []
        for row in dataset.create_dict_iterator(num_epochs=1, output_numpy=True):
            for c in cols:
                a = np.asarray(row[c])
                if a.dtype.kind not in "US":
                    raise TypeError(f"{owner}: column '{c}' must hold strings, got {a.dtype}")
                sentences += [s.decode("utf-8") if isinstance(s, bytes) else s for s in a.ravel().tolist()]
        if not sentences:
            raise ValueError(f"{owner}: the dataset has no rows")
        return _train(owner, sentences, [], vocab_size, character_coverage, model_type, params)

    @classmethod
    def save_model(cls, vocab, path, filename):
        """Writes the model to path/filename (atomically: a temporary file, then a rename)."""
        if not isinstance(vocab, SentencePieceVocab) or vocab._model is None:
            raise TypeError("SentencePieceVocab.save_model: vocab must be a trained SentencePieceVocab")
        if not os.path.isdir(path):
            raise ValueError(f"SentencePieceVocab.save_model: path '{path}' is not a directory")
        target = os.path.join(path, filename)
        tmp = f"{target}.tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(vocab._model)
        os.replace(tmp, target)

    def __repr__(self):
        return f"SentencePieceVocab({len(self._model or b'')} bytes)"


class SentencePieceTokenizer(_Native):
    """Encodes a string with a SentencePiece model: mode is a SentencePieceVocab or the path of
    a .model file; out_type STRING gives the pieces, INT their int32 ids."""

    def __init__(self, mode, out_type=SPieceTokenizerOutType.STRING):
        if not isinstance(out_type, SPieceTokenizerOutType):
            raise TypeError(f"SentencePieceTokenizer: out_type must be a SPieceTokenizerOutType, got {out_type!r}")
        if isinstance(mode, SentencePieceVocab):
            if mode._model is None:
                raise ValueError("SentencePieceTokenizer: the vocab holds no model")
            params = {"model": mode._model}
        else:
            params = {"model_file": _check_file("SentencePieceTokenizer", "mode", mode)}
        self.mode, self.out_type = mode, out_type
        self._set(out_type=out_type.value, **params)
        self._handle  # noqa: B018  (load the model now: a bad file fails here)

    def __repr__(self):
        return f"SentencePieceTokenizer(out_type={self.out_type})"
