"""Chain-into-reduction fusion in the default (async) mode: the interpreter that runs a fused
reduction until its kernel is built and the generated kernel reduce in one order
(kernels/cpu/ordered_reduce.h), so they give the same bits on every shape, and a training run's
losses do not depend on when the background compiler finished. References: the generated kernel
(MYCEL_TE_FUSION=1) bit for bit, numpy to rounding."""
import os

import numpy as np
import pytest

import mycel as ms
from mycel import nn, ops
from mycel._mycel import graph as G
from mycel._mycel import te as _te
from te_helpers import kernel_cache  # noqa: F401 (autouse: a fresh TE kernel cache per module)

RNG = np.random.default_rng(9)


@pytest.fixture(autouse=True)
def graph_mode():
    old = os.environ.pop("MYCEL_TE_FUSION", None)
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)
    os.environ.pop("MYCEL_TE_FUSION", None)
    os.environ.pop("MYCEL_TE_BACKGROUND_COMPILES", None)
    if old is not None:
        os.environ["MYCEL_TE_FUSION"] = old


def interpreted(fn, tmp_path):
    """fn() in the default mode with no kernel to switch to: an empty cache and no background
    compile allowed, so every fused reduction runs on the interpreter (the builds fail)."""
    old_cache = os.environ["MYCEL_TE_CACHE"]
    os.environ["MYCEL_TE_CACHE"] = str(tmp_path / "empty_cache")
    os.environ["MYCEL_TE_BACKGROUND_COMPILES"] = "0"
    try:
        before = _te.background_stats()["failed"]
        out = fn()
        _te.wait_background_builds()
        assert _te.background_stats()["failed"] > before  # no kernel was ever there
        return out
    finally:
        os.environ["MYCEL_TE_CACHE"] = old_cache
        os.environ.pop("MYCEL_TE_BACKGROUND_COMPILES")


def generated(fn):
    """fn() with MYCEL_TE_FUSION=1: the fused reductions' kernels run from the first step."""
    os.environ["MYCEL_TE_FUSION"] = "1"
    try:
        return fn()
    finally:
        os.environ.pop("MYCEL_TE_FUSION")


class Reduce(nn.Cell):
    """A chain (exp, tanh, a product with a second input) into one reduction."""

    def __init__(self, kind, axis, keep):
        super().__init__()
        self.kind, self.axis, self.keep = kind, axis, keep

    def construct(self, x, a):
        v = ops.tanh(x * a) + ops.exp(x * 0.5) * a
        if self.kind == "sum":
            return v.sum(self.axis, keepdims=self.keep)
        if self.kind == "mean":
            return v.mean(self.axis, keepdims=self.keep)
        if self.kind == "max":
            return v.max(self.axis, keepdims=self.keep)
        return v.min(self.axis, keepdims=self.keep)


def numpy_ref(kind, axis, keep, xv, av):
    v = np.tanh(xv * av) + np.exp(xv * 0.5) * av
    return getattr(np, kind)(v, axis=axis, keepdims=keep)


# Odd sizes (not multiples of the 16 lanes or the 512-element block), rows shorter and longer
# than a block, reductions over the last, the first, the middle, several and all axes.
CASES = [
    ("sum", (37, 1029), -1, False),
    ("sum", (130, 7), 0, True),
    ("mean", (5, 33, 17), (0, 2), False),
    ("sum", (3, 45, 19), 1, True),
    ("max", (29, 300), -1, True),
    ("min", (11, 13, 9), (1, 2), False),
    ("sum", (2, 3, 5, 7), (0, 1, 2, 3), False),
    ("mean", (61, 1), -1, False),
    ("sum", (4099,), 0, False),
]


@pytest.mark.parametrize("kind,shape,axis,keep", CASES)
def test_interpreter_and_kernel_give_the_same_bits(kind, shape, axis, keep, tmp_path):
    xv = RNG.standard_normal(shape).astype(np.float32)
    av = RNG.standard_normal(shape).astype(np.float32)
    x, a = ms.Tensor(xv), ms.Tensor(av)
    text = G.compile(Reduce(kind, axis, keep)).program_text(x, a)
    assert "fused_reduce{" in text, text  # fused by default, named as the interpreter's
    interp = interpreted(lambda: Reduce(kind, axis, keep)(x, a).asnumpy(), tmp_path)
    gen = generated(lambda: Reduce(kind, axis, keep)(x, a).asnumpy())
    assert gen.dtype == interp.dtype == np.float32 and gen.shape == interp.shape
    np.testing.assert_array_equal(gen.view(np.uint32), interp.view(np.uint32))
    np.testing.assert_allclose(gen, numpy_ref(kind, axis, keep, xv, av), rtol=2e-5, atol=2e-5)


