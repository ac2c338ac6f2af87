"""nn.MultiheadAttention's add_bias_kv and add_zero_attn (MindSpore/PyTorch): a learned key and
value appended after the projections, and an all-zero key and value per head, masks widened so
every query may attend them; in both modes against a numpy reference."""
import math

import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn

R = np.random.default_rng(17)


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _mha_ref(layer, q, k, v, attn_mask):
    e, h = layer.embed_dim, layer.num_heads
    d = e // h
    w, b = layer.in_proj_weight.asnumpy(), layer.in_proj_bias.asnumpy()
    qp, kp, vp = q @ w[:e].T + b[:e], k @ w[e:2 * e].T + b[e:2 * e], v @ w[2 * e:].T + b[2 * e:]
    L, N = q.shape[:2]
    if layer.add_bias_kv:
        kp = np.concatenate([kp, np.broadcast_to(layer.bias_k.asnumpy(), (1, N, e))])
        vp = np.concatenate([vp, np.broadcast_to(layer.bias_v.asnumpy(), (1, N, e))])
    S = kp.shape[0]
    qh = qp.reshape(L, N, h, d).transpose(1, 2, 0, 3)
    kh = kp.reshape(S, N, h, d).transpose(1, 2, 0, 3)
    vh = vp.reshape(S, N, h, d).transpose(1, 2, 0, 3)
    if layer.add_zero_attn:
        kh = np.concatenate([kh, np.zeros((N, h, 1, d))], 2)
        vh = np.concatenate([vh, np.zeros((N, h, 1, d))], 2)
    scores = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(d)
    mask = np.zeros(scores.shape[-2:], bool)
    mask[:, :attn_mask.shape[1]] = attn_mask  # the extra keys are never masked
    p = _softmax(np.where(mask, -np.inf, scores))
    out = (p @ vh).transpose(2, 0, 1, 3).reshape(L, N, e)
    return out @ layer.out_proj.weight.asnumpy().T + layer.out_proj.bias.asnumpy(), p.mean(1)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
@pytest.mark.parametrize("kv,zero", [(True, False), (False, True), (True, True)],
                         ids=["bias_kv", "zero_attn", "both"])
def test_extra_keys_vs_numpy(mode, kv, zero):
    ms.set_context(mode=mode)
    try:
        layer = nn.MultiheadAttention(8, 2, add_bias_kv=kv, add_zero_attn=zero, dtype=ms.float64)
        layer.in_proj_bias.set_data(Tensor(R.normal(size=24)))
        q, k, v = R.normal(size=(3, 2, 8)), R.normal(size=(4, 2, 8)), R.normal(size=(4, 2, 8))
        mask = np.triu(np.ones((3, 4), bool), 1)
        out, weights = layer(Tensor(q), Tensor(k), Tensor(v), attn_mask=Tensor(mask))
        want_out, want_w = _mha_ref(layer, q, k, v, mask)
        assert weights.shape == (2, 3, 4 + kv + zero)
        np.testing.assert_allclose(out.asnumpy(), want_out, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(weights.asnumpy(), want_w, rtol=1e-10, atol=1e-12)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_extra_key_parameters():
    layer = nn.MultiheadAttention(8, 2, add_bias_kv=True)
    names = [n for n, _ in layer.parameters_and_names()]
    assert "bias_k" in names and "bias_v" in names and layer.bias_k.shape == (1, 1, 8)
    assert "bias_k" not in [n for n, _ in nn.MultiheadAttention(8, 2).parameters_and_names()]
