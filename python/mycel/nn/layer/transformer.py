"""MultiheadAttention and TransformerEncoderLayer (sequence-first unless batch_first)."""
import math
import os

from mycel import ops
from mycel.common import dtype as mstype
from mycel.common.initializer import Zero
from mycel.common.layer_checks import input_dtype_error
from mycel.common.validator import check_rank, is_bool_dtype
from mycel.nn.cell import Cell
from mycel.nn.layer._util import check_int, make_param
from mycel.nn.layer.activation import GELU, get_activation
from mycel.nn.layer.basic import Dense, Dropout
from mycel.nn.layer.normalization import LayerNorm
from mycel.ops.primitive import constexpr


@constexpr
def _flash_attention_enabled():
    """MYCEL_FLASH_ATTENTION=1 puts MultiheadAttention on ops.flash_attention_score where it
    applies; read when the graph is built (each call in PyNative). Off by default: at the
    harness's sizes (L 128, head 32) the fused kernels are not yet faster than oneDNN's matmuls
    and softmax (docs/nn.md, "Fused attention")."""
    return os.environ.get("MYCEL_FLASH_ATTENTION", "0") == "1"


def _masked(scores, mask):
    """Adds a float mask; a bool mask puts -inf where it is True (that position is not attended)."""
    if is_bool_dtype(mask.dtype):
        return ops.select(mask, ops.fill(scores.dtype, (), -math.inf), scores)
    return scores + mask


def _pad_key(mask):
    """A mask with one more key column that every query may attend (False, or 0 for a float mask)."""
    if mask is None:
        return mask
    return ops.concat((mask, ops.zeros_like(mask[..., :1])), -1)


