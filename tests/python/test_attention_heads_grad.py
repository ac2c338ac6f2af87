"""Attention's backward as one launch a layer (backend/fuse_attention_heads.cc,
kernels/cpu/attention_heads_grad.cc; MYCEL_FUSE_ATTENTION_HEADS=0 off): dV = P^T dO,
dS = softmax_grad(P, dO V^T), dQ = dS K and dK = dS^T Q on each block of heads in turn. The same
bits as the four unfused launches (the same per-head products and row kernel), the float64
attention within bf16 rounding, 1/2/3 threads over batches that do not divide among them, odd
and long rows (300: past the per-head kernel, the blocked path), an additive mask with masked-out
keys, and the O2 transformer step. The forward's scores, softmax and P.V in one launch
(MYCEL_FUSE_ATTENTION_FWD=1, off by default) likewise. The fused launches exist only on CPUs with
AVX512-BF16 and no AMX (elsewhere the checks compare the unfused program with itself and the
reference)."""
import os
import sys

import numpy as np
import pytest

import mycel
from mycel import nn, ops, Tensor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from o2_transformer import o2_transformer_run  # noqa: E402

SWITCH = "MYCEL_FUSE_ATTENTION_HEADS"


def _own_heads_kernel():
    """AVX512-BF16 without AMX (where oneDNN runs on AMX tiles Mycel's per-head kernel, and so
    the fusion, stands aside) and no ISA cap."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    capped = os.environ.get("MYCEL_MAX_CPU_ISA") or os.environ.get("ONEDNN_MAX_CPU_ISA")
    return "avx512_bf16" in flags and "amx_bf16" not in flags and not capped


FUSES = _own_heads_kernel()


pytestmark = pytest.mark.usefixtures("graph_mode")


def bf16_values(a):
    return Tensor(np.asarray(a, np.float32), dtype=mycel.bfloat16).astype(mycel.float32).asnumpy() \
        .astype(np.float64)


class Attention(nn.Cell):
    """sum(attention(q, k, v) * w) with the head split and merge (batch_first), as
    nn.MultiheadAttention computes it; `mask` (L, L) added to the scores."""

    def __init__(self, w, dims, mask=None):
        super().__init__()
        self.w = Tensor(w.astype(np.float32), dtype=mycel.bfloat16)
        self.dims = dims
        self.mask = None if mask is None else Tensor(mask.astype(np.float32), dtype=mycel.bfloat16)

    def heads(self, t):
        n, l, h, d = self.dims
        return ops.reshape(ops.transpose(ops.reshape(t, (n, l, h, d)), (0, 2, 1, 3)), (n * h, l, d))

    def construct(self, q, k, v):
        n, l, h, d = self.dims
        qh, kh, vh = self.heads(q), self.heads(k), self.heads(v)
        s = ops.matmul(qh, kh, transpose_b=True)
        if self.mask is not None:
            s = s + self.mask
        p = ops.softmax(s, axis=-1)
        o = ops.matmul(p, vh)
        o = ops.reshape(ops.transpose(ops.reshape(o, (n, h, l, d)), (0, 2, 1, 3)), (n, l, h * d))
        return (o * self.w).sum()


def _run(q, k, v, w, dims, mask=None):
    net = Attention(w, dims, mask)
    grad = ops.GradOperation(get_all=True)(net)
    ts = [Tensor(a.astype(np.float32), dtype=mycel.bfloat16) for a in (q, k, v)]
    for _ in range(2):  # the second run: the warm launches
        gs = grad(*ts)
    return [g.astype(mycel.float32).asnumpy() for g in gs]


def _forward(q, k, v, w, dims):
    """The attention's output (N, L, E), as float32."""
    n, l, h, d = dims

    class Out(Attention):
        def construct(self, q, k, v):
            qh, kh, vh = self.heads(q), self.heads(k), self.heads(v)
            p = ops.softmax(ops.matmul(qh, kh, transpose_b=True), axis=-1)
            o = ops.matmul(p, vh)
            return ops.reshape(ops.transpose(ops.reshape(o, (n, h, l, d)), (0, 2, 1, 3)),
                               (n, l, h * d))

    net = Out(w, dims)
    ts = [Tensor(a.astype(np.float32), dtype=mycel.bfloat16) for a in (q, k, v)]
    for _ in range(2):
        o = net(*ts)
    return o.astype(mycel.float32).asnumpy()


