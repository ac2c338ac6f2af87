"""Operator fusion in graph mode (src/mycel/backend/fuse_*.cc): program listings before and after
fusion, and results equal to eager mode (and to the unfused program) bit for bit on LeNet5
forward, its gradients, and random elementwise chains."""
import importlib.util
import os
import platform
import re
import subprocess
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor, _mycel, nn, ops
from mycel._mycel import graph as G
from mycel.common.parameter import Parameter
from train_helpers import LeNet5, WithLoss

RNG = np.random.default_rng(0)


# The direct convolution and its conv+relu+pool fusion have an AVX-512 and an AVX2 copy, chosen
# at run time (core/cpu_features.h); the build's baseline (x86-64-v3) has AVX2, so only another
# architecture keeps conv and pool apart.
needs_direct = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                                  reason="the direct conv kernel needs AVX2 or AVX-512")


def avx512_batch_lanes():
    """Whether this CPU has AVX-512 (F, BW, DQ, VL), where a few-channel conv with narrow rows at
    a batch of 16 or more runs with images in the vector lanes (conv_batch_lanes.h) unless
    MYCEL_MAX_CPU_ISA caps the kernels below AVX-512 or MYCEL_CONV_DIRECT=0 keeps oneDNN's."""
    cap = os.environ.get("MYCEL_MAX_CPU_ISA", "").lower()
    if cap and not (cap.startswith(("avx512", "amx")) or cap == "all"):
        return False
    if os.environ.get("MYCEL_CONV_DIRECT") == "0":
        return False
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read().split("\n\n")[0]
    except OSError:
        return False
    flags = dict((k.strip(), v.strip()) for k, v in
                 (line.split(":", 1) for line in text.splitlines() if ":" in line))
    flags = flags.get("flags", "").split()
    return all(f in flags for f in ("avx512f", "avx512bw", "avx512dq", "avx512vl"))


@pytest.fixture(autouse=True)
def _restore():
    # The listings here pin fusion alone; the layout step has its own tests (test_layout.py).
    os.environ["MYCEL_LAYOUT"] = "0"
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    os.environ.pop("MYCEL_FUSE", None)
    os.environ.pop("MYCEL_LAYOUT", None)


def t(*shape, seed=0, scale=1.0):
    return Tensor((np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32))


def unfused(fn):
    """Runs fn() with fusion switched off for the programs it compiles."""
    os.environ["MYCEL_FUSE"] = "0"
    try:
        return fn()
    finally:
        os.environ.pop("MYCEL_FUSE", None)


@needs_direct
def test_lenet5_forward_fused_equals_eager_bitwise():
    mycel.set_seed(1)
    net = LeNet5()
    x = t(16, 1, 32, 32, seed=3)
    eager = net(x).asnumpy()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    graph = net(x).asnumpy()
    np.testing.assert_array_equal(graph, eager)
    text = G.compile(net).program_text(x)
    # conv1 has one input channel: the direct kernel pools it in the same pass.
    assert text.count("conv2d+relu+max_pool2d(") == 1 and text.count("conv2d+relu(") == 1, text
    assert text.count("dense+relu(") == 2, text
    assert "\n  r" in text and " relu(" not in text, text  # no relu left on its own
    before = unfused(lambda: G.compile(net).program_text(x))
    assert before.count(" relu(") == 4 and "+relu" not in before, before