class MultiheadAttention(Cell):
    """softmax(q k^T / sqrt(d)) v over num_heads heads of size embed_dim / num_heads. Inputs are
    (L, N, E) or (N, L, E) with batch_first; returns (output, weights) with weights (N, L, S)
    averaged over heads, (N, heads, L, S) if not average_attn_weights, None if not need_weights.
    key and value may both be None: self-attention on query."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, has_bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, dtype=mstype.float32):
        super().__init__()
        who = "MultiheadAttention"
        self.embed_dim = check_int(embed_dim, who, "embed_dim")
        self.num_heads = check_int(num_heads, who, "num_heads")
        if embed_dim % num_heads:
            raise ValueError(f"{who}: embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        self.kdim = embed_dim if kdim is None else check_int(kdim, who, "kdim")
        self.vdim = embed_dim if vdim is None else check_int(vdim, who, "vdim")
        self.head_dim = embed_dim // num_heads
        self.batch_first = bool(batch_first)
        self.has_bias = bool(has_bias)
        self.same_dims = self.kdim == embed_dim and self.vdim == embed_dim
        e = embed_dim
        if self.same_dims:
            self.in_proj_weight = make_param("xavier_uniform", (3 * e, e), dtype, "in_proj_weight")
        else:
            self.q_proj_weight = make_param("xavier_uniform", (e, e), dtype, "q_proj_weight")
            self.k_proj_weight = make_param("xavier_uniform", (e, self.kdim), dtype, "k_proj_weight")
            self.v_proj_weight = make_param("xavier_uniform", (e, self.vdim), dtype, "v_proj_weight")
        self.in_proj_bias = make_param(Zero(), (3 * e,), dtype, "in_proj_bias") if has_bias else None
        # add_bias_kv: one more key and value (learned) every query may attend to; add_zero_attn:
        # one more all-zero key and value per head (PyTorch's and MindSpore's options).
        self.add_bias_kv, self.add_zero_attn = bool(add_bias_kv), bool(add_zero_attn)
        self.bias_k = make_param("xavier_normal", (1, 1, e), dtype, "bias_k") if add_bias_kv else None
        self.bias_v = make_param("xavier_normal", (1, 1, e), dtype, "bias_v") if add_bias_kv else None
        self.out_proj = Dense(e, e, has_bias=has_bias, bias_init="zeros", dtype=dtype)
        self.dropout = Dropout(p=dropout)
        self.dropout_p = float(dropout)  # 0 (or eval mode): the fused attention applies

    def construct(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                  average_attn_weights=True):
        check_rank("MultiheadAttention", "query", query.ndim, (3,))
        # key and value both None: self-attention on query (how TransformerEncoderLayer calls it,
        # since graph mode cannot compare tensors by identity).
        self_attention = key is None and value is None
        if self_attention:
            key, value = query, query
        elif key is None or value is None:
            raise TypeError("MultiheadAttention: key and value must both be tensors, or both None "
                            "(self-attention on query)")
        weight = self.in_proj_weight if self.same_dims else self.q_proj_weight
        if query.dtype != weight.dtype:  # say which dtype came from the user, which from the layer
            raise TypeError(input_dtype_error("MultiheadAttention", query.dtype, weight.dtype, "query"))
        heads, d = self.num_heads, self.head_dim
        # The fused attention where it computes the same thing: no weights asked for, no masks, no
        # extra key, no active dropout; not float64 (its kernel computes in float32).
        if (_flash_attention_enabled() and not need_weights and attn_mask is None and key_padding_mask is None
                and not self.add_bias_kv and not self.add_zero_attn and query.dtype != mstype.float64
                and (not self.training or self.dropout_p == 0.0)):
            return self._fused(query, key, value, self_attention), None
        # Self-attention: the input is moved to the heads' layout (N * heads, L, d) once per
        # projection, from either input layout, and batch_first transposes neither the input nor
        # the output (the general path with batch_first: four more copies of L x N x E forward, as
        # many backward; 47.7 -> 46.3 ms for the harness's transformer step). The projections stay
        # three matmuls against slices of in_proj_weight: one matmul whose output is split costs a
        # copy of the three (and a concat backward), which measured slower (53 ms).
        shared = self_attention and self.same_dims and not self.add_bias_kv
        if shared:
            if self.batch_first:
                bsz, tgt_len = query.shape[0], query.shape[1]
            else:
                tgt_len, bsz = query.shape[0], query.shape[1]
            src_len = tgt_len
            wq, wk, wv, bq, bk, bv = self._projections()
            # (N, L, E) -> (N, heads, L, d), or (L, N, E) -> (N, heads, L, d)
            perm = (0, 2, 1, 3) if self.batch_first else (1, 2, 0, 3)
            lead = (query.shape[0], query.shape[1], heads, d)
            # The 1/sqrt(d) scale goes on q's weight and bias (E x E) rather than on q (N L x E):
            # a 128x128 multiply instead of 2048x128, forward and backward, in the harness's step.
            scale = 1.0 / math.sqrt(d)
            q = ops.transpose(ops.reshape(ops.dense(query, wq * scale, None if bq is None else bq * scale),
                                          lead), perm)
            k = ops.transpose(ops.reshape(ops.dense(query, wk, bk), lead), perm)
            v = ops.transpose(ops.reshape(ops.dense(query, wv, bv), lead), perm)
            q = ops.reshape(q, (bsz * heads, tgt_len, d))
            k = ops.reshape(k, (bsz * heads, src_len, d))
            v = ops.reshape(v, (bsz * heads, src_len, d))
        else:
            if self.batch_first:
                query = ops.transpose(query, (1, 0, 2))
                key = ops.transpose(key, (1, 0, 2))
                value = ops.transpose(value, (1, 0, 2))
            tgt_len, bsz, src_len = query.shape[0], query.shape[1], key.shape[0]
            wq, wk, wv, bq, bk, bv = self._projections()
            q = ops.dense(query, wq, bq) * (1.0 / math.sqrt(d))
            k = ops.dense(key, wk, bk)
            v = ops.dense(value, wv, bv)
            if self.add_bias_kv:
                k = ops.concat((k, ops.broadcast_to(self.bias_k, (1, bsz, self.embed_dim))), 0)
                v = ops.concat((v, ops.broadcast_to(self.bias_v, (1, bsz, self.embed_dim))), 0)
                attn_mask, key_padding_mask = _pad_key(attn_mask), _pad_key(key_padding_mask)
                src_len = src_len + 1
            # (L, N, E) -> (N * heads, L, d): one batched matmul for every head.
            q = ops.transpose(ops.reshape(q, (tgt_len, -1, d)), (1, 0, 2))
            k = ops.transpose(ops.reshape(k, (src_len, -1, d)), (1, 0, 2))
            v = ops.transpose(ops.reshape(v, (src_len, -1, d)), (1, 0, 2))
        if self.add_zero_attn:
            zeros = ops.zeros((k.shape[0], 1, d), k.dtype)
            k, v = ops.concat((k, zeros), 1), ops.concat((v, zeros), 1)
            attn_mask, key_padding_mask = _pad_key(attn_mask), _pad_key(key_padding_mask)
            src_len = src_len + 1
        scores = ops.matmul(q, k, transpose_b=True)
        if attn_mask is not None:
            scores = _masked(scores, attn_mask)
        if key_padding_mask is not None:
            scores = ops.reshape(scores, (bsz, heads, tgt_len, src_len))
            scores = _masked(scores, ops.reshape(key_padding_mask, (bsz, 1, 1, src_len)))
            scores = ops.reshape(scores, (-1, tgt_len, src_len))
        weights = ops.softmax(scores, axis=-1)
        out = ops.matmul(self.dropout(weights), v)
        if shared and self.batch_first:  # (N * heads, L, d) -> (N, L, E), the input's layout
            out = ops.reshape(ops.transpose(ops.reshape(out, (bsz, heads, tgt_len, d)), (0, 2, 1, 3)),
                              (bsz, tgt_len, self.embed_dim))
            out = self.out_proj(out)
        else:
            out = ops.reshape(ops.transpose(out, (1, 0, 2)), (tgt_len, bsz, self.embed_dim))
            out = self.out_proj(out)
            if self.batch_first:
                out = ops.transpose(out, (1, 0, 2))
        if not need_weights:
            return out, None
        weights = ops.reshape(weights, (bsz, heads, tgt_len, src_len))
        if average_attn_weights:
            weights = ops.mean(weights, axis=1)
        return out, weights

    def _projections(self):
        """q, k and v's weights and biases (biases None without has_bias): slices of the packed
        in_proj_weight / in_proj_bias, or the three separate weights when kdim/vdim differ."""
        if self.same_dims:
            wq, wk, wv = ops.split(self.in_proj_weight, axis=0, output_num=3)
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        bq, bk, bv = None, None, None
        if self.has_bias:
            bq, bk, bv = ops.split(self.in_proj_bias, axis=0, output_num=3)
        return wq, wk, wv, bq, bk, bv

    def _fused(self, query, key, value, self_attention):
        """ops.flash_attention_score on the projections in its 'BSH' layout (N, L, E): no head
        transposes, and neither the scores nor the probabilities reach memory (PyTorch's
        MultiheadAttention takes its fused scaled_dot_product_attention in the same case)."""
        wq, wk, wv, bq, bk, bv = self._projections()
        if not self.batch_first:  # (L, N, E) -> (N, L, E)
            query = ops.transpose(query, (1, 0, 2))
            if self_attention:
                key, value = query, query
            else:
                key, value = ops.transpose(key, (1, 0, 2)), ops.transpose(value, (1, 0, 2))
        # The 1/sqrt(d) scale on q's weight and bias, as the composed path does.
        scale = 1.0 / math.sqrt(self.head_dim)
        q = ops.dense(query, wq * scale, None if bq is None else bq * scale)
        out = ops.flash_attention_score(q, ops.dense(key, wk, bk), ops.dense(value, wv, bv), self.num_heads)
        out = self.out_proj(out)
        if not self.batch_first:
            out = ops.transpose(out, (1, 0, 2))
        return out


class TransformerEncoderLayer(Cell):
    """Self-attention then a feed-forward block, each with a residual connection and LayerNorm
    (after the residual by default, before the block with norm_first)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, dtype=mstype.float32):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, dtype=dtype)
        self.linear1 = Dense(d_model, dim_feedforward, dtype=dtype)
        self.dropout = Dropout(p=dropout)
        self.linear2 = Dense(dim_feedforward, d_model, dtype=dtype)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype)
        self.norm2 = LayerNorm((d_model,), epsilon=layer_norm_eps, dtype=dtype)
        self.dropout1 = Dropout(p=dropout)
        self.dropout2 = Dropout(p=dropout)
        # "gelu" here is the exact (erf) form, as in PyTorch's encoder layer.
        self.activation = GELU(approximate=False) if activation == "gelu" else get_activation(activation)

    def construct(self, src, src_mask=None, src_key_padding_mask=None):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask):
        out, _ = self.self_attn(x, None, None, key_padding_mask, False, attn_mask)  # self-attention
        return self.dropout1(out)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))
