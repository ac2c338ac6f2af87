"""backend/fuse_bias_grad.cc: a bf16 weight gradient's matmul dy^T x and the bias gradient
sum(dy) over the leading axes run as one launch (matmul+sum, cpu::matmul_col_sums). Its two
outputs against a float64 numpy reference of the same bf16 values, at 1, 2 and 3 threads, with
a long K (the split along K: each thread sums its rows) and a short one (the matmul, then the
sums), through reshape views; what must not fuse; MYCEL_FUSE_BIAS_GRAD=0; the O2 transformer
step fused against unfused; the values again with padded operands (MYCEL_MATMUL_PAD=1)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor, amp, nn, ops

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from models import TransformerClassifier  # noqa: E402


pytestmark = pytest.mark.usefixtures("graph_mode")


def _bf16_round(a):
    """float32 -> the nearest-even bfloat16 value, as float32 (numpy, independent of Mycel)."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32)
    return (r << 16).view(np.float32)


class Grads(nn.Cell):
    """dW and db of a dense layer from its output gradient dy (B, S, M) and input x (B, S, N)."""

    def construct(self, dy, x):
        m, n = dy.shape[-1], x.shape[-1]
        return ops.matmul(dy.reshape(-1, m), x.reshape(-1, n), transpose_a=True), dy.sum((0, 1))


class Unfusable(nn.Cell):
    """Sums over the wrong axis, and a matmul with b transposed: nothing to fuse."""

    def construct(self, dy, x, xt):
        return (ops.matmul(dy, x, transpose_a=True), dy.sum(1),
                ops.matmul(dy, xt, transpose_a=True, transpose_b=True), dy[:, :4].sum(0))


def _text(cell, *args):
    return cell.__dict__["_compiled"]._graph.program_text(*args)


def _operands(b, s, m, n, seed):
    rng = np.random.default_rng(seed)
    dy = _bf16_round(rng.standard_normal((b, s, m)).astype(np.float32))
    x = _bf16_round(rng.standard_normal((b, s, n)).astype(np.float32))
    return dy, x


# (batch, seq, M, N): the transformer's FFN and projection shapes (K = 2048 rows, split along K
# on 2 and 3 threads where K divides), odd sizes, a K of 1030 (3 threads: no split), a short K,
# dy rows of 2 KiB (M = 1024: a padded copy with MYCEL_MATMUL_PAD=1).
SHAPES = [(16, 128, 512, 128), (16, 128, 128, 128), (8, 129, 33, 20), (2, 515, 96, 40),
          (4, 16, 64, 48), (1, 1024, 1024, 24)]


@pytest.mark.parametrize("b,s,m,n", SHAPES)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_fused_outputs_within_bf16_rounding_of_numpy(b, s, m, n, threads):
    mycel.set_context(num_threads=threads)
    dy, x = _operands(b, s, m, n, seed=b * s + m)
    f = Grads()
    args = (Tensor(dy).astype(mycel.bfloat16), Tensor(x).astype(mycel.bfloat16))
    got = [[t.astype(mycel.float32).asnumpy() for t in f(*args)] for _ in range(2)]
    assert "matmul+sum(" in _text(f, *args) and " sum(" not in _text(f, *args)
    for u, v in zip(got[0], got[1]):  # the warm launch: nothing left over in the partials
        np.testing.assert_array_equal(u, v)
    k = b * s
    d2, x2 = dy.reshape(k, m).astype(np.float64), x.reshape(k, n).astype(np.float64)
    dw_ref, db_ref = d2.T @ x2, d2.sum(0)
    # bf16's half ulp of the result plus float32 accumulation over k terms
    dw_tol = np.abs(dw_ref) * 2.0 ** -8 + k * 2.0 ** -22 * (np.abs(d2).T @ np.abs(x2))
    db_tol = np.abs(db_ref) * 2.0 ** -8 + k * 2.0 ** -22 * np.abs(d2).sum(0)
    assert (np.abs(got[0][0] - dw_ref) <= dw_tol).all(), np.abs(got[0][0] - dw_ref).max()
    assert (np.abs(got[0][1] - db_ref) <= db_tol).all(), np.abs(got[0][1] - db_ref).max()


