"""Kernels that write straight into the weight a later assign stores them in
(src/mycel/backend/assign_in_place.cc): training equals the unfused program and eager mode, the
listing shows which kernels write a weight, and the cases that must keep the copy keep it."""
import os

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.common.parameter import Parameter


class MLP(nn.Cell):
    """Odd sizes, so no kernel sees a convenient multiple."""

    def __init__(self):
        super().__init__()
        self.body = nn.SequentialCell(nn.Dense(13, 7), nn.ReLU(), nn.Dense(7, 5))

    def construct(self, x):
        return self.body(x)


def data(seed=0):
    rng = np.random.default_rng(seed)
    return (Tensor(rng.standard_normal((9, 13)).astype(np.float32)),
            Tensor(rng.integers(0, 5, 9).astype(np.int32)))


def train(mode, make_opt, steps=6, fuse=True):
    """Weights (and the optimizer's state) after `steps` steps from one seed, and the losses."""
    if not fuse:
        os.environ["MYCEL_FUSE"] = "0"
    try:
        mycel.set_context(mode=mode)
        mycel.set_seed(3)
        net = MLP()
        opt = make_opt(net.trainable_params())
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
        x, y = data()
        losses = [float(step(x, y).asnumpy()) for _ in range(steps)]
        weights = [p.asnumpy().copy() for p in net.trainable_params()]
        return losses, weights, step
    finally:
        os.environ.pop("MYCEL_FUSE", None)


OPTIMIZERS = {
    "momentum": lambda ps: nn.Momentum(ps, learning_rate=0.1, momentum=0.9),
    "sgd": lambda ps: nn.SGD(ps, learning_rate=0.1),
    "adam": lambda ps: nn.Adam(ps, learning_rate=0.01),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_training_equals_unfused_and_eager(name):
    make = OPTIMIZERS[name]
    g_loss, g_w, _ = train(mycel.GRAPH_MODE, make)
    u_loss, u_w, _ = train(mycel.GRAPH_MODE, make, fuse=False)
    e_loss, e_w, _ = train(mycel.PYNATIVE_MODE, make)
    # The losses move (the updates did land in the weights) ...
    assert g_loss[-1] < g_loss[0]
    # ... and the same updates landed as without the rewrite and as eagerly.
    np.testing.assert_allclose(g_loss, u_loss, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g_loss, e_loss, rtol=1e-5, atol=1e-6)
    for a, b, c in zip(g_w, u_w, e_w):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)


def test_momentum_matches_numpy_reference():
    # Momentum from the graph step against the same update written in numpy, with the
    # gradients of one step taken from the eager gradient of the loss.
    mycel.set_seed(3)
    net = MLP()
    w0 = [p.asnumpy().copy() for p in net.trainable_params()]
    x, y = data()
    loss = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    grads = [g.asnumpy() for g in mycel.grad(loss, grad_position=None, weights=net.trainable_params())(x, y)]
    mycel.set_context(mode=mycel.GRAPH_MODE)
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
    step = nn.TrainOneStepCell(loss, opt)
    step(x, y)
    for p, w, g in zip(net.trainable_params(), w0, grads):
        # first step: accum = 0 * 0.9 + g; w -= 0.1 * accum
        np.testing.assert_allclose(p.asnumpy(), w - 0.1 * g, rtol=1e-5, atol=1e-6)


def test_listing_marks_the_kernels_that_write_weights():
    _, _, step = train(mycel.GRAPH_MODE, OPTIMIZERS["momentum"], steps=1)
    x, y = data()
    text = step.__dict__["_compiled"]._graph.program_text(x, y)
    marked = [line for line in text.splitlines() if "# into r" in line]
    # Momentum writes its accumulation and its weight, two per parameter (4 parameters, one
    # two-output pass each: fuse_elementwise.cc), and the optimizer its step counter.
    pairs = []
    for line in marked:  # each marked kernel's outputs are then assigned to those weights
        outs = [r.strip() for r in line.split("=")[0].split(",")]
        weights = [r.strip() for r in line.rsplit("# into ", 1)[1].split(",")]
        assert len(outs) == len(weights), text
        pairs += zip(outs, weights)
    assert len(pairs) == 9, text
    for out, weight in pairs:
        assert f"assign({weight}, {out})" in text, text
    _, _, plain = train(mycel.GRAPH_MODE, OPTIMIZERS["momentum"], steps=1, fuse=False)
    assert "# into r" not in plain.__dict__["_compiled"]._graph.program_text(x, y)


class ReadsOldValue(nn.Cell):
    """Reads the weight between computing its new value and storing it: that read must see the
    old value, so the new one may not be written over the weight early."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([1.0, 2.0, 3.0], np.float32)), name="w",
                           requires_grad=False)

    def construct(self, x):
        new = self.w * 2.0
        old_plus = self.w + x
        return ops.depend(old_plus + 0.0, ops.assign(self.w, new))


class ReturnsNewValue(nn.Cell):
    """Returns the value it stores: the returned tensor must not change when the weight does."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([1.0, 2.0, 3.0], np.float32)), name="w",
                           requires_grad=False)

    def construct(self, x):
        new = self.w * 2.0 + x
        return ops.depend(new, ops.assign(self.w, new))


class KeepsUsingNewValue(nn.Cell):
    """Stores a value, then reads it again (as itself and as the weight) afterwards."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([1.0, -2.0, 3.0, 0.5, 7.0], np.float32)), name="w",
                           requires_grad=False)

    def construct(self, x):
        new = self.w * 0.5 + x
        done = ops.assign(self.w, new)
        return ops.depend(new * 3.0 + self.w, done)


@pytest.mark.parametrize("cls,size", [(ReadsOldValue, 3), (ReturnsNewValue, 3),
                                      (KeepsUsingNewValue, 5)])
def test_custom_assigns_equal_eager(cls, size):
    x = Tensor(np.linspace(-1.0, 1.0, size).astype(np.float32))
    eager, graph = cls(), cls()
    step = mycel.jit(graph)
    for _ in range(3):
        want = eager(x).asnumpy()
        got = step(x).asnumpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_allclose(graph.w.asnumpy(), eager.w.asnumpy(), rtol=1e-6)
    # a returned result does not move when a later step writes the weight
    first = step(x)
    kept = first.asnumpy().copy()
    step(x)
    np.testing.assert_array_equal(first.asnumpy(), kept)
