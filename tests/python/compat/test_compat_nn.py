"""nn surface: Transformer stacks and recurrent cells against numpy forwards built from the
layers' own Parameters, in both modes; CellList += list; deep copies of layers."""
import copy

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn

MODES = pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _reset():
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def _p(cell):
    return {n: p.asnumpy().astype(np.float64) for n, p in cell.parameters_and_names()}


def _ln(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def _mha(q, k, v, p, pre, heads):
    e = q.shape[-1]
    w, bias = p[pre + "in_proj_weight"], p[pre + "in_proj_bias"]
    qp, kp, vp = q @ w[:e].T + bias[:e], k @ w[e:2 * e].T + bias[e:2 * e], v @ w[2 * e:].T + bias[2 * e:]
    L, N, _ = q.shape
    S = k.shape[0]
    d = e // heads
    qh = qp.reshape(L, N, heads, d).transpose(1, 2, 0, 3) / np.sqrt(d)
    kh = kp.reshape(S, N, heads, d).transpose(1, 2, 0, 3)
    vh = vp.reshape(S, N, heads, d).transpose(1, 2, 0, 3)
    s = qh @ kh.transpose(0, 1, 3, 2)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = (a @ vh).transpose(2, 0, 1, 3).reshape(L, N, e)
    return o @ p[pre + "out_proj.weight"].T + p[pre + "out_proj.bias"]


def _ff(x, p, pre):
    h = np.maximum(x @ p[pre + "linear1.weight"].T + p[pre + "linear1.bias"], 0)
    return h @ p[pre + "linear2.weight"].T + p[pre + "linear2.bias"]


def _enc_layer(x, p, pre, heads):
    x = _ln(x + _mha(x, x, x, p, pre + "self_attn.", heads), p[pre + "norm1.gamma"], p[pre + "norm1.beta"])
    return _ln(x + _ff(x, p, pre), p[pre + "norm2.gamma"], p[pre + "norm2.beta"])


def _dec_layer(x, mem, p, pre, heads):
    x = _ln(x + _mha(x, x, x, p, pre + "self_attn.", heads), p[pre + "norm1.gamma"], p[pre + "norm1.beta"])
    x = _ln(x + _mha(x, mem, mem, p, pre + "multihead_attn.", heads), p[pre + "norm2.gamma"], p[pre + "norm2.beta"])
    return _ln(x + _ff(x, p, pre), p[pre + "norm3.gamma"], p[pre + "norm3.beta"])


@MODES
def test_transformer_vs_numpy(mode):
    mycel.set_context(mode=mode)
    mycel.set_seed(3)
    net = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16,
                         dropout=0.0, dtype=mycel.float64)
    net.set_train(False)
    rng = np.random.default_rng(0)
    src, tgt = rng.normal(size=(5, 3, 8)), rng.normal(size=(4, 3, 8))
    p = _p(net)
    mem = src
    for i in range(2):
        mem = _enc_layer(mem, p, f"encoder.layers.{i}.", 2)
    mem = _ln(mem, p["encoder.norm.gamma"], p["encoder.norm.beta"])
    out = tgt
    for i in range(2):
        out = _dec_layer(out, mem, p, f"decoder.layers.{i}.", 2)
    out = _ln(out, p["decoder.norm.gamma"], p["decoder.norm.beta"])
    np.testing.assert_allclose(net(Tensor(src), Tensor(tgt)).asnumpy(), out, rtol=1e-9, atol=1e-10)
    # the stacked layers are independent copies
    assert not np.shares_memory(p["encoder.layers.0.linear1.weight"], p["encoder.layers.1.linear1.weight"])
    w0, w1 = net.encoder.layers[0].linear1.weight, net.encoder.layers[1].linear1.weight
    w1.set_data(Tensor(np.zeros(w1.shape)))
    assert w0.asnumpy().any()  # setting one layer's weight leaves the other's


def _sig(x):
    return 1 / (1 + np.exp(-x))