def test_switch_off_keeps_two_launches_and_values(monkeypatch):
    mycel.set_context(num_threads=2)
    dy, x = _operands(16, 128, 512, 128, seed=1)
    args = (Tensor(dy).astype(mycel.bfloat16), Tensor(x).astype(mycel.bfloat16))
    out = {}
    for on in ("1", "0"):
        monkeypatch.setenv("MYCEL_FUSE_BIAS_GRAD", on)
        f = Grads()
        out[on] = [t.astype(mycel.float32).asnumpy() for t in f(*args)]
        assert ("matmul+sum(" in _text(f, *args)) == (on == "1")
    # the same matmul bits (the same split); the sums in another order, within bf16's rounding
    np.testing.assert_array_equal(out["1"][0], out["0"][0])
    np.testing.assert_allclose(out["1"][1], out["0"][1], rtol=2.0 ** -7, atol=1e-3)


def test_what_must_not_fuse():
    dy, x = _operands(1, 1024, 64, 32, seed=2)
    dy, x = dy[0], x[0]
    f = Unfusable()
    args = (Tensor(dy).astype(mycel.bfloat16), Tensor(x).astype(mycel.bfloat16),
            Tensor(np.ascontiguousarray(x.T)).astype(mycel.bfloat16))
    got = [t.astype(mycel.float32).asnumpy() for t in f(*args)]
    assert "matmul+sum(" not in _text(f, *args), _text(f, *args)
    np.testing.assert_allclose(got[1], dy.astype(np.float64).sum(1), rtol=1e-2, atol=0.1)
    np.testing.assert_allclose(got[3], dy[:, :4].astype(np.float64).sum(0), rtol=1e-2, atol=0.1)


def test_float32_is_left_alone():
    dy, x = _operands(2, 512, 64, 32, seed=3)
    f = Grads()
    args = (Tensor(dy), Tensor(x))
    f(*args)
    assert "matmul+sum(" not in _text(f, *args)


def _o2_losses(monkeypatch, on, steps=4):
    monkeypatch.setenv("MYCEL_FUSE_BIAS_GRAD", on)
    mycel.set_context(num_threads=2)
    mycel.set_seed(3)
    net = TransformerClassifier(d_model=64, nhead=2, dim_feedforward=128, num_layers=1)
    opt = nn.Momentum(net.trainable_params(), 0.02, 0.9)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = amp.build_train_network(net, opt, loss, level="O2")
    step.set_train(True)
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((16, 64, 64)).astype(np.float32))  # 1024 rows: the split
    y = Tensor(rng.integers(0, 10, 16).astype(np.int32))
    losses = [float(step(x, y).asnumpy()) for _ in range(steps)]
    return losses, [p.asnumpy() for p in net.trainable_params()], _text(step, x, y)


def test_o2_transformer_step_fused_against_unfused(monkeypatch):
    fused, plain = _o2_losses(monkeypatch, "1"), _o2_losses(monkeypatch, "0")
    assert fused[2].count("matmul+sum(") >= 4 and "matmul+sum(" not in plain[2], fused[2]
    np.testing.assert_allclose(fused[0], plain[0], rtol=1e-4)
    for u, v in zip(fused[1], plain[1]):
        np.testing.assert_allclose(u, v, rtol=1e-3, atol=1e-4)


def test_values_again_with_padded_operands():
    """MYCEL_MATMUL_PAD is read once per process: the value tests in a fresh one."""
    r = subprocess.run([sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider",
                        "-k", "within_bf16_rounding"],
                       env=dict(os.environ, MYCEL_MATMUL_PAD="1"), capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
