"""ops.flash_attention_score / the registry's flash_attention (issue 19): forward and gradients
against a float64 numpy reference in both layouts, odd sizes, masks, 1-3 threads, graph and
pynative; bad arguments; and nn.MultiheadAttention's fused path against its composed one
(MYCEL_FLASH_ATTENTION=0) in float32 and amp O2."""
import os

import numpy as np
import pytest

import mycel
from mycel import amp, nn, ops, Tensor
from bf16_reference import bf16_round


def bf16_values(a):
    """a rounded to bfloat16, as float64."""
    return bf16_round(a).astype(np.float64)


def reference(q, k, v, w, scale, mask=None):
    """float64 (out, dq, dk, dv) of sum(attention(q, k, v) * w); (B, N, S, D) arrays, mask True =
    masked out (broadcast to (B, N, S1, S2))."""
    s = scale * q @ k.transpose(0, 1, 3, 2)
    if mask is not None:
        s = np.where(mask, -np.inf, s)
    e = np.exp(s - s.max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    out = p @ v
    dv = p.transpose(0, 1, 3, 2) @ w
    dp = w @ v.transpose(0, 1, 3, 2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    return out, scale * ds @ k, scale * ds.transpose(0, 1, 3, 2) @ q, dv


def to_layout(a, layout):
    """(B, N, S, D) -> the layout's shape."""
    if layout == "BNSD":
        return a
    b, n, s, d = a.shape
    return a.transpose(0, 2, 1, 3).reshape(b, s, n * d)


class Attn(nn.Cell):
    def __init__(self, heads, scale, layout, w, mask=None):
        super().__init__()
        self.heads, self.scale, self.layout, self.w, self.mask = heads, scale, layout, w, mask

    def construct(self, q, k, v):
        out = ops.flash_attention_score(q, k, v, self.heads, attn_mask=self.mask, scalar_value=self.scale,
                                        input_layout=self.layout)
        return (out.astype(mycel.float32) * self.w).sum(), out


def run(q, k, v, w, heads, scale, layout, dtype=mycel.float32, mask=None):
    """(out, dq, dk, dv) as float64 arrays in (B, N, S, D)."""
    ts = [Tensor(to_layout(a, layout).astype(np.float32), dtype=dtype) for a in (q, k, v)]
    wt = Tensor(to_layout(w, layout).astype(np.float32))
    net = Attn(heads, scale, layout, wt, mask)
    out = net(*ts)[1]

    class Loss(nn.Cell):
        def construct(self, a, b, c):
            return net(a, b, c)[0]

    grads = ops.GradOperation(get_all=True)(Loss())(*ts)
    back = []
    b, n, _, d = q.shape
    for t, like in zip((out,) + tuple(grads), (q, q, k, v)):
        a = t.astype(mycel.float32).asnumpy().astype(np.float64)
        if layout == "BSH":
            a = a.reshape(b, like.shape[2], n, d).transpose(0, 2, 1, 3)
        back.append(a)
    return back


SIZES = [(2, 2, 37, 45, 8), (1, 3, 33, 20, 32), (2, 1, 64, 64, 64), (1, 2, 5, 70, 80), (3, 4, 1, 1, 16)]


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE])
@pytest.mark.parametrize("layout", ["BSH", "BNSD"])
@pytest.mark.parametrize("size", SIZES)
def test_float32_against_float64(mode, layout, size):
    mycel.set_context(mode=mode)
    b, n, s1, s2, d = size
    rng = np.random.default_rng(s1 * 7 + d)
    q, w = rng.standard_normal((b, n, s1, d)), rng.standard_normal((b, n, s1, d))
    k, v = rng.standard_normal((b, n, s2, d)), rng.standard_normal((b, n, s2, d))
    q, k, v, w = (a.astype(np.float32).astype(np.float64) for a in (q, k, v, w))
    scale = 1.0 / np.sqrt(d)
    got = run(q, k, v, w, n, scale, layout)
    for g, r in zip(got, reference(q, k, v, w, scale)):
        np.testing.assert_allclose(g, r, rtol=2e-5, atol=2e-5 * max(1.0, np.abs(r).max()))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("layout", ["BSH", "BNSD"])
