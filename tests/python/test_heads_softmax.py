"""Attention's softmax run on each block of heads right after that block's scores product, and
softmax's gradient right after its dP product (backend/fuse_heads_softmax.cc,
MYCEL_FUSE_HEADS_SOFTMAX=0 off): the same bits as the two launches, the float64 attention within
bf16 rounding, rows that fill whole vectors (128), odd (37) and longer than the register rows (300),
scores with a second reader (not fused), 1/2/3 threads, and the O2 transformer step. float32 the
same way where its head transposes fold (fold_head_transposes.cc, MYCEL_FOLD_HEAD_TRANSPOSES_F32:
the float64 attention within 1e-5), and the float32 transformer step with and without the folds."""
import numpy as np
import pytest

import mycel
from mycel import nn, ops, Tensor

from o2_transformer import o2_transformer_run

SWITCH = "MYCEL_FUSE_HEADS_SOFTMAX"
F32 = "MYCEL_FOLD_HEAD_TRANSPOSES_F32"


pytestmark = pytest.mark.usefixtures("graph_mode")


def bf16_values(a):
    return Tensor(np.asarray(a, np.float32), dtype=mycel.bfloat16).astype(mycel.float32).asnumpy() \
        .astype(np.float64)


class Attention(nn.Cell):
    """sum(attention(q, k, v) * w) with the head split and merge (batch_first), as
    nn.MultiheadAttention computes it."""

    def __init__(self, w, dims, extra_reader=False, dtype=mycel.bfloat16):
        super().__init__()
        self.w = Tensor(w.astype(np.float32), dtype=dtype)
        self.dims = dims
        self.extra_reader = extra_reader

    def heads(self, t):
        n, l, h, d = self.dims
        return ops.reshape(ops.transpose(ops.reshape(t, (n, l, h, d)), (0, 2, 1, 3)), (n * h, l, d))

    def construct(self, q, k, v):
        n, l, h, d = self.dims
        qh, kh, vh = self.heads(q), self.heads(k), self.heads(v)
        s = ops.matmul(qh, kh, transpose_b=True)
        p = ops.softmax(s, axis=-1)
        o = ops.matmul(p, vh)
        o = ops.reshape(ops.transpose(ops.reshape(o, (n, h, l, d)), (0, 2, 1, 3)), (n, l, h * d))
        out = (o * self.w).sum()
        if self.extra_reader:  # the scores read twice: no fusion
            out = out + s.sum()
        return out


def _run(q, k, v, w, dims, extra_reader, dtype=mycel.bfloat16):
    net = Attention(w, dims, extra_reader, dtype)
    grad = ops.GradOperation(get_all=True)(net)
    ts = [Tensor(a.astype(np.float32), dtype=dtype) for a in (q, k, v)]
    for _ in range(2):  # the second run: the warm launches
        gs = grad(*ts)
    return [g.astype(mycel.float32).asnumpy() for g in gs]