@needs_direct
def test_lenet5_program_before_and_after():
    mycel.set_seed(1)
    net = LeNet5()
    x = t(2, 1, 32, 32, seed=3)
    # The graph's name gets a ".N" suffix when the process compiled another LeNet5 before.
    listing = lambda: re.sub(r"@LeNet5(\.\d+)?\(", "@LeNet5(", G.compile(net).program_text(x))
    assert unfused(listing) == (
        "function @LeNet5(r0)\n"
        "  r3 = conv2d(r0, r1, None)\n"
        "  r4 = relu(r3)\n"
        "  r5 = max_pool2d(r4)\n"
        "  r8 = conv2d(r5, r6, None)\n"
        "  r9 = relu(r8)\n"
        "  r10 = max_pool2d(r9)\n"
        "  r11 = view flatten(r10)\n"
        "  r14 = dense(r11, r12, r13)\n"
        "  r15 = relu(r14)\n"
        "  r18 = dense(r15, r16, r17)\n"
        "  r19 = relu(r18)\n"
        "  r22 = dense(r19, r20, r21)\n"
        "  return r22\n")
    assert listing() == (
        "function @LeNet5(r0)\n"
        "  r5 = conv2d+relu+max_pool2d(r0, r1, None)\n"
        "  r9 = conv2d+relu(r5, r6, None)\n"
        "  r10 = max_pool2d(r9)\n"
        "  r11 = view flatten(r10)\n"
        "  r15 = dense+relu(r11, r12, r13)\n"
        "  r19 = dense+relu(r15, r16, r17)\n"
        "  r22 = dense(r19, r20, r21)\n"
        "  return r22\n")


def test_lenet5_gradients_fused_equal_unfused_and_eager():
    mycel.set_context(mode=mycel.GRAPH_MODE)  # the compiled gradient path (PyNative records)
    mycel.set_seed(2)
    net = LeNet5()
    wl = WithLoss(net)
    params = net.trainable_params()
    x = t(8, 1, 32, 32, seed=4)
    y = Tensor(np.random.default_rng(5).integers(0, 10, 8).astype(np.int32))
    # Chains fused with the interpreter (MYCEL_TE_FUSION=0) keep every op's arithmetic: the same
    # bits. By default a chain into a bias gradient's sum is one fused reduction, which sums in
    # its own order (kernels/cpu/ordered_reduce.h): equal to rounding.
    os.environ["MYCEL_TE_FUSION"] = "0"
    try:
        loss_f, grads_f = mycel.value_and_grad(wl, None, params)(x, y)
        # The masks of the four relu gradients are fused chains (greater, cast, mul).
        g = mycel.value_and_grad(wl, None, params)
        g(x, y)
        text = list(g._compiled.values())[0].program_text(x, y)
    finally:
        os.environ.pop("MYCEL_TE_FUSION")
    loss_u, grads_u = unfused(lambda: mycel.value_and_grad(wl, None, params)(x, y))
    np.testing.assert_array_equal(loss_f.asnumpy(), loss_u.asnumpy())
    for gf, gu in zip(grads_f, grads_u):
        np.testing.assert_array_equal(gf.asnumpy(), gu.asnumpy())
    assert text.count("fused_elementwise{t0=greater(i0,i1); t1=cast(t0); t2=mul(i2,t1)}") == 4, text
    loss_d, grads_d = mycel.value_and_grad(wl, None, params)(x, y)  # the default
    np.testing.assert_array_equal(loss_d.asnumpy(), loss_u.asnumpy())
    for gd, gu in zip(grads_d, grads_u):
        np.testing.assert_allclose(gd.asnumpy(), gu.asnumpy(), rtol=1e-5, atol=1e-7)
    g = mycel.value_and_grad(wl, None, params)
    g(x, y)
    assert "fused_reduce{" in list(g._compiled.values())[0].program_text(x, y)
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    # Independent reference: central finite differences of the loss along one weight entry.
    w = params[0]
    base = w.asnumpy().copy()
    eps = 1e-2

    def loss_at(v):
        arr = base.copy()
        arr.flat[7] = v
        w.set_data(Tensor(arr))
        return float(wl(x, y).asnumpy())
    fd = (loss_at(base.flat[7] + eps) - loss_at(base.flat[7] - eps)) / (2 * eps)
    w.set_data(Tensor(base))
    assert abs(fd - grads_f[0].asnumpy().flat[7]) < 2e-3 * max(1.0, abs(fd))