def test_same_bits_over_a_dynamic_batch(tmp_path):
    """set_inputs(None, ...): one size-free kernel; each batch gives the interpreter's bits."""
    spec = ms.Tensor(shape=[None, 21], dtype=ms.float32)

    def run():
        outs = []
        for axis in (0, -1):
            net = Reduce("sum", axis, False)
            net.set_inputs(spec, spec)
            for b in (1, 17, 64, 3):
                rng = np.random.default_rng(b)
                xv, av = (rng.standard_normal((b, 21)).astype(np.float32) for _ in range(2))
                outs.append(net(ms.Tensor(xv), ms.Tensor(av)).asnumpy())
                np.testing.assert_allclose(outs[-1], numpy_ref("sum", axis, False, xv, av),
                                           rtol=2e-5, atol=2e-5)
        return outs

    for g, i in zip(generated(run), interpreted(run, tmp_path)):
        np.testing.assert_array_equal(g.view(np.uint32), i.view(np.uint32))


# Shapes large enough to run on the thread team, split by slices (the leading kept axis): rows,
# the middle axis of a few slices (fewer than three threads, and odd), two axes after one kept.
THREAD_CASES = [
    ("sum", (512, 300), -1),
    ("max", (3, 301, 67), 1),
    ("mean", (2, 97, 160), 1),
    ("sum", (5, 37, 29, 21), (1, 2)),
    # the first axis reduced: one slice, which the threads split by columns when it is fused
    # (ordered_reduce.h's or_run_share) and the reduction kernel splits when it is not
    ("sum", (512, 300), 0),
    ("max", (257, 333), 0),
    ("mean", (2, 64, 200), 1),
]


@pytest.mark.parametrize("kind,shape,axis", THREAD_CASES)
def test_same_bits_with_one_thread_and_with_all(kind, shape, axis, tmp_path, monkeypatch):
    """Each output is reduced by one thread in a fixed order: the thread count (and so the
    split, by slices or by columns) changes nothing, on either runner. (One-slice reductions this
    large stay unfused by default; the limit is raised so that they fuse and split by columns.)"""
    monkeypatch.setenv("MYCEL_TE_ONE_THREAD_WORK", "1000000000")
    xv, av = (RNG.standard_normal(shape).astype(np.float32) for _ in range(2))
    x, a = ms.Tensor(xv), ms.Tensor(av)
    outs, n = [], ms.get_context("num_threads")
    for threads in (1, 2, 3):
        ms.set_context(num_threads=threads)
        try:
            outs.append(interpreted(lambda: Reduce(kind, axis, False)(x, a).asnumpy(), tmp_path))
            outs.append(generated(lambda: Reduce(kind, axis, False)(x, a).asnumpy()))
        finally:
            ms.set_context(num_threads=n)
    for o in outs[1:]:
        np.testing.assert_array_equal(o.view(np.uint32), outs[0].view(np.uint32))
    # (sums of up to 1,073 values of magnitude ~3: rounding up to ~1e-4 in another order)
    np.testing.assert_allclose(outs[0], numpy_ref(kind, axis, False, xv, av), rtol=2e-5, atol=2e-4)


# One slice (the first axis reduced) would run on one thread: fused only below parallel_for's
# grain (32768 elements times the chain's 6 steps + 1), unfused above it (fuse_reduce_te.cc).
ONE_SLICE_CASES = [
    ((16, 64, 128), (0, 1), False),  # a transformer's bias gradient, sum over (batch, sequence)
    ((2048, 512), 0, False),  # a relu layer's, over the batch
    ((37, 29, 101), (0, 1), False),  # odd sizes
    ((300, 700), None, False),  # everything
    ((64, 70), 0, True),  # 4,480 elements x 7: fused, one thread
    ((1, 1, 30, 150), (2,), True),  # unit axes ignored: 4,500 x 7
]


@pytest.mark.parametrize("shape,axis,fused", ONE_SLICE_CASES)
def test_one_slice_reductions_fuse_only_below_the_grain(shape, axis, fused):
    xv, av = (RNG.standard_normal(shape).astype(np.float32) for _ in range(2))
    x, a = ms.Tensor(xv), ms.Tensor(av)
    net = Reduce("sum", axis, False)
    text = G.compile(net).program_text(x, a)
    assert ("fused_reduce{" in text) == fused, text
    if not fused:  # the chain fused alone, then the reduction's own kernel
        assert "fused_elementwise" in text and "sum" in text, text
    rtol, atol = 2e-5, 2e-4 * np.sqrt(xv.size / np.prod(net(x, a).shape))
    np.testing.assert_allclose(net(x, a).asnumpy(), numpy_ref("sum", axis, False, xv, av),
                               rtol=rtol, atol=atol)