def test_bfloat16_and_threads(threads, layout):
    mycel.set_context(num_threads=threads)
    b, n, s1, s2, d = 3, 4, 50, 40, 32
    rng = np.random.default_rng(threads)
    q, w = bf16_values(rng.standard_normal((b, n, s1, d))), bf16_values(rng.standard_normal((b, n, s1, d)))
    k, v = bf16_values(rng.standard_normal((b, n, s2, d))), bf16_values(rng.standard_normal((b, n, s2, d)))
    got = run(q, k, v, w, n, 0.25, layout, mycel.bfloat16)
    for g, r in zip(got, reference(q, k, v, w, 0.25)):
        # float32 arithmetic, one bf16 rounding of each result (2^-8 relative) plus dout's.
        np.testing.assert_allclose(g, r, rtol=1.5e-2, atol=1e-2 * np.abs(r).max())
    if threads == 1:
        return
    mycel.set_context(num_threads=1)
    one = run(q, k, v, w, n, 0.25, layout, mycel.bfloat16)
    for g, o in zip(got, one):  # one thread owns each (batch, head): the same bits
        np.testing.assert_array_equal(g, o)


@pytest.mark.parametrize("size", [(2, 3, 37, 21, 16), (1, 2, 9, 13, 9), (2, 1, 33, 70, 80)])
@pytest.mark.parametrize("masked", [False, True])
def test_bfloat16_odd_sizes(size, masked):
    """An odd last block of rows, key lengths off the 16-lane grid, an odd head size (the float32
    kernel's path), head size 80, with and without a mask."""
    b, n, s1, s2, d = size
    rng = np.random.default_rng(s1 + d)
    q, w = bf16_values(rng.standard_normal((b, n, s1, d))), bf16_values(rng.standard_normal((b, n, s1, d)))
    k, v = bf16_values(rng.standard_normal((b, n, s2, d))), bf16_values(rng.standard_normal((b, n, s2, d)))
    mask = None
    if masked:
        mask = rng.random((b, 1, s1, s2)) < 0.4
        mask[..., 0] = False  # every row keeps a key
    got = run(q, k, v, w, n, 0.3, "BSH", mycel.bfloat16, None if mask is None else Tensor(mask))
    ref = reference(q, k, v, w, 0.3, None if mask is None else np.broadcast_to(mask, (b, n, s1, s2)))
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1.5e-2, atol=1e-2 * np.abs(r).max())


def test_float16():
    rng = np.random.default_rng(5)
    q, k, v, w = (rng.standard_normal((1, 2, 9, 16)) for _ in range(4))
    q, k, v, w = (a.astype(np.float16).astype(np.float64) for a in (q, k, v, w))
    got = run(q, k, v, w, 2, 0.5, "BNSD", mycel.float16)
    for g, r in zip(got, reference(q, k, v, w, 0.5)):
        np.testing.assert_allclose(g, r, rtol=3e-3, atol=3e-3 * np.abs(r).max())


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE])
@pytest.mark.parametrize("shape", ["2d", "b1", "bn"])
@pytest.mark.parametrize("mask_dtype", [np.bool_, np.uint8])
def test_attn_mask(mode, shape, mask_dtype):
    """True / 1 masks a position out (MindSpore's meaning); causal plus random holes, every row
    keeping its diagonal."""
    mycel.set_context(mode=mode)
    b, n, s, d = 2, 3, 19, 16
    rng = np.random.default_rng(11)
    q, k, v, w = (rng.standard_normal((b, n, s, d)).astype(np.float32).astype(np.float64) for _ in range(4))
    full = np.triu(np.ones((s, s), bool), 1) | (rng.random((b, n, s, s)) < 0.3)
    full &= ~np.eye(s, dtype=bool)
    mask = {"2d": full[0, 0], "b1": full[:, :1], "bn": full}[shape]
    got = run(q, k, v, w, n, 0.3, "BSH", mask=Tensor(mask.astype(mask_dtype)))
    for g, r in zip(got, reference(q, k, v, w, 0.3, np.broadcast_to(mask, (b, n, s, s)))):
        np.testing.assert_allclose(g, r, rtol=2e-5, atol=2e-5 * max(1.0, np.abs(r).max()))


