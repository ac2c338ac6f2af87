"""bf16 O2 work of the graph backend and kernels (issue 19): the optimizer's chain writes each
weight's bfloat16 master copy in its own pass (backend/keep_master_copies.cc: the step's casts of
the weight become checks of its write version, the gradient's cast folds into the chain), and a
relu's bf16 backward dy * cast(y > 0) runs as one pass (backend/fuse_mask_product.cc). Both must
give the unfused program's results bit for bit (MYCEL_MASTER_COPY=0 / MYCEL_FUSE_MASK_PRODUCT=0
turn them off; the "unfused" runs also take the scalar loops that MYCEL_EW_ROUND_ROW,
MYCEL_LN_GRAD_ROWS and MYCEL_BF16_BINARY_LANES replace with vector lanes), also when the weights are written between steps from outside the program. Also:
bf16 dense + relu as one oneDNN primitive, and bf16 weight-gradient matmuls split along K."""
import os
import sys

import numpy as np
import pytest

import mycel
from mycel import amp, nn, ops, Tensor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from models import TransformerClassifier  # noqa: E402
from models.resnet import BasicBlock, ResNet  # noqa: E402

OFF = ("MYCEL_MASTER_COPY", "MYCEL_FUSE_MASK_PRODUCT", "MYCEL_EW_ROUND_ROW", "MYCEL_LN_GRAD_ROWS",
       "MYCEL_BF16_BINARY_LANES")


pytestmark = pytest.mark.usefixtures("graph_mode")


class MLP(nn.Cell):
    def __init__(self):
        super().__init__()
        self.body = nn.SequentialCell(nn.Dense(32, 64), nn.ReLU(), nn.Dense(64, 64), nn.ReLU(),
                                      nn.Dense(64, 10))

    def construct(self, x):
        return self.body(x)


MODELS = {
    "mlp": (MLP, (16, 32)),
    "resnet": (lambda: ResNet(BasicBlock, [1, 1, 1, 1], widths=(8, 16, 16, 16)), (8, 3, 16, 16)),
    "transformer": (lambda: TransformerClassifier(d_model=32, nhead=2, dim_feedforward=64, num_layers=1),
                    (8, 8, 32)),
}


def _data(shape, seed=0):
    rng = np.random.default_rng(seed)
    return (Tensor(rng.standard_normal(shape).astype(np.float32)),
            Tensor(rng.integers(0, 10, shape[0]).astype(np.int32)))


OPTIMIZERS = {
    "momentum": lambda ps: nn.Momentum(ps, 0.02, 0.9),
    "sgd": lambda ps: nn.SGD(ps, 0.02),
    "adam": lambda ps: nn.Adam(ps, 0.002),
}


def _step(name, optimizer="momentum"):
    make, _ = MODELS[name]
    mycel.set_seed(3)
    net = make()
    opt = OPTIMIZERS[optimizer](net.trainable_params())
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = amp.build_train_network(net, opt, loss, level="O2")
    step.set_train(True)
    return net, step


def _run(monkeypatch, fused, name, between=None, steps=6, batches=None, optimizer="momentum"):
    """Losses of `steps` O2 steps (`between(net, i)` runs before step i), the final weights and
    the first program's listing."""
    for k in OFF:
        monkeypatch.setenv(k, "1" if fused else "0")
    # Both in NCHW: unfused, a relu's backward has a bool mask, which stays NCHW, so the two
    # programs' convolutions would read their operands in other layouts and sum in another order
    # (test_bf16_nhwc.py compares the NHWC step with the NCHW one).
    monkeypatch.setenv("MYCEL_BF16_NHWC", "0")
    net, step = _step(name, optimizer)
    shape = MODELS[name][1]
    batches = batches or [_data(shape)]
    losses = []
    for i in range(steps):
        if between:
            between(net, i)
        x, y = batches[i % len(batches)]
        losses.append(step(x, y).asnumpy())
    x, y = batches[0]
    text = step.__dict__["_compiled"]._graph.program_text(x, y)
    return np.array(losses), [p.asnumpy() for p in net.trainable_params()], text


