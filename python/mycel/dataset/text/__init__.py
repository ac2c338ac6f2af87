"""Text transforms (MindSpore's mindspore.dataset.text): vocabularies, tokenizers, n-grams,
pretrained vectors.

String columns travel through the C++ engine as string tensors (src/mycel/data/string_tensor.h)
and reach these transforms as numpy str arrays. The transforms are Python functions run by the
map op's workers (with the GIL), or eagerly when called on a str, a list or a numpy array.
"""
from mycel.dataset.text.vocab import Vocab, to_str, to_bytes  # noqa: F401
from mycel.dataset.text.transforms import *  # noqa: F401,F403
from mycel.dataset.text.bert import *  # noqa: F401,F403
from mycel.dataset.text.native_tokenizers import *  # noqa: F401,F403
from mycel.dataset.text.vectors import *  # noqa: F401,F403  pretrained vectors, ToVectors
from mycel.dataset.text import transforms as _t, bert as _bert, native_tokenizers as _native, vectors as _vec

__all__ = (["Vocab", "to_str", "to_bytes"] + list(_t.__all__) + list(_bert.__all__)
           + list(_native.__all__) + list(_vec.__all__))
