"""Table rows for flash_attention and flash_attention_grad (fused attention, issue 19): float64
numpy references over the per-head (B, N, S, D) view of either layout."""
import numpy as np

from op_cases import OpCase, make_input


def _heads(x, layout, n):
    """(B, S, N*D) or (B, N, S, D) -> (B, N, S, D) in float64."""
    x = np.asarray(x, np.float64)
    if layout == "BNSD":
        return x
    b, s, h = x.shape
    return x.reshape(b, s, n, h // n).transpose(0, 2, 1, 3)


def _back(x, layout):
    if layout == "BNSD":
        return x
    b, n, s, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, n * d)


def _scores(q, k, head_num, scalar_value, input_layout):
    qh, kh = _heads(q, input_layout, head_num), _heads(k, input_layout, head_num)
    return qh, kh, scalar_value * qh @ kh.transpose(0, 1, 3, 2)


def flash_attention_ref(q, k, v, head_num, scalar_value=1.0, input_layout="BSH"):
    _, _, s = _scores(q, k, head_num, scalar_value, input_layout)
    m = s.max(-1, keepdims=True)
    lse = m + np.log(np.exp(s - m).sum(-1, keepdims=True))
    out = np.exp(s - lse) @ _heads(v, input_layout, head_num)
    return _back(out, input_layout).astype(q.dtype), lse[..., 0].astype(np.float32)


def flash_attention_grad_ref(q, k, v, out, dout, lse, dlse, head_num, scalar_value=1.0, input_layout="BSH"):
    qh, kh, s = _scores(q, k, head_num, scalar_value, input_layout)
    vh, oh, doh = (_heads(a, input_layout, head_num) for a in (v, out, dout))
    p = np.exp(s - np.asarray(lse, np.float64)[..., None])
    di = (doh * oh).sum(-1, keepdims=True) - np.asarray(dlse, np.float64)[..., None]
    ds = p * (doh @ vh.transpose(0, 1, 3, 2) - di)
    dq, dk, dv = scalar_value * ds @ kh, scalar_value * ds.transpose(0, 1, 3, 2) @ qh, p.transpose(0, 1, 3, 2) @ doh
    return tuple(_back(a, input_layout).astype(q.dtype) for a in (dq, dk, dv))


def _grad_gen(q_shape, kv_shape, attrs):
    def gen(rng, dtype):
        q, k, v, dout = (make_input(rng, s, dtype) for s in (q_shape, kv_shape, kv_shape, q_shape))
        out, lse = flash_attention_ref(q, k, v, **attrs)
        return [q, k, v, out, dout, lse, make_input(rng, lse.shape, np.float32)]
    return gen


F16 = dict(rtol=5e-3, atol=5e-3)
BSH = dict(head_num=2, scalar_value=0.5, input_layout="BSH")
BNSD = dict(head_num=3, scalar_value=0.35, input_layout="BNSD")

CASES = [
    OpCase("flash_attention", flash_attention_ref, [(2, 5, 8), (2, 7, 8), (2, 7, 8)], attrs=BSH,
           dtypes=("float32",)),
    OpCase("flash_attention", flash_attention_ref, [(1, 3, 4, 6), (1, 3, 9, 6), (1, 3, 9, 6)], attrs=BNSD,
           dtypes=("float32", "float16"), id="bnsd", **F16),
    OpCase("flash_attention_grad", flash_attention_grad_ref, _grad_gen((2, 5, 8), (2, 7, 8), BSH), attrs=BSH,
           dtypes=("float32",), keep_f32=(5, 6)),
    OpCase("flash_attention_grad", flash_attention_grad_ref, _grad_gen((1, 3, 4, 6), (1, 3, 9, 6), BNSD),
           attrs=BNSD, dtypes=("float32", "float16"), keep_f32=(5, 6), id="bnsd", **F16),
]