@pytest.mark.parametrize("limit,small,large", [("0", False, False), ("10000000", True, True)])
def test_the_one_thread_work_limit_can_be_set(limit, small, large, monkeypatch):
    """MYCEL_TE_ONE_THREAD_WORK (read when a step compiles) moves the limit: 0 fuses none."""
    monkeypatch.setenv("MYCEL_TE_ONE_THREAD_WORK", limit)
    for shape, fused in (((64, 70), small), ((2048, 512), large)):
        x = ms.Tensor(RNG.standard_normal(shape).astype(np.float32))
        text = G.compile(Reduce("sum", 0, False)).program_text(x, x)
        assert ("fused_reduce{" in text) == fused, (limit, shape, text)


def test_a_bad_one_thread_work_limit_is_named(monkeypatch):
    monkeypatch.setenv("MYCEL_TE_ONE_THREAD_WORK", "lots")
    x = ms.Tensor(np.ones((64, 70), np.float32))
    with pytest.raises(ValueError,
                       match="MYCEL_TE_ONE_THREAD_WORK must be an integer >= 0.*'lots'"):
        G.compile(Reduce("sum", 0, False)).program_text(x, x)


def test_a_leading_kept_axis_fuses_at_any_size():
    """Two slices or more split across threads: fused however large (here 2 x 2048 x 512)."""
    xv, av = (RNG.standard_normal((2, 2048, 512)).astype(np.float32) for _ in range(2))
    x, a = ms.Tensor(xv), ms.Tensor(av)
    assert "fused_reduce{" in G.compile(Reduce("sum", 1, False)).program_text(x, a)
    np.testing.assert_allclose(Reduce("sum", 1, False)(x, a).asnumpy(),
                               numpy_ref("sum", 1, False, xv, av), rtol=2e-5, atol=5e-3)


class Mlp(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(24, 40)
        self.fc2 = nn.Dense(40, 5)

    def construct(self, x):
        return self.fc2(ops.relu(self.fc1(x)))


class Loss(nn.Cell):  # softmax cross entropy written with ops: a max, two sums, a mean
    def __init__(self, net):
        super().__init__()
        self.net = net

    def construct(self, x, t):
        z = self.net(x)
        z = z - ops.max(z, axis=-1, keep_dims=True)
        logp = z - ops.log(ops.sum(ops.exp(z), axis=-1, keep_dims=True))
        return ops.mean(ops.sum(-(t * logp), axis=-1))


def test_training_losses_do_not_depend_on_when_the_kernels_are_ready(tmp_path):
    """Losses of 12 Momentum steps: on the interpreter throughout, with the kernels from the
    first step (MYCEL_TE_FUSION=1), and in the default mode where the kernels switch in when the
    background builds finish (waited for after step 4): identical bits."""
    rng = np.random.default_rng(3)
    x = ms.Tensor(rng.standard_normal((33, 24)).astype(np.float32))
    t = ms.Tensor(np.eye(5, dtype=np.float32)[rng.integers(0, 5, 33)])

    def losses(wait_at=None):
        ms.set_seed(7)
        net = Mlp()
        step = nn.TrainOneStepCell(Loss(net), nn.Momentum(net.trainable_params(), 0.1, 0.9))
        out = []
        for k in range(12):
            if k == wait_at:
                _te.wait_background_builds()
            out.append(step(x, t).asnumpy())
        return np.array(out), step

    interp, step = interpreted(losses, tmp_path)
    text = G.compile(step).program_text(x, t)
    assert text.count("fused_reduce{") >= 3, text  # the loss's and the bias gradients' sums
    gen, _ = generated(losses)
    switched, _ = losses(wait_at=4)
    np.testing.assert_array_equal(gen.view(np.uint32), interp.view(np.uint32))
    np.testing.assert_array_equal(switched.view(np.uint32), interp.view(np.uint32))
    assert interp[-1] < interp[0]
    # and the unfused ops (MYCEL_TE_FUSION=0) agree to rounding
    os.environ["MYCEL_TE_FUSION"] = "0"
    try:
        unfused, _ = losses()
    finally:
        os.environ.pop("MYCEL_TE_FUSION")
    np.testing.assert_allclose(interp, unfused, rtol=1e-5, atol=1e-6)