def _same(a, b):
    la, wa, _ = a
    lb, wb, _ = b
    np.testing.assert_array_equal(la, lb)
    assert len(wa) == len(wb)
    for u, v in zip(wa, wb):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_o2_steps_equal_the_unfused_program(monkeypatch, name):
    fused = _run(monkeypatch, True, name)
    plain = _run(monkeypatch, False, name)
    _same(fused, plain)
    text, before = fused[2], plain[2]
    checks, chains = text.count("cast[master copy]("), text.count("+master copy(")
    assert chains >= 2 and checks >= chains and "master copy" not in before, text
    if name == "mlp":  # every weight and bias: the forward cast and the gradient's cast gone
        assert chains == 6 and before.count("= cast(") - text.count("= cast(") == 6 + 6 + 2, text
    assert "mask_product" in text and "mask_product" not in before, text
    if name == "mlp":  # both relus' backward fused: no bool mask left
        assert "greater(" not in text and before.count("greater(") == 2, text


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_other_optimizers_equal_the_unfused_program(monkeypatch, optimizer):
    """SGD's update is one chain with one output, which writes the copies too; whatever Adam's
    chains become, the step keeps the unfused bits."""
    fused = _run(monkeypatch, True, "mlp", optimizer=optimizer)
    _same(fused, _run(monkeypatch, False, "mlp", optimizer=optimizer))
    if optimizer == "sgd":
        assert fused[2].count("+master copy(") == 6, fused[2]


def test_master_copy_follows_writes_from_outside(monkeypatch):
    """set_data, an eager assign and a numpy round trip between steps: the next step must read
    the new weights (a stale bf16 copy would not)."""
    def between(net, i):
        ps = net.trainable_params()
        if i == 2:
            ps[0].set_data(Tensor(ps[0].asnumpy() * 0.5))
        if i == 3:
            ops.assign(ps[2], Tensor(ps[2].asnumpy()[::-1].copy()))
        if i == 4:
            ps[4].set_data(Tensor(np.zeros(ps[4].shape, np.float32)))

    fused = _run(monkeypatch, True, "mlp", between)
    _same(fused, _run(monkeypatch, False, "mlp", between))
    untouched = _run(monkeypatch, True, "mlp")
    assert not np.array_equal(fused[0][2:], untouched[0][2:])  # the writes did change the losses


def test_two_programs_updating_the_same_weights(monkeypatch):
    """Two batch shapes: two compiled programs, each with its own copies, update the same weights
    in turn; each must see the other's updates."""
    batches = [_data((16, 32), 0), _data((12, 32), 1)]
    fused = _run(monkeypatch, True, "mlp", steps=8, batches=batches)
    _same(fused, _run(monkeypatch, False, "mlp", steps=8, batches=batches))


def _bf16_bits(a):
    """float32 -> bfloat16 bits, nearest even, NaN quieted (numpy, independent of Mycel)."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), r)


def _bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


class MaskProduct(nn.Cell):
    def __init__(self, cmp, left):
        super().__init__()
        self.cmp, self.left = cmp, left

    def construct(self, dy, y):
        t = ops.zeros((), y.dtype) + 0.25
        if self.cmp == "greater":
            m = ops.greater(t, y) if self.left else ops.greater(y, t)
        else:
            m = ops.less(t, y) if self.left else ops.less(y, t)
        return ops.mul(dy, ops.cast(m, mycel.bfloat16))


@pytest.mark.parametrize("cmp", ["greater", "less"])
@pytest.mark.parametrize("left", [False, True])
@pytest.mark.parametrize("ydtype", ["bfloat16", "float32"])
def test_mask_product_matches_numpy(monkeypatch, cmp, left, ydtype):
    rng = np.random.default_rng(1)
    shape = (37, 129)  # not a multiple of any vector width
    y32 = _bf16_values(_bf16_bits(rng.standard_normal(shape).astype(np.float32)))
    y32.flat[:6] = [0.0, -0.0, 0.25, np.nan, np.inf, -np.inf]
    dy = _bf16_bits(rng.standard_normal(shape).astype(np.float32) * 100)
    dy.flat[6:12] = _bf16_bits(np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40], np.float32))
    dy.flat[12:16] = [0x7F81, 0xFF81, 0x0001, 0x8001]  # signalling NaNs, bf16 subnormals
    lo, hi = (0.25, y32) if left else (y32, 0.25)
    with np.errstate(invalid="ignore"):
        mask = (lo > hi) if cmp == "greater" else (lo < hi)
        want = _bf16_bits(_bf16_values(dy) * mask.astype(np.float32))
    ydt = getattr(mycel, ydtype)
    got = {}
    for fused in (True, False):
        monkeypatch.setenv("MYCEL_FUSE_MASK_PRODUCT", "1" if fused else "0")
        f = MaskProduct(cmp, left)
        dyt = Tensor(_bf16_values(dy)).astype(mycel.bfloat16)
        yt = Tensor(y32).astype(ydt)
        out = f(dyt, yt)
        assert out.dtype == mycel.bfloat16
        got[fused] = _bf16_bits(out.astype(mycel.float32).asnumpy())
        text = f.__dict__["_compiled"]._graph.program_text(dyt, yt)
        assert ("mask_product" in text) == fused, text
    np.testing.assert_array_equal(got[True], want)
    np.testing.assert_array_equal(got[False], want)


def test_relu_bf16_gradient_matches_numpy(monkeypatch):
    """grad of sum(relu(x) * w) in bf16 is w where x > 0, else 0 (exact in bf16)."""
    rng = np.random.default_rng(2)
    x = _bf16_values(_bf16_bits(rng.standard_normal((64, 33)).astype(np.float32)))
    w = _bf16_values(_bf16_bits(rng.standard_normal((64, 33)).astype(np.float32)))
    x[0, :3] = [0.0, -0.0, 1e-30]

    class F(nn.Cell):
        def construct(self, x, w):
            return ops.sum(ops.relu(x) * w)

    g = ops.GradOperation()(F())
    xt, wt = Tensor(x).astype(mycel.bfloat16), Tensor(w).astype(mycel.bfloat16)
    got = g(xt, wt).astype(mycel.float32).asnumpy()
    np.testing.assert_array_equal(got, np.where(x > 0, w, 0.0).astype(np.float32))


class DenseRelu(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(48, 40)
        self.dense.to_float(mycel.bfloat16)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.dense(x))


def test_bf16_dense_relu_fuses_and_equals_the_unfused_ops(monkeypatch):
    """A bf16 dense followed by relu runs as one oneDNN primitive with a relu post-op: the same
    values as relu applied to the unfused dense's bf16 output."""
    rng = np.random.default_rng(4)
    x = Tensor(rng.standard_normal((33, 48)).astype(np.float32))
    out = {}
    for fuse in ("1", "0"):
        monkeypatch.setenv("MYCEL_FUSE", fuse)
        mycel.set_seed(5)
        f = DenseRelu()
        out[fuse] = f(x).astype(mycel.float32).asnumpy()
        text = f.__dict__["_compiled"]._graph.program_text(x)
        assert ("dense+relu" in text) == (fuse == "1"), text
    assert (out["1"] >= 0).all() and (out["1"] > 0).any() and (out["1"] == 0).any()
    np.testing.assert_array_equal(out["1"], out["0"])