def test_dense_add_chain_program_and_values():
    w, b, c = t(16, 8, seed=1), t(16, seed=2), t(16, seed=3)

    def f(x):
        return ops.sigmoid(ops.relu(ops.dense(x, w, b) + c) * 0.5 - 1.0)
    x = t(5, 8, seed=4)
    eager = f(x).asnumpy()
    assert unfused(lambda: G.compile(f).program_text(x)) == (
        "function @f(r0)\n"
        "  r3 = dense(r0, r1, r2)\n"
        "  r5 = add(r3, r4)\n"
        "  r6 = relu(r5)\n"
        "  r8 = mul(r6, r7)\n"
        "  r10 = sub(r8, r9)\n"
        "  r11 = sigmoid(r10)\n"
        "  return r11\n")
    assert G.compile(f).program_text(x) == (
        "function @f(r0)\n"
        "  r6 = dense+add+relu(r0, r1, r2, r4)\n"
        "  r11 = fused_elementwise{t0=mul(i0,i1); t1=sub(t0,i2); t2=sigmoid(t1)}(r6, r7, r9)\n"
        "  return r11\n")
    np.testing.assert_array_equal(mycel.jit(f)(x).asnumpy(), eager)


UNARY = ["ops.relu({})", "ops.neg({})", "ops.abs({})", "ops.square({})", "ops.exp({})",
         "ops.sigmoid({})", "ops.tanh({})", "ops.sqrt(ops.abs({}))"]
BINARY = ["({} + {})", "({} - {})", "({} * {})", "({} / {})", "ops.maximum({}, {})",
          "ops.minimum({}, {})"]


def random_chain(rng, n_inputs, length):
    """Source of a function of n_inputs tensors: a random chain of unary and binary ops, whose
    second operands are inputs or Python scalars (weak scalars broadcast)."""
    expr = "a0"
    for _ in range(length):
        if rng.random() < 0.4:
            expr = rng.choice(UNARY).format(expr)
        else:
            other = f"a{rng.integers(n_inputs)}" if rng.random() < 0.7 else f"{rng.uniform(-2, 2):.3f}"
            l, r = (expr, other) if rng.random() < 0.5 else (other, expr)
            expr = rng.choice(BINARY).format(l, r)
    args = ", ".join(f"a{k}" for k in range(n_inputs))
    return f"def chain({args}):\n    return {expr}\n"


@pytest.mark.parametrize("seed", range(12))
def test_random_elementwise_chains_fused_equal_eager_bitwise(tmp_path, seed):
    rng = np.random.default_rng(seed)
    n_inputs = int(rng.integers(1, 4))
    src = "from mycel import ops\n\n" + random_chain(rng, n_inputs, int(rng.integers(3, 9)))
    path = tmp_path / f"chain_{seed}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"chain_{seed}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    shape = (int(rng.integers(1, 40)), int(rng.integers(1, 300)))  # odd sizes: partial blocks
    args = [t(*shape, seed=seed * 10 + k) for k in range(n_inputs)]
    eager = mod.chain(*args).asnumpy()
    compiled = G.compile(mod.chain)
    graph = compiled(*args).asnumpy()
    np.testing.assert_array_equal(graph, eager, err_msg=src)
    assert compiled.stats(*args)["num_fused"] >= 1, compiled.program_text(*args)


def test_shared_intermediate_is_not_fused_away():
    def f(x, y):
        e = ops.exp(x)
        return ops.relu(e * y) + e, e
    x, y = t(7, 9, seed=1), t(7, 9, seed=2)
    want = f(x, y)
    got = G.compile(f)(x, y)
    for g, e in zip(got, want):
        np.testing.assert_array_equal(g.asnumpy(), e.asnumpy())
    text = G.compile(f).program_text(x, y)
    assert " exp(" in text, text  # e is an output and read twice: it stays a tensor


