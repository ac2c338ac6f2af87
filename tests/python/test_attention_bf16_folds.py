"""bf16 O2 attention block (issue 19): the head split/merge transposes folded into the batched
matmuls' strides (backend/fold_head_transposes.cc, MYCEL_FOLD_HEAD_TRANSPOSES=0 off), a residual's
gradient summed inside layer_norm_grad (backend/fuse_add_norm_grad.cc, MYCEL_FUSE_ADD_NORM_GRAD=0
off), and mean's gradient divided before it is broadcast. Each gives the unfused program's bits;
the attention's forward and gradients also match a float64 numpy reference within bf16 rounding,
at 1, 2 and 3 threads. The bit-for-bit comparisons run oneDNN's strided matmul
(MYCEL_MATMUL_HEADS_BF16=0); our per-head AVX512-BF16 kernel (kernels/cpu/matmul_heads_bf16.cc,
float32 sums in another order) is checked against the float64 reference and the oneDNN run."""
import numpy as np
import pytest

import mycel
from mycel import nn, ops, Tensor

from o2_transformer import o2_transformer_run

SWITCHES = ("MYCEL_FOLD_HEAD_TRANSPOSES", "MYCEL_FUSE_ADD_NORM_GRAD")
N, L, H, D = 3, 8, 2, 4
E = H * D


pytestmark = pytest.mark.usefixtures("graph_mode")


def _switch(monkeypatch, on, heads_kernel=False):
    for k in SWITCHES:
        monkeypatch.setenv(k, "1" if on else "0")
    monkeypatch.setenv("MYCEL_MATMUL_HEADS_BF16", "1" if heads_kernel else "0")


def bf16_values(a):
    """a rounded to bfloat16 (nearest even), as float64."""
    return Tensor(np.asarray(a, np.float32), dtype=mycel.bfloat16).astype(mycel.float32).asnumpy() \
        .astype(np.float64)


class Attention(nn.Cell):
    """sum(attention(x) * w) with the transformer's head split and merge (batch_first)."""

    def __init__(self, w, extra_reader=False, dims=(N, L, H, D)):
        super().__init__()
        self.w = Tensor(w.astype(np.float32), dtype=mycel.bfloat16)
        self.extra_reader = extra_reader
        self.dims = dims

    def heads(self, t):
        n, l, h, d = self.dims
        return ops.reshape(ops.transpose(ops.reshape(t, (n, l, h, d)), (0, 2, 1, 3)), (n * h, l, d))

    def construct(self, q, k, v):
        qh, kh, vh = self.heads(q), self.heads(k), self.heads(v)
        p = ops.softmax(ops.matmul(qh, kh, transpose_b=True), axis=-1)
        o = ops.matmul(p, vh)
        n, l, h, d = self.dims
        o = ops.reshape(ops.transpose(ops.reshape(o, (n, h, l, d)), (0, 2, 1, 3)), (n, l, h * d))
        out = (o * self.w).sum()
        if self.extra_reader:  # q's split also read by a sum: that transpose stays
            out = out + qh.sum()
        return out


def _attention(q, k, v, w, extra_reader, dims=(N, L, H, D)):
    net = Attention(w, extra_reader, dims)
    grad = ops.GradOperation(get_all=True)(net)
    ts = [Tensor(a.astype(np.float32), dtype=mycel.bfloat16) for a in (q, k, v)]
    for _ in range(2):  # the second run: the warm launches
        gs = grad(*ts)
    return [g.astype(mycel.float32).asnumpy() for g in gs]