@pytest.mark.parametrize("shape", [(2048, 128, 512), (1024, 96, 40), (1030, 16, 24)])
def test_bf16_weight_gradient_matmul_split_along_k(shape):
    """x^T dy in bf16 with a long reduction (two threads: one float32 partial per thread, summed
    and rounded once): within bf16's rounding of the float64 product of the same bf16 values, on
    two threads as on one."""
    k, m, n = shape
    rng = np.random.default_rng(6)
    a = _bf16_values(_bf16_bits(rng.standard_normal((k, m)).astype(np.float32)))
    b = _bf16_values(_bf16_bits(rng.standard_normal((k, n)).astype(np.float32)))
    ref = a.astype(np.float64).T @ b.astype(np.float64)
    at, bt = Tensor(a).astype(mycel.bfloat16), Tensor(b).astype(mycel.bfloat16)
    threads = mycel.get_context("num_threads")
    got = {}
    try:
        for t in (2, 1):
            mycel.set_context(mode=mycel.PYNATIVE_MODE, num_threads=t)
            got[t] = ops.matmul(at, bt, transpose_a=True).astype(mycel.float32).asnumpy()
    finally:
        mycel.set_context(num_threads=threads)
    # bf16's half ulp (2^-9 relative) plus float32 accumulation over k terms of scale |a||b|
    tol = np.abs(ref) * 2.0 ** -8 + k * 2.0 ** -22 * (np.abs(a).T @ np.abs(b))
    for t, c in got.items():
        assert (np.abs(c - ref) <= tol).all(), (t, np.abs(c - ref).max())


@pytest.mark.parametrize("name", ["mlp", "transformer"])
def test_warm_o2_step_allocates_no_more_than_unfused(monkeypatch, name):
    """The copies live with the program and the chains' block buffers with the threads: a warm
    step makes no allocator call the unfused one does not."""
    calls = {}
    for fused in ("1", "0"):
        for k in OFF:
            monkeypatch.setenv(k, fused)
        _, step = _step(name)
        x, y = _data(MODELS[name][1])
        for _ in range(3):
            step(x, y)
        before = mycel._mycel.allocator_stats()["num_allocs"]
        step(x, y)
        calls[fused] = mycel._mycel.allocator_stats()["num_allocs"] - before
    assert calls["1"] <= calls["0"], calls