def np_conv_relu_pool(x, w, pad):
    """float64 reference: conv2d (stride 1, zero padding `pad`), relu, 2x2 stride 2 max pooling."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    oh, ow = h - kh + 1, wd - kw + 1
    y = np.zeros((n, oc, oh, ow))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,oc->nohw", x[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    y = np.maximum(y, 0)[:, :, :oh // 2 * 2, :ow // 2 * 2]
    return y.reshape(n, oc, oh // 2, 2, ow // 2, 2).max(axis=(3, 5))


class ConvPool(nn.Cell):
    """A first layer with few channels, relu and 2x2 max pooling; optionally also returns the conv."""

    def __init__(self, c, oc, k, pad, also_conv=False):
        super().__init__()
        self.w = Parameter(t(oc, c, k, k, seed=7, scale=0.3), name="w")
        self.pad, self.also_conv = pad, also_conv

    def construct(self, x):
        y = ops.relu(ops.conv2d(x, self.w, pad_mode="pad", padding=self.pad))
        p = ops.max_pool2d(y, kernel_size=2, strides=2)
        if self.also_conv:
            return p, y
        return p


@needs_direct
@pytest.mark.parametrize("layout", ["0", "auto"])
@pytest.mark.parametrize("c,oc,k,pad,hw", [(1, 6, 5, 0, 32), (3, 16, 3, 1, 15), (2, 5, 3, 2, 40)])
def test_conv_relu_pool_is_one_instruction_equal_to_eager_and_numpy(layout, c, oc, k, pad, hw):
    if layout == "auto":
        os.environ.pop("MYCEL_LAYOUT", None)
    net = ConvPool(c, oc, k, pad)
    x = t(3, c, hw, hw + 1, seed=8)
    eager = net(x).asnumpy()
    np.testing.assert_allclose(eager, np_conv_relu_pool(x.asnumpy(), net.w.asnumpy(), pad),
                               rtol=1e-5, atol=1e-5)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    np.testing.assert_array_equal(net(x).asnumpy(), eager)  # same arithmetic, exact max
    text = G.compile(net).program_text(x)
    assert "conv2d+relu+max_pool2d(" in text and " max_pool2d(" not in text, text


def test_conv_read_twice_is_not_fused_with_its_pooling():
    net = ConvPool(1, 4, 3, 1, also_conv=True)
    x = t(2, 1, 12, 12, seed=9)
    eager = [o.asnumpy() for o in net(x)]
    mycel.set_context(mode=mycel.GRAPH_MODE)
    for g, e in zip(net(x), eager):
        np.testing.assert_array_equal(g.asnumpy(), e)
    text = G.compile(net).program_text(x)
    assert "+max_pool2d" not in text and "max_pool2d(" in text, text


@needs_direct
def test_dynamic_batch_program_fuses_and_keeps_layouts_bitwise_equal_to_eager():
    """set_inputs with a None batch: fusion and the layout step only need the per-sample dims, so
    the one dynamic Program has the static one's instructions; every batch size (1, odd, 0)
    gives eager's result."""
    os.environ.pop("MYCEL_LAYOUT", None)
    mycel.set_seed(5)
    net = LeNet5()
    spec = Tensor(shape=[None, 1, 32, 32], dtype=mycel.float32)
    static = G.compile(net).program_text(t(4, 1, 32, 32))
    dynamic = G.compile(net).program_text(spec)
    assert dynamic == static, dynamic
    assert "conv2d+relu+max_pool2d(" in dynamic and "dense+relu(" in dynamic, dynamic
    xs = [t(n, 1, 32, 32, seed=10 + n) for n in (5, 1, 0, 16)]
    eager = [net(x).asnumpy() for x in xs]
    net.set_inputs(spec)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    for x, e in zip(xs, eager):
        if x.shape[0] >= 16 and avx512_batch_lanes():
            # eager's plain-layout conv2 at a batch of 16 runs with images in the vector lanes
            # (conv_batch_lanes.h), the graph's blocked one in oneDNN: other summation order
            np.testing.assert_allclose(net(x).asnumpy(), e, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(net(x).asnumpy(), e)
    assert net._compiled.graph.num_programs == 1


@needs_direct
@pytest.mark.parametrize("tag", ["nChw16c", "nChw8c", "nhwc"])
def test_conv_pool_fusion_under_every_layout_tag(tag):
    """The fused conv+pool writes whatever blocked layout the layout step asks for (nChw8c with
    16 channels spans two blocks); the CPU picks one tag per process, so the others run in a
    child process with MYCEL_LAYOUT_TAG forced."""
    env = dict(os.environ, MYCEL_LAYOUT_TAG=tag)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                        __file__, "-k", "conv_relu_pool or dynamic_batch"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "7 passed" in r.stdout, r.stdout[-3000:]
