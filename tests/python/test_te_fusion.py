"""Graph-kernel fusion through TE (MYCEL_TE_FUSION=1, and the default async): the backend's fused elementwise chains,
forward and backward, compiled by the tensor-expression code generator. References: the default
fused interpreter, the unfused ops and numpy."""
import os

import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops
from mycel._mycel import graph as G
from train_helpers import WithLoss
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)


@pytest.fixture(autouse=True)
def graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    os.environ.pop("MYCEL_TE_FUSION", None)
    ms.set_context(mode=ms.PYNATIVE_MODE)


def with_te_fusion(fn):
    os.environ["MYCEL_TE_FUSION"] = "1"
    try:
        return fn()
    finally:
        os.environ.pop("MYCEL_TE_FUSION", None)


class Chain(nn.Cell):
    def construct(self, x, a, b):
        y = ops.relu(x * a + b)
        return ops.sigmoid(y * 2.0 - x) * ops.tanh(x) + ops.exp(-(x * x))


def test_elementwise_chain_forward_and_backward():
    rng = np.random.default_rng(0)
    xv, av, bv = (rng.standard_normal((64, 33)).astype(np.float32) for _ in range(3))
    x, a, b = ms.Tensor(xv), ms.Tensor(av), ms.Tensor(bv)
    net = Chain()
    grad = ms.grad(net, grad_position=(0, 1, 2))
    ref_out, ref_grads = net(x, a, b).asnumpy(), [g.asnumpy() for g in grad(x, a, b)]
    net_te = Chain()
    grad_te = ms.grad(net_te, grad_position=(0, 1, 2))
    out = with_te_fusion(lambda: net_te(x, a, b)).asnumpy()
    grads = with_te_fusion(lambda: [g.asnumpy() for g in grad_te(x, a, b)])
    text = with_te_fusion(lambda: G.compile(Chain()).program_text(x, a, b))
    assert "fused_elementwise[te]{" in text and "fused_elementwise{" not in text, text
    y = np.maximum(xv * av + bv, 0)
    expect = 1 / (1 + np.exp(-(2 * y - xv))) * np.tanh(xv) + np.exp(-xv * xv)
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-6)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)


class Mlp(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(12, 16)
        self.fc2 = nn.Dense(16, 3)

    def construct(self, x):
        return self.fc2(ops.tanh(self.fc1(x)) * 0.5 + x.sum() * 0.01)


def test_training_steps_are_the_same_with_te_fusion():
    # Forward, backward and the optimizer's update chains all go through the TE code generator.
    rng = np.random.default_rng(1)
    x = ms.Tensor(rng.standard_normal((8, 12)).astype(np.float32))
    y = ms.Tensor(rng.integers(0, 3, 8).astype(np.int32))

    def losses():
        ms.set_seed(5)
        net = Mlp()
        step = nn.TrainOneStepCell(WithLoss(net), nn.SGD(net.trainable_params(), 0.1))
        return [float(step(x, y).asnumpy()) for _ in range(3)], step
    ref, _ = losses()
    got, step = with_te_fusion(losses)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    assert got[-1] < got[0]
    assert "fused_elementwise[te]{" in with_te_fusion(lambda: G.compile(step).program_text(x, y))


def test_async_te_fusion_starts_on_the_interpreter_and_switches():
    # MYCEL_TE_FUSION=async: the step compiles without waiting for the system compiler; chains
    # run on the interpreter until their TE kernel is built, then on it. wait_background_builds
    # makes the switch deterministic.
    from mycel._mycel import te as _te
    rng = np.random.default_rng(3)
    xv, av, bv = (rng.standard_normal((48, 29)).astype(np.float32) for _ in range(3))
    x, a, b = ms.Tensor(xv), ms.Tensor(av), ms.Tensor(bv)
    ref = Chain()(x, a, b).asnumpy()
    ref_grads = [g.asnumpy() for g in ms.grad(Chain(), grad_position=(0, 1, 2))(x, a, b)]
    os.environ["MYCEL_TE_FUSION"] = "async"
    try:
        net, grad = Chain(), ms.grad(Chain(), grad_position=(0, 1, 2))
        first = net(x, a, b).asnumpy()
        first_grads = [g.asnumpy() for g in grad(x, a, b)]
        text = G.compile(Chain()).program_text(x, a, b)
        assert _te.wait_background_builds() >= 1
        after = net(x, a, b).asnumpy()
        after_grads = [g.asnumpy() for g in grad(x, a, b)]
        again = net(x, a, b).asnumpy()
    finally:
        os.environ.pop("MYCEL_TE_FUSION", None)
    assert "fused_elementwise{" in text, text  # the interpreter's name: the same bits
    te_out = with_te_fusion(lambda: Chain()(x, a, b)).asnumpy()
    np.testing.assert_array_equal(after, again)
    for got in (first, after):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(after, te_out, rtol=1e-6, atol=1e-7)
    for gs in (first_grads, after_grads):
        for g, r in zip(gs, ref_grads):
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)


