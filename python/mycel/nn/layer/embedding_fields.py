"""MindSpore's MultiFieldEmbeddingLookup: embeddings of (id, value, field) triples pooled per
field (SUM, MEAN or MAX), the sparse-feature layer of recommendation models."""
from mycel import ops
from mycel.common import dtype as mstype
from mycel.nn.layer._util import check_int
from mycel.nn.layer.layers_wrap import EmbeddingLookup


class MultiFieldEmbeddingLookup(EmbeddingLookup):
    """construct(input_indices, input_values, field_ids), each (batch, seq): row input_indices
    of the table times input_values, pooled over the positions of each field id in [0,
    field_size) by operator 'SUM', 'MEAN' (sum / count) or 'MAX'; (batch, field_size,
    embedding_size), zeros for a field with no positions. max_norm clips looked-up rows."""

    def __init__(self, vocab_size, embedding_size, field_size, param_init="normal", target="CPU",
                 slice_mode="batch_slice", feature_num_list=None, max_norm=None, sparse=True, operator="SUM",
                 dtype=mstype.float32):
        super().__init__(vocab_size, embedding_size, param_init, target, slice_mode, feature_num_list, max_norm,
                         sparse, 0, dtype)
        self.field_size = check_int(field_size, "MultiFieldEmbeddingLookup", "field_size")
        if operator not in ("SUM", "MEAN", "MAX"):
            raise ValueError(f"MultiFieldEmbeddingLookup: operator must be 'SUM', 'MEAN' or 'MAX', got {operator!r}")
        self.operator = operator

    def construct(self, input_indices, input_values, field_ids):
        rows = ops.gather(self.embedding_table, input_indices, 0)                     # (B, S, D)
        if self.max_norm is not None:
            norm = ops.sqrt(ops.sum(rows * rows, (-1,), True))
            rows = rows * ops.minimum(self.max_norm / ops.maximum(norm, 1e-12), 1.0)
        rows = rows * ops.expand_dims(ops.cast(input_values, rows.dtype), -1)
        member = ops.one_hot(ops.cast(field_ids, mstype.int64), self.field_size, 1.0, 0.0, -1, rows.dtype)  # (B, S, F)
        if self.operator == "MAX":
            hit = ops.greater(ops.expand_dims(member, -1), 0.0)                       # (B, S, F, 1)
            masked = ops.select(ops.broadcast_to(hit, rows.shape[:2] + (self.field_size, rows.shape[2])),
                                ops.broadcast_to(ops.expand_dims(rows, 2), rows.shape[:2] + (self.field_size,
                                                                                           rows.shape[2])),
                                ops.zeros(rows.shape[:2] + (self.field_size, rows.shape[2]), rows.dtype) - 3.4e38)
            best = ops.max(masked, (1,))
            any_hit = ops.greater(ops.sum(member, (1,)), 0.0)
            return ops.select(ops.broadcast_to(ops.expand_dims(any_hit, -1), best.shape), best, ops.zeros_like(best))
        pooled = ops.matmul(ops.transpose(member, (0, 2, 1)), rows)                   # (B, F, D)
        if self.operator == "MEAN":
            count = ops.expand_dims(ops.sum(member, (1,)), -1)
            pooled = pooled / ops.maximum(count, ops.ones_like(count))
        return pooled


__all__ = ["MultiFieldEmbeddingLookup"]
