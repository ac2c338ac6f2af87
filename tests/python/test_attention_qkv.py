"""Self-attention (MultiheadAttention with key and value None, how TransformerEncoderLayer calls
it: the heads' layout straight from the input's, no input or output transpose): outputs and
gradients equal to the general path (query passed as key and value), and the output equal to a
numpy reference; both modes."""
import math

import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops

R = np.random.default_rng(23)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture
def mode_ctx(mode):
    ms.set_context(mode=mode)
    yield mode
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _self_attention_ref(layer, x, batch_first):
    """numpy: softmax(q k^T / sqrt(d)) v per head, x (L, N, E) or (N, L, E)."""
    if batch_first:
        x = x.transpose(1, 0, 2)
    e, h = layer.embed_dim, layer.num_heads
    d = e // h
    w = layer.in_proj_weight.asnumpy()
    b = layer.in_proj_bias.asnumpy() if layer.has_bias else np.zeros(3 * e)
    L, N = x.shape[:2]
    heads = [(x @ w[i * e:(i + 1) * e].T + b[i * e:(i + 1) * e]).reshape(L, N, h, d).transpose(1, 2, 0, 3)
             for i in range(3)]
    q, k, v = heads
    p = _softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d))
    out = (p @ v).transpose(2, 0, 1, 3).reshape(L, N, e) @ layer.out_proj.weight.asnumpy().T
    if layer.has_bias:
        out = out + layer.out_proj.bias.asnumpy()
    return out.transpose(1, 0, 2) if batch_first else out


def _layer(batch_first, has_bias):
    layer = nn.MultiheadAttention(8, 2, has_bias=has_bias, batch_first=batch_first, dtype=ms.float64)
    if has_bias:
        layer.in_proj_bias.set_data(Tensor(R.normal(size=24)))
        layer.out_proj.bias.set_data(Tensor(R.normal(size=8)))
    return layer


class _Shared(nn.Cell):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def construct(self, x):
        return self.layer(x, None, None, need_weights=False)[0]


class _Plain(_Shared):
    def construct(self, x):
        return self.layer(x, x, x, need_weights=False)[0]


@MODES
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
@pytest.mark.parametrize("has_bias", [True, False], ids=["bias", "no_bias"])
def test_shared_projection_equals_plain_and_numpy(mode_ctx, batch_first, has_bias):
    layer = _layer(batch_first, has_bias)
    x = R.normal(size=(5, 3, 8))
    shared = _Shared(layer)(Tensor(x)).asnumpy()
    plain = _Plain(layer)(Tensor(x)).asnumpy()
    np.testing.assert_allclose(shared, plain, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(shared, _self_attention_ref(layer, x, batch_first), rtol=1e-10, atol=1e-12)


class _Loss(nn.Cell):
    def __init__(self, net, c):
        super().__init__()
        self.net, self.c = net, c

    def construct(self, x):
        return ops.sum(self.net(x) * self.c)


@MODES
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
def test_shared_projection_gradients_equal_plain(mode_ctx, batch_first):
    layer = _layer(batch_first, True)
    x = Tensor(R.normal(size=(4, 3, 8)))
    c = Tensor(R.normal(size=(4, 3, 8)))
    params = layer.trainable_params()
    grads = {}
    for name, net in (("shared", _Shared(layer)), ("plain", _Plain(layer))):
        gx, gw = ms.grad(_Loss(net, c), grad_position=0, weights=params)(x)
        grads[name] = [gx.asnumpy()] + [g.asnumpy() for g in gw]
    assert len(grads["shared"]) == 1 + len(params)
    for a, b in zip(grads["shared"], grads["plain"]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@MODES
def test_encoder_layer_uses_self_attention(mode_ctx):
    """TransformerEncoderLayer's attention block against the numpy reference (dropout 0)."""
    enc = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, dtype=ms.float64)
    x = R.normal(size=(3, 5, 8))
    out = enc(Tensor(x)).asnumpy()
    attn = _self_attention_ref(enc.self_attn, x, True)
    h = x + attn
    ln1 = enc.norm1
    mu, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
    h = (h - mu) / np.sqrt(var + 1e-5) * ln1.gamma.asnumpy() + ln1.beta.asnumpy()
    ff = np.maximum(h @ enc.linear1.weight.asnumpy().T + enc.linear1.bias.asnumpy(), 0)
    ff = ff @ enc.linear2.weight.asnumpy().T + enc.linear2.bias.asnumpy()
    h = h + ff
    mu, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
    want = (h - mu) / np.sqrt(var + 1e-5) * enc.norm2.gamma.asnumpy() + enc.norm2.beta.asnumpy()
    np.testing.assert_allclose(out, want, rtol=1e-9, atol=1e-10)


@MODES
@pytest.mark.parametrize("kv,zero", [(True, False), (False, True)], ids=["bias_kv", "zero_attn"])
def test_self_attention_with_extra_keys_equals_plain(mode_ctx, kv, zero):
    layer = nn.MultiheadAttention(8, 2, add_bias_kv=kv, add_zero_attn=zero, batch_first=True, dtype=ms.float64)
    x = Tensor(R.normal(size=(3, 5, 8)))
    shared = _Shared(layer)(x).asnumpy()
    np.testing.assert_allclose(shared, _Plain(layer)(x).asnumpy(), rtol=1e-12, atol=1e-13)


def test_key_or_value_alone_none_is_an_error():
    layer = nn.MultiheadAttention(8, 2)
    x = Tensor(R.normal(size=(2, 1, 8)).astype(np.float32))
    with pytest.raises(TypeError, match="key and value must both be tensors, or both None"):
        layer(x, None, x)