def test_fully_masked_row_gives_zero():
    q = Tensor(np.ones((1, 1, 3, 8), np.float32))
    mask = np.zeros((3, 3), bool)
    mask[1] = True
    out = ops.flash_attention_score(q, q, q, 1, attn_mask=Tensor(mask), input_layout="BNSD").asnumpy()
    np.testing.assert_array_equal(out[0, 0, 1], 0)
    np.testing.assert_allclose(out[0, 0, 0], 1, rtol=1e-6)


def test_lse_and_its_gradient():
    """The registry op's second output is each row's logsumexp, and its sensitivity enters dq, dk."""
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((1, 2, 6, 8)).astype(np.float32) for _ in range(3))
    out, lse = ops.flash_attention(Tensor(q), Tensor(k), Tensor(v), head_num=2, scalar_value=0.5,
                                   input_layout="BNSD")
    s = 0.5 * q.astype(np.float64) @ k.astype(np.float64).transpose(0, 1, 3, 2)
    want = np.log(np.exp(s).sum(-1))
    np.testing.assert_allclose(lse.asnumpy(), want, rtol=1e-5)

    def f(a, b):
        return ops.flash_attention(a, b, Tensor(v), head_num=2, scalar_value=0.5, input_layout="BNSD")[1].sum()

    dq, dk = ops.grad(f, grad_position=(0, 1))(Tensor(q), Tensor(k))
    e = np.exp(s - want[..., None])  # d lse / d s = softmax(s)
    np.testing.assert_allclose(dq.asnumpy(), 0.5 * e @ k, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dk.asnumpy(), 0.5 * e.transpose(0, 1, 3, 2) @ q, rtol=1e-4, atol=1e-5)


def test_second_order_is_not_supported():
    q = Tensor(np.ones((1, 4, 8), np.float32))

    def first(x):
        return ops.grad(lambda y: ops.flash_attention_score(y, y, y, 2).sum())(x).sum()

    with pytest.raises(Exception, match="flash_attention_grad"):
        ops.grad(first)(q)


def _bad(match, *args, **kw):
    with pytest.raises((ValueError, TypeError), match=match):
        ops.flash_attention_score(*args, **kw)


def test_bad_inputs():
    q = Tensor(np.ones((2, 5, 8), np.float32))
    q4 = Tensor(np.ones((2, 2, 5, 4), np.float32))
    _bad(r"flash_attention.*divisible by head_num", q, q, q, 3)
    _bad(r"flash_attention.*'key'.*\(B, S, H\)", q, q4, q4, 2)
    _bad(r"flash_attention.*input_layout must be 'BSH' or 'BNSD', got 'SBH'", q, q, q, 2, input_layout="SBH")
    _bad(r"flash_attention.*'query' has 2 heads .* head_num is 4", q4, q4, q4, 4, input_layout="BNSD")
    _bad(r"flash_attention.*'value' must have the shape of 'key'", q, q, Tensor(np.ones((2, 6, 8), np.float32)), 2)
    _bad(r"flash_attention.*fewer key/value heads", q, Tensor(np.ones((2, 5, 4), np.float32)),
         Tensor(np.ones((2, 5, 4), np.float32)), 2)
    _bad(r"flash_attention.*same dtype|flash_attention.*dtype", q, q.astype(mycel.bfloat16), q, 2)
    _bad(r"flash_attention.*float64", *(Tensor(np.ones((2, 5, 8))),) * 3, 2)
    _bad(r"flash_attention_score.*keep_prob.*not supported", q, q, q, 2, keep_prob=0.9)
    _bad(r"flash_attention_score.*real_shift.*not supported", q, q, q, 2, real_shift=q)
    _bad(r"flash_attention_score.*sparse_mode.*not supported", q, q, q, 2, sparse_mode=2)
    _bad(r"flash_attention_score.*next_tokens.*not supported", q, q, q, 2, next_tokens=0)
    _bad(r"flash_attention_score.*'query' must be a Tensor", np.ones((2, 5, 8)), q, q, 2)
    _bad(r"flash_attention.*attn_mask must be bool or uint8", q, q, q, 2,
         attn_mask=Tensor(np.zeros((5, 5), np.float32)))
    _bad(r"flash_attention.*attn_mask must be \(S1, S2\) = \(5, 5\)", q, q, q, 2,
         attn_mask=Tensor(np.zeros((4, 5), bool)))