# Thirty-six chains of different programs (outer(inner(x)) * x for six unary ops each): thirty-six
# background builds of 0.5 s or more, far more compiler time than the short process lives.
_UNARY = {"exp": "np.exp", "tanh": "np.tanh", "sigmoid": "sig", "relu": "relu", "abs": "np.abs",
          "neg": "np.negative"}
_PAIRS = [(a, b) for a in _UNARY for b in _UNARY]
DROP_SCRIPT = ("import numpy as np, mycel as ms\nfrom mycel import nn, ops\nms.set_context(mode=ms.GRAPH_MODE)\n\n\n"
               "class Many(nn.Cell):\n    def construct(self, x):\n"
               + "".join(f"        c{k} = ops.{a}(ops.{b}(x * 0.5)) * x\n" for k, (a, b) in enumerate(_PAIRS))
               + "        return ops.stack([" + ", ".join(f"c{k}" for k in range(len(_PAIRS))) + "], 0).sum(0)\n\n\n"
               "def sig(v):\n    return 1 / (1 + np.exp(-v))\n\n\n"
               "def relu(v):\n    return np.maximum(v, 0)\n\n\n"
               "x = np.linspace(-1, 1, 64).astype(np.float32)\n"
               "got = Many()(ms.Tensor(x)).asnumpy()\n"
               "ref = " + " + ".join(f"{_UNARY[a]}({_UNARY[b]}(x * 0.5)) * x" for a, b in _PAIRS) + "\n"
               "np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)\n")


def test_async_builds_still_queued_at_exit_are_dropped(tmp_path):
    # A short process under MYCEL_TE_FUSION=async exits without compiling the chains still
    # waiting for the compiler (builds take turns, each 0.5 s or more): fewer libraries than
    # chains reach the cache (all of them did while an exit waited for every queued build).
    # Sixteen chains were few enough for a loaded machine to finish them all before the exit.
    import subprocess
    import sys
    cache = tmp_path / "cache"
    script = tmp_path / "many_chains.py"  # graph mode reads the source: a file, not -c
    script.write_text(DROP_SCRIPT)
    env = dict(os.environ, MYCEL_TE_FUSION="async", MYCEL_TE_CACHE=str(cache))
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=300)
    built = [p for p in cache.iterdir() if p.suffix == ".so"] if cache.exists() else []
    assert len(built) < len(_PAIRS), built


class ErfChain(nn.Cell):
    def construct(self, x, a):
        return ops.erf(x * a) * 0.5 + x


def test_erf_joins_fused_chains_in_the_interpreter_and_through_te():
    import math
    rng = np.random.default_rng(3)
    xv, av = (rng.standard_normal((40, 17)).astype(np.float32) for _ in range(2))
    x, a = ms.Tensor(xv), ms.Tensor(av)
    expect = np.vectorize(math.erf)((xv * av).astype(np.float64)) * 0.5 + xv
    text = G.compile(ErfChain()).program_text(x, a)
    assert any("fused_elementwise{" in line and "erf" in line for line in text.splitlines()), text
    np.testing.assert_allclose(ErfChain()(x, a).asnumpy(), expect, rtol=1e-6, atol=1e-6)
    text_te = with_te_fusion(lambda: G.compile(ErfChain()).program_text(x, a))
    assert any("fused_elementwise[te]{" in line and "erf" in line for line in text_te.splitlines()), text_te
    out = with_te_fusion(lambda: ErfChain()(x, a)).asnumpy()
    np.testing.assert_allclose(out, expect, rtol=1e-6, atol=1e-6)
    grad = with_te_fusion(lambda: ms.grad(ErfChain(), grad_position=0)(x, a)).asnumpy()
    np.testing.assert_allclose(grad, 2 / np.sqrt(np.pi) * np.exp(-(xv * av) ** 2) * av * 0.5 + 1,
                               rtol=1e-5, atol=1e-6)
