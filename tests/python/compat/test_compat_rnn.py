"""nn.GRU and nn.RNN (multi-step, multi-layer, bidirectional, batch_first) as MindSpore defines
them, in both modes, against numpy loops written from the published equations."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn

R = np.random.default_rng(5)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _sig(v):
    return 1 / (1 + np.exp(-v))


def _gru_step(x, h, w_ih, w_hh, b_ih, b_hh):
    H = h.shape[1]
    gx, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    r = _sig(gx[:, :H] + gh[:, :H])
    z = _sig(gx[:, H:2 * H] + gh[:, H:2 * H])
    n = np.tanh(gx[:, 2 * H:] + r * gh[:, 2 * H:])
    return (1 - z) * n + z * h


def _rnn_step(act):
    return lambda x, h, w_ih, w_hh, b_ih, b_hh: act(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh)


def _reference(layer, x, h0, step):
    """Layers in order, directions side by side; x (T, N, in)."""
    p = {n: v.asnumpy().astype(np.float64) for n, v in layer.parameters_and_names()}
    D = 2 if layer.bidirectional else 1
    hs = []
    for layer_i in range(layer.num_layers):
        outs = []
        for d in range(D):
            sfx = f"_l{layer_i}" + ("_reverse" if d else "")
            h = h0[layer_i * D + d]
            out = [None] * x.shape[0]
            order = range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])
            for t in order:
                h = step(x[t], h, p["weight_ih" + sfx], p["weight_hh" + sfx], p["bias_ih" + sfx],
                         p["bias_hh" + sfx])
                out[t] = h
            outs.append(np.stack(out))
            hs.append(h)
        x = np.concatenate(outs, axis=2)
    return x, np.stack(hs)


CASES = [("gru", dict()), ("gru", dict(num_layers=2, bidirectional=True)), ("gru", dict(batch_first=True)),
         ("rnn_tanh", dict(num_layers=2)), ("rnn_relu", dict(bidirectional=True, batch_first=True))]


@MODES
@pytest.mark.parametrize("kind,kw", CASES, ids=[f"{k}-{'-'.join(kw) or 'plain'}" for k, kw in CASES])
def test_gru_rnn_vs_numpy(mode, kind, kw):
    ms.set_context(mode=mode)
    if kind == "gru":
        layer, step = nn.GRU(3, 4, **kw), _gru_step
    else:
        act = "relu" if kind == "rnn_relu" else "tanh"
        layer = nn.RNN(3, 4, nonlinearity=act, **kw)
        step = _rnn_step((lambda v: np.maximum(v, 0)) if act == "relu" else np.tanh)
    T, N = 5, 2
    D = 2 if layer.bidirectional else 1
    x = R.normal(size=(T, N, 3)).astype(np.float32)
    h0 = R.normal(size=(layer.num_layers * D, N, 4)).astype(np.float32)
    xin = x.transpose(1, 0, 2) if layer.batch_first else x
    out, hn = layer(Tensor(xin.copy()), Tensor(h0))
    want_out, want_h = _reference(layer, x.astype(np.float64), h0.astype(np.float64), step)
    if layer.batch_first:
        want_out = want_out.transpose(1, 0, 2)
    np.testing.assert_allclose(out.asnumpy(), want_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(hn.asnumpy(), want_h, rtol=1e-4, atol=1e-5)
    # no initial state: zeros
    out0, _ = layer(Tensor(xin.copy()))
    want0, _ = _reference(layer, x.astype(np.float64), np.zeros_like(h0, np.float64), step)
    np.testing.assert_allclose(out0.asnumpy(), want0.transpose(1, 0, 2) if layer.batch_first else want0,
                               rtol=1e-4, atol=1e-5)


def test_gru_rnn_parameters_and_errors():
    gru = nn.GRU(3, 4, num_layers=2, bidirectional=True)
    names = [n for n, _ in gru.parameters_and_names()]
    assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"] and len(names) == 16
    assert gru.weight_ih_l0.shape == (12, 3) and gru.weight_ih_l1.shape == (12, 8)
    assert nn.RNN(3, 4, has_bias=False).weight_hh_l0.shape == (4, 4)
    assert len(list(nn.RNN(3, 4, has_bias=False).get_parameters())) == 2
    with pytest.raises(ValueError, match="RNN: nonlinearity must be 'tanh' or 'relu', got 'gelu'"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="GRU"):
        nn.GRU(3, 4)(Tensor(np.zeros((2, 3), np.float32)))
    with pytest.raises(TypeError, match="GRU"):
        nn.GRU(3, 4)(Tensor(np.zeros((2, 2, 3), np.float64)))


def test_gru_gradient_vs_finite_differences():
    layer = nn.GRU(2, 3)
    x = R.normal(size=(4, 1, 2))
    w = R.normal(size=(4, 1, 3))

    def loss_np(xv):
        out, _ = _reference(layer, xv, np.zeros((1, 1, 3)), _gru_step)
        return (out * w).sum()
    from mycel import ops
    g = ops.grad(lambda t: (layer(t)[0] * Tensor(w.astype(np.float32))).sum())(Tensor(x.astype(np.float32)))
    eps = 1e-6
    num = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        num[i] = (loss_np(x + d) - loss_np(x - d)) / (2 * eps)
    np.testing.assert_allclose(g.asnumpy(), num, rtol=1e-3, atol=1e-4)


@MODES
@pytest.mark.parametrize("kind", ["gru", "rnn"])
def test_seq_length_vs_numpy_per_item(mode, kind):
    """seq_length (MindSpore's): item i is the numpy run of its first seq_length[i] steps alone
    (both directions, so the reverse one starts at its own last step), outputs past its length
    zero, h_n its state at its own last step. LSTM shares the masking code."""
    ms.set_context(mode=mode)
    T, N = 5, 3
    layer = nn.GRU(3, 4, bidirectional=True) if kind == "gru" else nn.RNN(3, 4, bidirectional=True)
    step = _gru_step if kind == "gru" else _rnn_step(np.tanh)
    x = R.normal(size=(T, N, 3)).astype(np.float32)
    lens = np.array([5, 2, 4], np.int32)
    out, hn = layer(Tensor(x), None, Tensor(lens))
    out, hn = out.asnumpy(), hn.asnumpy()
    for i, n in enumerate(lens):
        want_out, want_h = _reference(layer, x[:n, i:i + 1].astype(np.float64), np.zeros((2, 1, 4)), step)
        np.testing.assert_allclose(out[:n, i], want_out[:, 0], rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(out[n:, i], 0)
        np.testing.assert_allclose(hn[:, i], want_h[:, 0], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"seq_length must have one length per batch item \(3\), got 2"):
        layer(Tensor(x), None, Tensor(np.array([1, 2], np.int32)))
    # LSTM: the same masking, its (h_n, c_n) both stopped at each item's length
    lstm = nn.LSTM(3, 4)
    o, (h, c) = lstm(Tensor(x), None, Tensor(lens))
    o1, (h1, c1) = lstm(Tensor(x[:2, 1:2].copy()))
    np.testing.assert_allclose(o.asnumpy()[:2, 1], o1.asnumpy()[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.asnumpy()[:, 1], c1.asnumpy()[:, 0], rtol=1e-5, atol=1e-6)