# ---- nn.MultiheadAttention: the fused path equals the composed one ----

def _mha_grads(monkeypatch, fused, batch_first, dtype_o2=False, mode=mycel.PYNATIVE_MODE):
    monkeypatch.setenv("MYCEL_FLASH_ATTENTION", "1" if fused else "0")
    mycel.set_context(mode=mode)
    mycel.set_seed(4)
    mha = nn.MultiheadAttention(32, 4, batch_first=batch_first)
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((3, 11, 32) if batch_first else (11, 3, 32)).astype(np.float32))
    w = Tensor(rng.standard_normal(x.shape).astype(np.float32))

    class Loss(nn.Cell):
        def __init__(self):
            super().__init__()
            self.mha = mha

        def construct(self, x):
            out, _ = self.mha(x, None, None, None, False)
            return (out.astype(mycel.float32) * w).sum()

    net = Loss()
    if dtype_o2:
        net = amp.auto_mixed_precision(net, "O2")
    params = mha.trainable_params()
    grads = ops.GradOperation(get_by_list=True)(net, mycel.ParameterTuple(params))(x)
    return net(x).asnumpy(), [g.astype(mycel.float32).asnumpy() for g in grads]


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE])
@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_fused_equals_composed(monkeypatch, mode, batch_first):
    la, ga = _mha_grads(monkeypatch, True, batch_first, mode=mode)
    lb, gb = _mha_grads(monkeypatch, False, batch_first, mode=mode)
    np.testing.assert_allclose(la, lb, rtol=1e-5)
    for a, b in zip(ga, gb):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * np.abs(b).max())


def test_multihead_attention_o2(monkeypatch):
    la, ga = _mha_grads(monkeypatch, True, True, dtype_o2=True, mode=mycel.GRAPH_MODE)
    lb, gb = _mha_grads(monkeypatch, False, True, dtype_o2=True, mode=mycel.GRAPH_MODE)
    np.testing.assert_allclose(la, lb, rtol=3e-2, atol=0.5)
    for a, b in zip(ga, gb):  # bf16 products both ways, rounded at different points
        np.testing.assert_allclose(a, b, rtol=5e-2, atol=5e-2 * np.abs(b).max())


@pytest.mark.parametrize("on", [True, False, None])
def test_multihead_attention_takes_the_fused_path(monkeypatch, on):
    """The switch decides (unset: the composed path); need_weights, a mask or active dropout keep
    the composed path."""
    calls = []
    real = ops.flash_attention_score
    monkeypatch.setattr(ops, "flash_attention_score", lambda *a, **k: calls.append(1) or real(*a, **k))
    if on is None:
        monkeypatch.delenv("MYCEL_FLASH_ATTENTION", raising=False)
    else:
        monkeypatch.setenv("MYCEL_FLASH_ATTENTION", "1" if on else "0")
    mha = nn.MultiheadAttention(16, 2, batch_first=True)
    x = Tensor(np.ones((2, 5, 16), np.float32))
    mha(x, x, x, need_weights=False)
    assert len(calls) == (1 if on else 0)
    mha(x, x, x, need_weights=True)
    mha(x, x, x, need_weights=False, attn_mask=Tensor(np.zeros((5, 5), bool)))
    assert len(calls) == (1 if on else 0)
    drop = nn.MultiheadAttention(16, 2, dropout=0.5, batch_first=True)
    drop.set_train(True)
    drop(x, x, x, need_weights=False)
    assert len(calls) == (1 if on else 0)
    drop.set_train(False)
    drop(x, x, x, need_weights=False)
    assert len(calls) == (2 if on else 0)


def _o2_step(monkeypatch, on):
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from models import TransformerClassifier
    monkeypatch.setenv("MYCEL_FLASH_ATTENTION", "1" if on else "0")
    mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=2)
    mycel.set_seed(3)
    net = TransformerClassifier(d_model=16, nhead=2, dim_feedforward=32, num_layers=2)
    opt = nn.Momentum(net.trainable_params(), 0.02, 0.9)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = amp.build_train_network(net, opt, loss, level="O2")
    step.set_train(True)
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((4, 8, 16)).astype(np.float32))
    y = Tensor(rng.integers(0, 10, 4).astype(np.int32))
    losses = np.array([step(x, y).asnumpy() for _ in range(4)])
    text = step.__dict__["_compiled"]._graph.program_text(x, y)
    return losses, [p.asnumpy() for p in net.trainable_params()], text