def _reference(q, k, v, w, dims, mask=None):
    n, l, h, d = dims
    hs = lambda t: t.reshape(n, l, h, d).transpose(0, 2, 1, 3)  # noqa: E731
    qh, kh, vh = hs(q), hs(k), hs(v)
    s = qh @ kh.transpose(0, 1, 3, 2)
    if mask is not None:
        s = s + mask
    e = np.exp(s - s.max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    do = w.reshape(n, l, h, d).transpose(0, 2, 1, 3)
    dv = p.transpose(0, 1, 3, 2) @ do
    dp = do @ vh.transpose(0, 1, 3, 2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    dq, dk = ds @ kh, ds.transpose(0, 1, 3, 2) @ qh
    back = lambda t: t.transpose(0, 2, 1, 3).reshape(n, l, h * d)  # noqa: E731
    return [back(dq), back(dk), back(dv)]


def _inputs(seed, dims):
    rng = np.random.default_rng(seed)
    n, l, h, d = dims
    return [bf16_values(rng.standard_normal((n, l, h * d))) for _ in range(4)]


# (N, L, heads, d): the transformer's heads (128 x 32), 3 and 5 batch entries over 2 and 3
# threads, odd rows (37), rows longer than a register row (300), one head of d = 4.
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dims", [(4, 128, 4, 32), (3, 37, 3, 8), (2, 300, 2, 8), (5, 8, 1, 4)])
def test_fused_equals_unfused_and_float64(monkeypatch, threads, dims):
    mycel.set_context(num_threads=threads)
    q, k, v, w = _inputs(threads + dims[1], dims)
    monkeypatch.setenv(SWITCH, "1")
    got = _run(q, k, v, w, dims)
    monkeypatch.setenv(SWITCH, "0")
    plain = _run(q, k, v, w, dims)
    for g, p, r in zip(got, plain, _reference(q, k, v, w, dims)):
        np.testing.assert_array_equal(g, p)  # the same products and row kernels: the same bits
        np.testing.assert_allclose(g, r, rtol=0.05, atol=0.05 * np.abs(r).max())


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dims", [(4, 128, 4, 32), (3, 37, 3, 8), (2, 300, 2, 8)])
def test_forward_fused_equals_unfused_and_float64(monkeypatch, threads, dims):
    mycel.set_context(num_threads=threads)
    q, k, v, w = _inputs(threads + 2 * dims[1], dims)
    q = bf16_values(q / np.sqrt(dims[3]))  # scores of unit size: P not one-hot
    monkeypatch.setenv("MYCEL_FUSE_ATTENTION_FWD", "1")
    got, got_g = _forward(q, k, v, w, dims), _run(q, k, v, w, dims)
    monkeypatch.setenv("MYCEL_FUSE_ATTENTION_FWD", "0")
    plain, plain_g = _forward(q, k, v, w, dims), _run(q, k, v, w, dims)
    n, l, h, d = dims
    hs = lambda t: t.reshape(n, l, h, d).transpose(0, 2, 1, 3)  # noqa: E731
    s = hs(q) @ hs(k).transpose(0, 1, 3, 2)
    e = np.exp(s - s.max(-1, keepdims=True))
    ref = ((e / e.sum(-1, keepdims=True)) @ hs(v)).transpose(0, 2, 1, 3).reshape(n, l, h * d)
    np.testing.assert_array_equal(got, plain)
    np.testing.assert_allclose(got, ref, rtol=0.05, atol=0.02 * np.abs(ref).max())
    for g, p in zip(got_g, plain_g):  # the backward reads the fused launch's P
        np.testing.assert_array_equal(g, p)


@pytest.mark.parametrize("threads", [1, 2])
def test_masked_keys(monkeypatch, threads):
    """A causal mask (-inf above the diagonal): its add's gradient passes dS through, so the
    pattern holds; masked keys get no gradient."""
    mycel.set_context(num_threads=threads)
    dims = (3, 16, 2, 8)
    q, k, v, w = _inputs(11, dims)
    mask = np.triu(np.full((16, 16), -np.inf), 1)
    monkeypatch.setenv(SWITCH, "1")
    got = _run(q, k, v, w, dims, mask)
    monkeypatch.setenv(SWITCH, "0")
    plain = _run(q, k, v, w, dims, mask)
    for g, p, r in zip(got, plain, _reference(q, k, v, w, dims, mask)):
        np.testing.assert_array_equal(g, p)
        np.testing.assert_allclose(g, r, rtol=0.05, atol=0.05 * np.abs(r).max())


def _o2_run(monkeypatch, on, threads, steps=3, fwd=False):
    monkeypatch.setenv(SWITCH, "1" if on else "0")
    monkeypatch.setenv("MYCEL_FUSE_ATTENTION_FWD", "1" if fwd else "0")
    monkeypatch.setenv("MYCEL_FLASH_ATTENTION", "0")  # the composed attention this pass fuses
    return o2_transformer_run(threads, steps, d_model=32, ff=64, batch=5, seq=24)[:3]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_o2_transformer_step_equals_unfused(monkeypatch, threads):
    la, wa, text = _o2_run(monkeypatch, True, threads)
    lb, wb, before = _o2_run(monkeypatch, False, threads)
    np.testing.assert_array_equal(la, lb)
    for a, b in zip(wa, wb):
        np.testing.assert_array_equal(a, b)
    assert "attention_heads_grad(" not in before, before
    assert before.count("matmul_heads+softmax_grad(") == 2, before
    if FUSES:  # each layer's four backward launches in one
        assert text.count("attention_heads_grad(") == 2, text
        assert "matmul_heads+softmax_grad(" not in text, text
        assert "attention_heads(" not in text, text  # the forward's only on request
    assert np.all(np.isfinite(la)) and la[-1] < la[0]


@pytest.mark.parametrize("threads", [1, 2])
def test_o2_transformer_step_forward_fused(monkeypatch, threads):
    la, wa, text = _o2_run(monkeypatch, True, threads, fwd=True)
    lb, wb, before = _o2_run(monkeypatch, False, threads)
    np.testing.assert_array_equal(la, lb)
    for a, b in zip(wa, wb):
        np.testing.assert_array_equal(a, b)
    if FUSES:  # each layer's scores, softmax and P.V in one launch; no per-head product left
        assert text.count("attention_heads(") == 2 and "matmul_heads" not in text, text