def _reference(q, k, v, w, dims, extra_reader):
    n, l, h, d = dims
    hs = lambda t: t.reshape(n, l, h, d).transpose(0, 2, 1, 3)  # noqa: E731
    qh, kh, vh = hs(q), hs(k), hs(v)
    s = qh @ kh.transpose(0, 1, 3, 2)
    e = np.exp(s - s.max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    do = w.reshape(n, l, h, d).transpose(0, 2, 1, 3)
    dv = p.transpose(0, 1, 3, 2) @ do
    dp = do @ vh.transpose(0, 1, 3, 2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    if extra_reader:
        ds = ds + 1.0
    dq, dk = ds @ kh, ds.transpose(0, 1, 3, 2) @ qh
    back = lambda t: t.transpose(0, 2, 1, 3).reshape(n, l, h * d)  # noqa: E731
    return [back(dq), back(dk), back(dv)]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dims", [(4, 128, 2, 16), (3, 37, 3, 8), (2, 300, 2, 8), (5, 8, 1, 4)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_fused_equals_unfused_and_float64(monkeypatch, threads, dims, dtype):
    mycel.set_context(num_threads=threads)
    monkeypatch.setenv(F32, "1")
    rng = np.random.default_rng(threads + dims[1])
    n, l, h, d = dims
    bf16 = dtype == "bfloat16"
    values = bf16_values if bf16 else (lambda a: a.astype(np.float32).astype(np.float64))
    q, k, v, w = (values(rng.standard_normal((n, l, h * d))) for _ in range(4))
    dt = getattr(mycel, dtype)
    monkeypatch.setenv(SWITCH, "1")
    got = _run(q, k, v, w, dims, False, dt)
    monkeypatch.setenv(SWITCH, "0")
    plain = _run(q, k, v, w, dims, False, dt)
    tol = 0.05 if bf16 else 1e-5
    for g, p, r in zip(got, plain, _reference(q, k, v, w, dims, False)):
        np.testing.assert_array_equal(g, p)  # the same products and row kernels: the same bits
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol * np.abs(r).max())


@pytest.mark.parametrize("threads", [1, 2])
def test_scores_with_a_second_reader(monkeypatch, threads):
    mycel.set_context(num_threads=threads)
    dims = (2, 16, 2, 8)
    rng = np.random.default_rng(5)
    q, k, v, w = (bf16_values(rng.standard_normal((2, 16, 16))) for _ in range(4))
    monkeypatch.setenv(SWITCH, "1")
    got = _run(q, k, v, w, dims, True)
    for g, r in zip(got, _reference(q, k, v, w, dims, True)):
        np.testing.assert_allclose(g, r, rtol=0.05, atol=0.05 * np.abs(r).max())


def _o2_run(monkeypatch, on, threads, steps=3):
    monkeypatch.setenv(SWITCH, "1" if on else "0")
    monkeypatch.setenv("MYCEL_FLASH_ATTENTION", "0")  # the composed attention this pass fuses
    monkeypatch.setenv("MYCEL_FUSE_ATTENTION_HEADS", "0")  # keeps the softmax_grad launches apart
    return o2_transformer_run(threads, steps, d_model=32, ff=64, batch=4, seq=24)[:3]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_o2_transformer_step_equals_unfused(monkeypatch, threads):
    la, wa, text = _o2_run(monkeypatch, True, threads)
    lb, wb, before = _o2_run(monkeypatch, False, threads)
    np.testing.assert_array_equal(la, lb)
    for a, b in zip(wa, wb):
        np.testing.assert_array_equal(a, b)
    # Two layers: each layer's scores product and softmax, and its dP product and softmax_grad, in
    # one launch; the loss's float32 softmax (its logits have no product) stays.
    assert "matmul_heads+softmax" not in before and before.count("= softmax(") == 3, before
    assert before.count("= softmax_grad(") == 2, before
    assert text.count("matmul_heads+softmax(") == 2, text
    assert text.count("matmul_heads+softmax_grad(") == 2, text
    assert text.count("= softmax(") == 1 and text.count("= softmax_grad(") == 0, text
    assert np.all(np.isfinite(la)) and la[-1] < la[0]


@pytest.mark.parametrize("threads", [1, 2])
def test_f32_transformer_step_with_and_without_folds(monkeypatch, threads):
    monkeypatch.setenv("MYCEL_FLASH_ATTENTION", "0")
    monkeypatch.setenv(SWITCH, "1")
    monkeypatch.setenv(F32, "1")
    la, wa, text, _ = o2_transformer_run(threads, 3, d_model=32, ff=64, batch=4, seq=24, level="O0")
    monkeypatch.setenv(F32, "0")
    lb, wb, before, _ = o2_transformer_run(threads, 3, d_model=32, ff=64, batch=4, seq=24,
                                           level="O0")
    np.testing.assert_allclose(la, lb, rtol=1e-5)
    for a, b in zip(wa, wb):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * np.abs(b).max())
    # Two layers: q, k, v and the output split or merged, forward and backward (16 transposes),
    # each layer's scores with its softmax and dP with softmax's gradient in one launch.
    assert "matmul_heads" not in before and before.count("= softmax_grad(") == 2, before
    assert before.count("= transpose(") - text.count("= transpose(") == 16, text
    assert text.count("matmul_heads+softmax(") == 2, text
    assert text.count("matmul_heads+softmax_grad(") == 2, text
    assert np.all(np.isfinite(la)) and la[-1] < la[0]