def _reference(q, k, v, w, extra_reader, dims=(N, L, H, D)):
    """float64 gradients of sum(attention * w) with respect to q, k, v."""
    n, l, h, d = dims
    hs = lambda t: t.reshape(n, l, h, d).transpose(0, 2, 1, 3)  # noqa: E731
    qh, kh, vh = hs(q), hs(k), hs(v)
    s = qh @ kh.transpose(0, 1, 3, 2)
    e = np.exp(s - s.max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    do = hs(w)
    dv = p.transpose(0, 1, 3, 2) @ do
    dp = do @ vh.transpose(0, 1, 3, 2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    dq, dk = ds @ kh, ds.transpose(0, 1, 3, 2) @ qh
    if extra_reader:
        dq = dq + 1.0
    back = lambda t: t.transpose(0, 2, 1, 3).reshape(n, l, h * d)  # noqa: E731
    return [back(dq), back(dk), back(dv)]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("extra_reader", [False, True])
def test_attention_gradients_against_float64(monkeypatch, threads, extra_reader):
    mycel.set_context(num_threads=threads)
    rng = np.random.default_rng(threads)
    q, k, v, w = (bf16_values(rng.standard_normal((N, L, E))) for _ in range(4))
    _switch(monkeypatch, True)
    got = _attention(q, k, v, w, extra_reader)
    _switch(monkeypatch, False)
    plain = _attention(q, k, v, w, extra_reader)
    for g, p, r in zip(got, plain, _reference(q, k, v, w, extra_reader)):
        np.testing.assert_array_equal(g, p)  # the folded strides: the same products, same bits
        # bf16 roundings of p, s, dp, ds and the results: a few 2^-8 of the terms' scale.
        np.testing.assert_allclose(g, r, rtol=0.05, atol=0.05 * np.abs(r).max())


def test_attention_fallback_without_onednn_bf16(monkeypatch):
    """Where oneDNN has no bf16 matmul (AVX2 CPUs), the strided matmul copies its views to float32
    and rounds once: still the float64 reference within bf16 rounding."""
    monkeypatch.setenv("MYCEL_STRIDED_MATMUL_VIA_F32", "1")
    rng = np.random.default_rng(7)
    q, k, v, w = (bf16_values(rng.standard_normal((N, L, E))) for _ in range(4))
    _switch(monkeypatch, True)
    for g, r in zip(_attention(q, k, v, w, False), _reference(q, k, v, w, False)):
        np.testing.assert_allclose(g, r, rtol=0.05, atol=0.05 * np.abs(r).max())


# (N, L, heads, d): the 12 x 32 register tile's rows and columns, odd L (the products' K: dS.K and
# P.V read a's rows straight, their last pair half empty), d past 16 and past 32 (masked columns,
# two column panels), L past one 32-row block of the transposed a's pack (P^T.dO, dS^T.Q).
HEAD_DIMS = [(3, 8, 2, 4), (2, 13, 3, 5), (1, 37, 2, 33), (2, 45, 1, 17)]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dims", HEAD_DIMS)
def test_heads_kernel_against_float64(monkeypatch, threads, dims):
    """The per-head kernel (MYCEL_MATMUL_HEADS_BF16 on): the float64 reference within bf16
    rounding, and the oneDNN run within a bf16 rounding of each product's scale."""
    mycel.set_context(num_threads=threads)
    n, l, h, d = dims
    rng = np.random.default_rng(l * 10 + threads)
    q, k, v, w = (bf16_values(rng.standard_normal((n, l, h * d))) for _ in range(4))
    _switch(monkeypatch, True, heads_kernel=True)
    got = _attention(q, k, v, w, False, dims)
    _switch(monkeypatch, True, heads_kernel=False)
    onednn = _attention(q, k, v, w, False, dims)
    for g, o, r in zip(got, onednn, _reference(q, k, v, w, False, dims)):
        np.testing.assert_allclose(g, r, rtol=0.05, atol=0.05 * np.abs(r).max())
        np.testing.assert_allclose(g, o, rtol=2 ** -6, atol=2 ** -6 * np.abs(o).max())


def _o2_run(monkeypatch, on, threads, steps=4, heads_kernel=False):
    _switch(monkeypatch, on, heads_kernel)
    monkeypatch.setenv("MYCEL_FLASH_ATTENTION", "0")  # the composed attention these passes fold
    # The launches these tests count; test_attention_heads_grad.py checks them fused per head.
    monkeypatch.setenv("MYCEL_FUSE_ATTENTION_HEADS", "0")
    return o2_transformer_run(threads, steps, d_model=16, ff=32, batch=4, seq=8)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_o2_transformer_step_equals_unfused(monkeypatch, threads):
    la, wa, text, _ = _o2_run(monkeypatch, True, threads)
    lb, wb, before, _ = _o2_run(monkeypatch, False, threads)
    np.testing.assert_array_equal(la, lb)
    for a, b in zip(wa, wb):
        np.testing.assert_array_equal(a, b)
    # Two layers: 8 head transposes each before, none after; the 6 batched matmuls of each (q k^T,
    # p v and their 4 gradients) read or write strided views, q k^T with its softmax and dP with
    # softmax_grad in one launch (fuse_heads_softmax.cc); 3 of the 4 layer norm gradients read a
    # residual's add (the fourth's dy is the mean pool's gradient).
    assert before.count("= transpose(") == 16 and "matmul_heads" not in before, before
    assert text.count("= transpose(") == 0 and text.count("matmul_heads{") == 8, text
    assert text.count("matmul_heads+softmax(") == 2, text
    assert text.count("matmul_heads+softmax_grad(") == 2, text
    assert text.count("layer_norm_grad{add(i0,i1)}(") == 3, text
    assert before.count("= add(") - text.count("= add(") == 3, text
    assert np.all(np.isfinite(la)) and la[-1] < la[0]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_o2_transformer_step_heads_kernel(monkeypatch, threads):
    """The O2 step with the per-head kernel on and off: the same losses and weights within bf16
    rounding of the attention's products (4 steps of Momentum), and the kernel's launches."""
    la, wa, text, w0 = _o2_run(monkeypatch, True, threads, heads_kernel=True)
    lb, wb, _, _ = _o2_run(monkeypatch, True, threads, heads_kernel=False)
    # 8 plain products (P.V, dV, dQ, dK a layer); the scores and dP run fused with their row op
    assert text.count("matmul_heads{") == 8 and text.count("matmul_heads+softmax") == 4, text
    np.testing.assert_allclose(la, lb, rtol=1e-2)
    for a, b, i in zip(wa, wb, w0):  # the 4 steps' updates
        np.testing.assert_allclose(a - i, b - i, rtol=0.05, atol=0.05 * np.abs(b - i).max())
    assert np.all(np.isfinite(la)) and la[-1] < la[0]


class Mean(nn.Cell):
    def __init__(self, w):
        super().__init__()
        self.w = Tensor(w.astype(np.float32))

    def construct(self, x):
        return (ops.mean(x, axis=1) * self.w).sum()


@pytest.mark.parametrize("mode", [mycel.GRAPH_MODE, mycel.PYNATIVE_MODE])
def test_mean_gradient(mode):
    mycel.set_context(mode=mode)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 7, 5)).astype(np.float32)
    w = rng.standard_normal((3, 5)).astype(np.float32)
    dx = ops.GradOperation()(Mean(w))(Tensor(x)).asnumpy()
    want = np.broadcast_to((w / np.float32(7))[:, None, :], x.shape)
    np.testing.assert_array_equal(dx, want)  # the same quotient per element, float32
