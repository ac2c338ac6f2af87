"""backend/fuse_dense_grad_pair.cc: a bf16 dense layer's dx = dy W (plain, or masked by a relu's
test as matmul+mask_product) and its weight gradient dW = dy^T x (with db = sum(dy)) as one
launch, cpu::dense_grad_pair_bf16 (each thread: a block of dx rows, then that block's share of
dW while dy's rows are in its cache). Its outputs against a float64 numpy reference of the same
bf16 values, at 1, 2 and 3 threads, row counts the threads and the blocks do and do not divide,
2-d and 3-d operands, blocks of 64 and 256 rows; against the unfused program
(MYCEL_FUSE_DENSE_GRAD_PAIR=0); what must not fuse; and the O2 training of an MLP and a
transformer with the switch on and off."""
import os
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor, amp, nn, ops
from bf16_reference import bf16_round

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from models import TransformerClassifier  # noqa: E402


def _avx512_bf16():
    """The CPU has AVX512-BF16 and MYCEL_MAX_CPU_ISA does not cap it (the fused launch's kernel,
    cpu::matmul_bf16_atb, needs it; elsewhere the pass leaves the program alone)."""
    cap = os.environ.get("MYCEL_MAX_CPU_ISA", "").lower()
    if cap and not (cap.startswith(("avx512_core_bf16", "avx512_core_amx", "amx")) or cap == "all"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512_bf16" in f.read().split("\n\n")[0]
    except OSError:
        return False


pytestmark = [pytest.mark.skipif(not _avx512_bf16(), reason="the fused launch needs AVX512-BF16"),
              pytest.mark.usefixtures("graph_mode")]


class DenseBackward(nn.Cell):
    """dx = dy W (masked by y > 0 where y is given), dW = dy^T x, db = sum(dy): a dense
    layer's backward as the autodiff writes it (reshape views of 3-d dy and x)."""

    def __init__(self, masked, bias):
        super().__init__()
        self.masked, self.bias = masked, bias

    def construct(self, dy, w, x, y):
        o, i = w.shape
        dx = ops.matmul(dy, w)
        if self.masked:
            dx = ops.mul(dx, ops.cast(ops.greater(y, ops.zeros((), y.dtype)), mycel.bfloat16))
        dw = ops.matmul(dy.reshape(-1, o), x.reshape(-1, i), transpose_a=True)
        if self.bias:
            return dx, dw, dy.sum(tuple(range(dy.ndim - 1)))
        return dx, dw


def _text(cell, *args):
    return cell.__dict__["_compiled"]._graph.program_text(*args)


def _operands(lead, o, i, seed):
    rng = np.random.default_rng(seed)
    dy = bf16_round(rng.standard_normal(lead + (o,)).astype(np.float32))
    w = bf16_round(rng.standard_normal((o, i)).astype(np.float32) / np.sqrt(o))
    x = bf16_round(rng.standard_normal(lead + (i,)).astype(np.float32))
    y = bf16_round(rng.standard_normal(lead + (i,)).astype(np.float32))
    y.flat[:3] = [0.0, -0.0, np.nan]  # not > 0
    return dy, w, x, y


def _run(monkeypatch, on, masked, bias, ops_):
    monkeypatch.setenv("MYCEL_FUSE_DENSE_GRAD_PAIR", "1" if on else "0")
    f = DenseBackward(masked, bias)
    args = [Tensor(v).astype(mycel.bfloat16) for v in ops_]
    got = [[t.astype(mycel.float32).asnumpy() for t in f(*args)] for _ in range(2)]
    for u, v in zip(got[0], got[1]):  # the warm launch: nothing left over in the partials
        np.testing.assert_array_equal(u, v)
    return got[0], _text(f, *args)


# (leading dims, O, I): the transformer's FFN (2048 rows, 128 <-> 512) and projections scaled in
# rows, rows no thread count or block divides (1031, 3 x 509), a 2-d dy.
SHAPES = [((16, 128), 128, 512), ((16, 128), 512, 128), ((1031,), 96, 40), ((3, 509), 64, 130),
          ((8, 160), 128, 128)]


@pytest.mark.parametrize("lead,o,i", SHAPES)
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("masked,bias", [(True, True), (False, True), (False, False)])
def test_fused_outputs_within_bf16_rounding_of_numpy(monkeypatch, lead, o, i, threads, masked,
                                                     bias):
    mycel.set_context(num_threads=threads)
    dy, w, x, y = _operands(lead, o, i, seed=sum(lead) + o + i)
    got, text = _run(monkeypatch, True, masked, bias, (dy, w, x, y))
    assert "dense_grad_pair" in text and "matmul(" not in text, text
    assert (" sum(" in text) == False and ("mask_product" in text) == masked, text  # noqa: E712
    plain, before = _run(monkeypatch, False, masked, bias, (dy, w, x, y))
    assert "dense_grad_pair" not in before
    r = int(np.prod(lead))
    d2, x2 = dy.reshape(r, o).astype(np.float64), x.reshape(r, i).astype(np.float64)
    dx_ref = d2 @ w.astype(np.float64)
    dx_tol = np.abs(dx_ref) * 2.0 ** -8 + o * 2.0 ** -22 * (np.abs(d2) @ np.abs(w))
    dx = got[0].reshape(r, i)
    if masked:
        with np.errstate(invalid="ignore"):
            mask = y.reshape(r, i) > 0
        assert (dx[~mask] == 0).all()
        dx_ref = np.where(mask, dx_ref, 0.0)
    assert (np.abs(dx - dx_ref) <= dx_tol).all(), np.abs(dx - dx_ref).max()
    # dx: the same one-thread oneDNN product on fewer rows a call: the same bits as unfused
    np.testing.assert_array_equal(got[0], plain[0])
    dw_ref = d2.T @ x2
    dw_tol = np.abs(dw_ref) * 2.0 ** -8 + r * 2.0 ** -22 * (np.abs(d2).T @ np.abs(x2))
    assert (np.abs(got[1] - dw_ref) <= dw_tol).all(), np.abs(got[1] - dw_ref).max()
    # dW: float32 sums in another order than oneDNN's where the unfused split does not take
    # matmul_bf16_atb: within bf16's rounding of each other
    np.testing.assert_allclose(got[1], plain[1], rtol=2.0 ** -7, atol=r * 2.0 ** -20)
    if bias:
        db_ref = d2.sum(0)
        db_tol = np.abs(db_ref) * 2.0 ** -8 + r * 2.0 ** -22 * np.abs(d2).sum(0)
        assert (np.abs(got[2] - db_ref) <= db_tol).all(), np.abs(got[2] - db_ref).max()


@pytest.mark.parametrize("rows", ["64", "256", "100"])
def test_block_sizes(monkeypatch, rows):
    monkeypatch.setenv("MYCEL_DENSE_GRAD_PAIR_ROWS", rows)
    mycel.set_context(num_threads=2)
    dy, w, x, y = _operands((1100,), 128, 64, seed=int(rows))
    got, text = _run(monkeypatch, True, True, True, (dy, w, x, y))
    assert "dense_grad_pair" in text
    plain, _ = _run(monkeypatch, False, True, True, (dy, w, x, y))
    np.testing.assert_array_equal(got[0], plain[0])
    np.testing.assert_allclose(got[1], plain[1], rtol=2.0 ** -7, atol=1100 * 2.0 ** -20)
    np.testing.assert_allclose(got[2], plain[2], rtol=2.0 ** -7, atol=1100 * 2.0 ** -20)


class NotAPair(nn.Cell):
    """dW from another dy than dx's, and too few rows: nothing fuses."""

    def construct(self, dy, dy2, w, x, small_dy, small_x):
        return (ops.matmul(dy, w), ops.matmul(dy2, x, transpose_a=True), ops.matmul(small_dy, w),
                ops.matmul(small_dy, small_x, transpose_a=True))


def test_what_must_not_fuse():
    mycel.set_context(num_threads=2)
    dy, w, x, _ = _operands((1024,), 64, 32, seed=4)
    dy2 = dy[::-1].copy()
    f = NotAPair()
    args = [Tensor(v).astype(mycel.bfloat16) for v in (dy, dy2, w, x, dy[:512], x[:512])]
    got = [t.astype(mycel.float32).asnumpy() for t in f(*args)]
    assert "dense_grad_pair" not in _text(f, *args), _text(f, *args)
    ref = dy2.astype(np.float64).T @ x.astype(np.float64)
    np.testing.assert_allclose(got[1], ref, rtol=2.0 ** -7, atol=0.1)


def test_float32_is_left_alone(monkeypatch):
    mycel.set_context(num_threads=2)
    dy, w, x, y = _operands((1024,), 64, 32, seed=5)
    f = DenseBackward(False, True)
    args = [Tensor(v) for v in (dy, w, x, y)]
    f(*args)
    assert "dense_grad_pair" not in _text(f, *args)


class MLP(nn.Cell):
    def __init__(self):
        super().__init__()
        self.body = nn.SequentialCell(nn.Dense(48, 256), nn.ReLU(), nn.Dense(256, 96), nn.ReLU(),
                                      nn.Dense(96, 10))

    def construct(self, x):
        return self.body(x)


def _train(monkeypatch, on, threads, make, x, y, steps=4):
    monkeypatch.setenv("MYCEL_FUSE_DENSE_GRAD_PAIR", on)
    mycel.set_context(num_threads=threads)
    mycel.set_seed(5)
    net = make()
    step = amp.build_train_network(net, nn.Momentum(net.trainable_params(), 0.05, 0.9),
                                   nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                                   level="O2")
    step.set_train(True)
    losses = [float(step(x, y).asnumpy()) for _ in range(steps)]
    return losses, [p.asnumpy() for p in net.trainable_params()], _text(step, x, y)


def _compare(on, off, pairs):
    assert on[2].count("dense_grad_pair") >= pairs and "dense_grad_pair" not in off[2], on[2]
    assert on[0][-1] < on[0][0]  # it trains
    np.testing.assert_allclose(on[0], off[0], rtol=1e-3)
    for u, v in zip(on[1], off[1]):
        np.testing.assert_allclose(u, v, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("chain", ["0", "1"])
def test_o2_mlp_training_with_the_switch_on_and_off(monkeypatch, threads, chain):
    monkeypatch.setenv("MYCEL_FUSE_DENSE_GRAD_CHAIN", chain)
    rng = np.random.default_rng(6)
    x = Tensor(rng.standard_normal((1030, 48)).astype(np.float32))
    y = Tensor(rng.integers(0, 10, 1030).astype(np.int32))
    on = _train(monkeypatch, "1", threads, MLP, x, y)
    off = _train(monkeypatch, "0", threads, MLP, x, y)
    _compare(on, off, 2 if chain == "0" else 1)  # the first layer has no dx
    # the chain: the last layer's pair, then the second's on the same rows (dx the next dy)
    assert (on[2].count("dense_grad_chain") == 1) == (chain == "1"), on[2]


class FFNBackward(nn.Cell):
    """A FFN's backward by hand: dH = (dOut W2) * (h > 0), dW2 = dOut^T h, db2; dX = dH W1,
    dW1 = dH^T x, db1 (what the chain fuses into one launch)."""

    def construct(self, dout, w2, h, w1, x):
        dh = ops.mul(ops.matmul(dout, w2), ops.cast(ops.greater(h, ops.zeros((), h.dtype)),
                                                     mycel.bfloat16))
        dw2 = ops.matmul(dout, h, transpose_a=True)
        dx = ops.matmul(dh, w1)
        dw1 = ops.matmul(dh, x, transpose_a=True)
        return dh, dw2, dout.sum(0), dx, dw1, dh.sum(0)


@pytest.mark.parametrize("rows", [2048, 1031])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_chain_against_numpy_and_the_pairs(monkeypatch, rows, threads):
    mycel.set_context(num_threads=threads)
    rng = np.random.default_rng(rows + threads)
    r = lambda *s: bf16_round(rng.standard_normal(s).astype(np.float32))  # noqa: E731
    dout, w2, h, w1, x = r(rows, 64), r(64, 256) / 8, r(rows, 256), r(256, 48) / 16, r(rows, 48)
    args = [Tensor(v).astype(mycel.bfloat16) for v in (dout, w2, h, w1, x)]
    got = {}
    for chain in ("1", "0"):
        monkeypatch.setenv("MYCEL_FUSE_DENSE_GRAD_CHAIN", chain)
        f = FFNBackward()
        got[chain] = [[t.astype(mycel.float32).asnumpy() for t in f(*args)] for _ in range(2)]
        text = _text(f, *args)
        assert ("dense_grad_chain" in text) == (chain == "1") and "matmul(" not in text, text
        for u, v in zip(*got[chain]):
            np.testing.assert_array_equal(u, v)
    for u, v in zip(got["1"][0], got["0"][0]):  # each stage as its pair: the same bits
        np.testing.assert_array_equal(u, v)
    d64, h64, x64 = dout.astype(np.float64), h.astype(np.float64), x.astype(np.float64)
    dh = got["1"][0][0]
    with np.errstate(invalid="ignore"):
        dh_ref = np.where(h > 0, d64 @ w2.astype(np.float64), 0.0)
    np.testing.assert_allclose(dh, dh_ref, rtol=2.0 ** -7, atol=64 * 2.0 ** -20 * 8)
    refs = [d64.T @ h64, d64.sum(0), dh.astype(np.float64) @ w1.astype(np.float64),
            dh.astype(np.float64).T @ x64, dh.astype(np.float64).sum(0)]
    for g, ref in zip(got["1"][0][1:], refs):
        tol = np.abs(ref) * 2.0 ** -7 + rows * 2.0 ** -20 * (np.abs(ref).max() + 1)
        assert (np.abs(g - ref) <= tol).all(), np.abs(g - ref).max()


@pytest.mark.parametrize("threads", [2, 3])
def test_o2_transformer_training_with_the_switch_on_and_off(monkeypatch, threads):
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((16, 64, 64)).astype(np.float32))  # 1024 rows
    y = Tensor(rng.integers(0, 10, 16).astype(np.int32))

    def make():
        return TransformerClassifier(d_model=64, nhead=2, dim_feedforward=128, num_layers=1)

    on = _train(monkeypatch, "1", threads, make, x, y)
    off = _train(monkeypatch, "0", threads, make, x, y)
    _compare(on, off, 2)