def test_o2_transformer_step_fused_equals_composed(monkeypatch):
    la, wa, text = _o2_step(monkeypatch, True)
    lb, wb, before = _o2_step(monkeypatch, False)
    assert text.count("flash_attention(") == 2 and text.count("flash_attention_grad(") == 2, text
    assert "flash_attention" not in before and text.count("= transpose(") == 0, text
    np.testing.assert_allclose(la, lb, rtol=2e-2)
    for a, b in zip(wa, wb):
        np.testing.assert_allclose(a, b, rtol=5e-2, atol=2e-2 * max(np.abs(b).max(), 1e-3))


def test_grad_op_checks_its_saved_inputs():
    q = Tensor(np.ones((1, 4, 8), np.float32))
    lse = Tensor(np.zeros((1, 2, 4), np.float32))
    with pytest.raises(TypeError, match=r"flash_attention_grad.*'lse' must be float32 of shape \(1, 2, 4\)"):
        ops.flash_attention_grad(q, q, q, q, q, lse.astype(mycel.bfloat16), lse, head_num=2)
    with pytest.raises(ValueError, match=r"flash_attention_grad.*'dout' must have the shape"):
        ops.flash_attention_grad(q, q, q, q, Tensor(np.ones((1, 3, 8), np.float32)), lse, lse, head_num=2)


def test_jit_function_and_grad_of_jit_equal_pynative():
    rng = np.random.default_rng(8)
    q, k, v = (Tensor(rng.standard_normal((2, 6, 16)).astype(np.float32)) for _ in range(3))

    def loss(a, b, c):
        return (ops.flash_attention_score(a, b, c, 4, scalar_value=0.5) ** 2).sum()

    eager = ops.grad(loss, grad_position=(0, 1, 2))(q, k, v)
    jitted = mycel.jit(loss)
    np.testing.assert_allclose(jitted(q, k, v).asnumpy(), loss(q, k, v).asnumpy(), rtol=1e-6)
    for g, e in zip(ops.grad(jitted, grad_position=(0, 1, 2))(q, k, v), eager):
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-5, atol=1e-6)

    @mycel.jit
    def grads(a, b, c):  # jit of grad
        return ops.grad(loss, grad_position=(0, 1, 2))(a, b, c)

    for g, e in zip(grads(q, k, v), eager):
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-5, atol=1e-6)


def test_bfloat16_without_avx512_takes_the_float32_kernel(tmp_path):
    """MYCEL_MAX_CPU_ISA=avx2 (read once per process): bf16 inputs go through the float32 kernel,
    still the float64 reference within bf16 rounding."""
    import subprocess
    import sys
    script = tmp_path / "avx2.py"
    script.write_text(
        "import numpy as np, mycel\n"
        "from mycel import ops, Tensor\n"
        "rng = np.random.default_rng(1)\n"
        "q, k, v = (rng.standard_normal((2, 3, 9, 16)).astype(np.float32) for _ in range(3))\n"
        "t = [Tensor(a, dtype=mycel.bfloat16) for a in (q, k, v)]\n"
        "out = ops.flash_attention_score(*t, 3, scalar_value=0.25, input_layout='BNSD')\n"
        "np.save(%r, out.astype(mycel.float32).asnumpy())\n"
        "np.save(%r, np.stack([x.astype(mycel.float32).asnumpy() for x in t]))\n"
        % (str(tmp_path / "out.npy"), str(tmp_path / "qkv.npy")))
    env = dict(os.environ, MYCEL_MAX_CPU_ISA="avx2")
    subprocess.run([sys.executable, str(script)], check=True, env=env, timeout=300)
    q, k, v = np.load(tmp_path / "qkv.npy").astype(np.float64)
    got = np.load(tmp_path / "out.npy")
    want = reference(q, k, v, np.zeros_like(q), 0.25)[0]
    np.testing.assert_allclose(got, want, rtol=1.5e-2, atol=1e-2 * np.abs(want).max())
