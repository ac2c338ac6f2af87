"""An optimizer's two elementwise chains as one pass with two outputs
(src/mycel/backend/fuse_elementwise.cc, merge_state_chains): momentum's `v' = m v + g` (stored in
v) and `p - lr v'` (stored in p) become one fused instruction that writes both weights. The
updates equal numpy's and the unmerged program's (MYCEL_FUSE=0, eager mode), and the cases that
must stay apart (the new state read again, the old state read by the second chain) do."""
import os

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel.common.parameter import Parameter


def rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


class MomentumChains(nn.Cell):
    """Momentum's update written out: the shape merge_state_chains looks for."""

    def __init__(self, shape):
        super().__init__()
        self.v = Parameter(Tensor(rand(shape, 1)), name="v", requires_grad=False)
        self.w = Parameter(Tensor(rand(shape, 2)), name="w", requires_grad=False)

    def construct(self, g):
        v_new = self.v * 0.9 + g
        ops.assign(self.v, v_new)
        # (returning the new weight would keep it out of the weight's memory: assign_in_place)
        return ops.depend(ops.relu(g), ops.assign(self.w, self.w - 0.1 * v_new))


class ReturnsNewWeight(MomentumChains):
    """Merged, but the new weight is returned: it gets an arena buffer of its own and is copied
    by its assign (only the state is written in place)."""

    def construct(self, g):
        v_new = self.v * 0.9 + g
        ops.assign(self.v, v_new)
        return ops.assign(self.w, self.w - 0.1 * v_new)


class ReadsNewStateAgain(MomentumChains):
    """The new state is also returned: it is read three times, so the chains stay apart."""

    def construct(self, g):
        v_new = self.v * 0.9 + g
        ops.assign(self.v, v_new)
        ops.assign(self.w, self.w - 0.1 * v_new)
        return v_new * 1.0


class ReadsOldStateInSecond(MomentumChains):
    """The weight's update reads the old state too (it runs before the state's store)."""

    def construct(self, g):
        v_old = self.v
        v_new = v_old * 0.9 + g
        w_new = self.w - 0.1 * v_new + 0.01 * v_old
        ops.assign(self.v, v_new)
        return ops.assign(self.w, w_new)


def reference(cls, v, w, g):
    if cls is ReadsOldStateInSecond:
        v_new = v * np.float32(0.9) + g
        return v_new, w - np.float32(0.1) * v_new + np.float32(0.01) * v
    v_new = v * np.float32(0.9) + g
    return v_new, w - np.float32(0.1) * v_new


# Sizes: one partial block, several blocks with a partial last one (split over the threads).
@pytest.mark.parametrize("shape", [(3, 7), (37, 301), (784, 512)])
@pytest.mark.parametrize("cls", [MomentumChains, ReturnsNewWeight, ReadsNewStateAgain,
                                 ReadsOldStateInSecond])
def test_updates_equal_numpy_and_the_unmerged_program(cls, shape):
    gs = [rand(shape, 10 + k) for k in range(3)]
    results = {}
    for fuse in ("1", "0"):
        os.environ["MYCEL_FUSE"] = fuse
        net = cls(shape)
        step = mycel.jit(net)
        v, w = net.v.asnumpy().copy(), net.w.asnumpy().copy()
        for g in gs:
            step(Tensor(g))
            v, w = reference(cls, v, w, g)
            np.testing.assert_allclose(net.v.asnumpy(), v, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(net.w.asnumpy(), w, rtol=1e-6, atol=1e-6)
        results[fuse] = (net.v.asnumpy(), net.w.asnumpy())
    # the same float operations in the same order: the merged pass equals the two passes bitwise
    for a, b in zip(results["1"], results["0"]):
        np.testing.assert_array_equal(a, b)


def compiled_text(net, *args):
    from mycel._mycel import graph as G
    return G.compile(net).program_text(*args)


def two_output_lines(text):
    return [line for line in text.splitlines() if "; out=t" in line]


def test_momentum_chains_are_one_instruction_writing_both_weights():
    shape = (37, 301)
    net = MomentumChains(shape)
    text = compiled_text(net, Tensor(rand(shape, 3)))
    merged = two_output_lines(text)
    assert len(merged) == 1, text
    line = merged[0]
    # "rA, rB = fused_elementwise{t0=mul(..); t1=add(..); t2=mul(..); t3=sub(..); out=t1,t3}(...)
    #  # into rV, rW": the state's and the weight's new values, written into both
    outs = [r.strip() for r in line.split("=")[0].split(",")]
    into = [r.strip() for r in line.rsplit("# into ", 1)[1].split(",")]
    assert len(outs) == 2 and len(into) == 2, text
    for out, weight in zip(outs, into):
        assert f"assign({weight}, {out})" in text, text
    assert "out=t1,t3" in line, text


def test_returned_weight_is_merged_but_not_written_in_place():
    shape = (5, 6)
    text = compiled_text(ReturnsNewWeight(shape), Tensor(rand(shape, 3)))
    merged = two_output_lines(text)
    assert len(merged) == 1 and merged[0].count("# into r") == 1 and ", r" not in \
        merged[0].rsplit("# into ", 1)[1], text


@pytest.mark.parametrize("cls", [ReadsNewStateAgain, ReadsOldStateInSecond])
def test_chains_that_must_stay_apart_do(cls):
    shape = (5, 6)
    text = compiled_text(cls(shape), Tensor(rand(shape, 3)))
    assert not two_output_lines(text), text


def test_mlp_momentum_step_merges_every_parameter():
    class MLP(nn.Cell):
        def __init__(self):
            super().__init__()
            self.body = nn.SequentialCell(nn.Dense(13, 7), nn.ReLU(), nn.Dense(7, 5))

        def construct(self, x):
            return self.body(x)

    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((9, 13)).astype(np.float32))
    y = Tensor(rng.integers(0, 5, 9).astype(np.int32))
    mycel.set_seed(3)
    net = MLP()
    loss = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    step = nn.TrainOneStepCell(loss, nn.Momentum(net.trainable_params(), 0.1, 0.9))
    mycel.set_context(mode=mycel.GRAPH_MODE)
    step(x, y)
    text = step.__dict__["_compiled"]._graph.program_text(x, y)
    # one two-output pass per parameter (2 weights, 2 biases), each writing its state and weight
    assert len(two_output_lines(text)) == 4, text
    assert all(line.count("# into r") == 1 and line.count(", r") >= 1
               for line in two_output_lines(text)), text
