"""Embedding: a lookup table of vocab_size rows."""

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.initializer import initializer
from mycel.common.layer_checks import ids_dtype_error
from mycel.common.parameter import Parameter
from mycel.common.tensor import Tensor
from mycel.common.validator import append_dim
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_int


class Embedding(Cell):
    """Maps integer ids of any shape to rows of `embedding_table` (vocab_size, embedding_size);
    output shape ids.shape + (embedding_size,). The padding_idx row starts at zero. With
    use_one_hot the lookup is one_hot(ids) @ table (a dense gradient)."""

    def __init__(self, vocab_size, embedding_size, use_one_hot=False, embedding_table="normal",
                 dtype=mstype.int32, padding_idx=None):
        super().__init__()
        self.vocab_size = check_int(vocab_size, "Embedding", "vocab_size")
        self.embedding_size = check_int(embedding_size, "Embedding", "embedding_size")
        self.use_one_hot = bool(use_one_hot)
        if padding_idx is not None:
            if not -vocab_size <= padding_idx < vocab_size:
                raise ValueError(f"Embedding: padding_idx must be in [{-vocab_size}, {vocab_size}), got {padding_idx}")
            padding_idx %= vocab_size
        self.padding_idx = padding_idx
        table = initializer(embedding_table, (vocab_size, embedding_size), mstype.float32)
        if padding_idx is not None:
            a = table.asnumpy().copy()
            a[padding_idx] = 0
            table = Tensor(a)
        self.embedding_table = Parameter(table, name="embedding_table")

    def construct(self, ids):
        if ids.dtype != mstype.int32 and ids.dtype != mstype.int64:
            raise TypeError(ids_dtype_error("Embedding", ids.dtype))
        if self.use_one_hot:
            flat = ops.one_hot(ops.reshape(ids, (-1,)), depth=self.vocab_size,
                               dtype=self.embedding_table.dtype)
            out = ops.matmul(flat, self.embedding_table)
            return ops.reshape(out, append_dim(ids.shape, self.embedding_size))
        return ops.embedding(ids, self.embedding_table)

    def extend_repr(self):
        return f"vocab_size={self.vocab_size}, embedding_size={self.embedding_size}, padding_idx={self.padding_idx}"
