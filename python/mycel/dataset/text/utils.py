"""MindSpore's mindspore.dataset.text.utils path: the vocabularies, enums and string helpers
of mycel.dataset.text under their 1.x/2.x module name."""
from mycel.dataset.text.vocab import Vocab, to_str, to_bytes  # noqa: F401
from mycel.dataset.text.bert import NormalizeForm  # noqa: F401
from mycel.dataset.text.native_tokenizers import (JiebaMode, SentencePieceModel,  # noqa: F401
                                                  SentencePieceVocab, SPieceTokenizerLoadType,
                                                  SPieceTokenizerOutType)

__all__ = ["Vocab", "to_str", "to_bytes", "NormalizeForm", "JiebaMode", "SentencePieceModel",
           "SentencePieceVocab", "SPieceTokenizerLoadType", "SPieceTokenizerOutType"]