@MODES
def test_recurrent_cells_vs_numpy(mode):
    mycel.set_context(mode=mode)
    rng = np.random.default_rng(1)
    x, h, c = rng.normal(size=(2, 3)), rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    lstm = nn.LSTMCell(3, 4, dtype=mycel.float64)
    p = _p(lstm)
    gates = x @ p["weight_ih"].T + p["bias_ih"] + h @ p["weight_hh"].T + p["bias_hh"]
    i, f, g, o = np.split(gates, 4, axis=1)
    c2 = _sig(f) * c + _sig(i) * np.tanh(g)
    h2 = _sig(o) * np.tanh(c2)
    got_h, got_c = lstm(Tensor(x), (Tensor(h), Tensor(c)))
    np.testing.assert_allclose(got_h.asnumpy(), h2, rtol=1e-12)
    np.testing.assert_allclose(got_c.asnumpy(), c2, rtol=1e-12)
    gru = nn.GRUCell(3, 4, dtype=mycel.float64)
    p = _p(gru)
    xr, xz, xn = np.split(x @ p["weight_ih"].T + p["bias_ih"], 3, axis=1)
    hr, hz, hn = np.split(h @ p["weight_hh"].T + p["bias_hh"], 3, axis=1)
    r, z = _sig(xr + hr), _sig(xz + hz)
    n = np.tanh(xn + r * hn)
    np.testing.assert_allclose(gru(Tensor(x), Tensor(h)).asnumpy(), (1 - z) * n + z * h, rtol=1e-12)
    rnn = nn.RNNCell(3, 4, nonlinearity="relu", dtype=mycel.float64)
    p = _p(rnn)
    want = np.maximum(x @ p["weight_ih"].T + p["bias_ih"] + h @ p["weight_hh"].T + p["bias_hh"], 0)
    np.testing.assert_allclose(rnn(Tensor(x), Tensor(h)).asnumpy(), want, rtol=1e-12)


def test_lstm_cell_equal_in_both_modes_with_gradients():
    rng = np.random.default_rng(4)
    x = Tensor(rng.normal(size=(2, 3)).astype(np.float32))
    cell = nn.LSTMCell(3, 5)
    results = []
    for mode in (mycel.PYNATIVE_MODE, mycel.GRAPH_MODE):
        mycel.set_context(mode=mode)
        h, c = cell(x)
        g = mycel.grad(lambda v: cell(v)[0].sum())(x)
        results.append((h.asnumpy(), c.asnumpy(), g.asnumpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_cell_list_iadd_and_deepcopy():
    cl = nn.CellList([nn.ReLU()])
    cl += [nn.Tanh(), nn.Dense(2, 2)]
    assert len(cl) == 3 and isinstance(cl[2], nn.Dense)
    d = nn.Dense(2, 2)
    d2 = copy.deepcopy(d)
    np.testing.assert_array_equal(d2.weight.asnumpy(), d.weight.asnumpy())
    d2.weight.set_data(Tensor(np.zeros((2, 2), np.float32)))
    assert d.weight.asnumpy().any()  # the copy has its own storage


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_a_sub_cell_named_forward_shadows_the_pytorch_alias(mode):
    # MindSpore's tests keep the wrapped network as `self.forward = net`; Cell.forward (the
    # PyTorch alias) must not hide it.
    from mycel.ops import composite as C

    class Grad(nn.Cell):
        def __init__(self, forward):
            super().__init__()
            self.forward = forward
            self.grad = C.GradOperation(get_all=True, sens_param=True)

        def construct(self, x, sens):
            return self.grad(self.forward)(x, sens)

    w = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    dense = nn.Dense(2, 2, weight_init=mycel.Tensor(w), has_bias=False)
    x = mycel.Tensor(np.ones((1, 2), np.float32))
    sens = mycel.Tensor(np.array([[1.0, 2.0]], np.float32))
    mycel.set_context(mode=mode)
    try:
        g = Grad(dense)
        assert g.forward is dense
        got = g(x, sens)[0].asnumpy()
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
    np.testing.assert_allclose(got, np.array([[1.0, 2.0]]) @ w, rtol=1e-6)  # sens @ W (y = x W^T)
    assert dense.forward(x).shape == (1, 2)  # the alias still works where nothing shadows it
