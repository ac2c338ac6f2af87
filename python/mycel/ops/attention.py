"""mindspore.ops.flash_attention_score over the registry's fused `flash_attention` op. Plain Python,
so graph mode parses it like user code; the gradient is flash_attention's own (one fused backward
that recomputes the scores from the saved per-row logsumexp)."""
from mycel import _mycel
from mycel.common.validator import not_tensor_error

_ops = _mycel.ops

_WHO = "flash_attention_score"


def _unsupported(name, value, default):
    return ValueError(f"[{_WHO}] argument '{name}' is not supported on CPU (only {default!r}), "
                      f"got {value!r}")


def flash_attention_score(query, key, value, head_num, real_shift=None, drop_mask=None, padding_mask=None,
                          attn_mask=None, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None,
                          keep_prob=1.0, scalar_value=1.0, pre_tokens=2147483647, next_tokens=2147483647,
                          inner_precise=0, input_layout='BSH', sparse_mode=0):
    """attention_out = softmax(mask(scalar_value * query @ key^T, attn_mask)) @ value per head, as
    mindspore.ops.flash_attention_score computes it, fused: the L_q x L_k scores never reach memory.

    query (B, S1, N*D) and key, value (B, S2, N*D) with input_layout 'BSH', or (B, N, S1, D) and
    (B, N, S2, D) with 'BNSD'; float32, bfloat16 or float16 (all three of one dtype; products and
    the softmax in float32). head_num is N. attn_mask (optional): bool or uint8, 1/True masks the
    position out (MindSpore's meaning), of shape (S1, S2), (B, 1, S1, S2) or (B, N, S1, S2); a row
    with every key masked gives 0. Returns attention_out in the input's layout and dtype.

    The CPU subset: real_shift, drop_mask, padding_mask, prefix, actual_seq_qlen/kvlen must be
    None, keep_prob 1.0, pre_tokens/next_tokens their defaults, sparse_mode 0 (give a causal or
    banded mask as attn_mask instead); inner_precise is accepted and has no effect. Key and value
    must have query's number of heads. Differentiable with respect to query, key and value (first
    order)."""
    for name, arg in (("query", query), ("key", key), ("value", value)):
        if not isinstance(arg, _mycel.Tensor):
            raise not_tensor_error(_WHO, name, arg)
    for name, arg in (("real_shift", real_shift), ("drop_mask", drop_mask), ("padding_mask", padding_mask),
                      ("prefix", prefix), ("actual_seq_qlen", actual_seq_qlen),
                      ("actual_seq_kvlen", actual_seq_kvlen)):
        if arg is not None:
            raise _unsupported(name, arg, None)
    if keep_prob != 1.0:
        raise _unsupported("keep_prob", keep_prob, 1.0)
    if pre_tokens != 2147483647:
        raise _unsupported("pre_tokens", pre_tokens, 2147483647)
    if next_tokens != 2147483647:
        raise _unsupported("next_tokens", next_tokens, 2147483647)
    if sparse_mode != 0:
        raise _unsupported("sparse_mode", sparse_mode, 0)
    if attn_mask is not None and not isinstance(attn_mask, _mycel.Tensor):
        raise not_tensor_error(_WHO, "attn_mask", attn_mask)
    out = _ops.flash_attention(query, key, value, attn_mask, head_num=head_num, scalar_value=scalar_value,
                               input_layout=input_layout)
    return out[0]
