"""MindSpore's RandomChoiceWithMask / ops.choice_with_mask and MultinomialWithReplacement /
ops.multinomial_with_replacement, eagerly and compiled: the sample's structure against numpy
(which positions, how many, the padding), reproducibility under fixed seeds, and the frequencies
against the law (chi-square bounds)."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops
from mycel.ops import operations as P

MODES = [ms.PYNATIVE_MODE, ms.GRAPH_MODE]


class _Net(nn.Cell):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, x):
        return self.op(x)


class _Net3(_Net):
    def construct(self, x, seed, offset):
        return self.op(x, seed, offset)


def in_mode(mode, net, *args):
    ms.set_context(mode=mode)
    try:
        out = net(*args)
        return tuple(o.asnumpy() for o in out) if isinstance(out, tuple) else out.asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,count", [((16,), 10), ((4, 4), 4), ((3, 4, 5), 10), ((2, 3), 9)])
def test_choice_with_mask_picks_distinct_true_positions(mode, shape, count):
    rng = np.random.default_rng(3)
    x = rng.random(shape) < 0.5
    idx, mask = in_mode(mode, _Net(P.RandomChoiceWithMask(count=count, seed=5)), Tensor(x))
    assert idx.shape == (count, len(shape)) and idx.dtype == np.int32
    assert mask.shape == (count,) and mask.dtype == np.bool_
    k = min(count, int(x.sum()))
    np.testing.assert_array_equal(mask, np.arange(count) < k)  # valid rows first
    chosen = idx[:k]
    assert x[tuple(chosen.T)].all()  # only true elements
    assert len({tuple(r) for r in chosen}) == k  # without repetition
    np.testing.assert_array_equal(idx[k:], 0)  # MindSpore's zero padding
    # a fixed seed gives the same sample again
    idx2, _ = in_mode(mode, _Net(P.RandomChoiceWithMask(count=count, seed=5)), Tensor(x))
    np.testing.assert_array_equal(idx, idx2)


def test_choice_with_mask_is_uniform_over_true_elements():
    x = np.zeros(12, bool)
    x[[1, 3, 4, 8, 9, 11]] = True
    hits = np.zeros(12)
    trials = 600
    for seed in range(1, trials + 1):
        idx, mask = ops.choice_with_mask(Tensor(x), count=2, seed=seed)
        np.add.at(hits, idx.asnumpy()[mask.asnumpy(), 0], 1)
    assert hits[~x].sum() == 0
    expected = trials * 2 / 6
    chi2 = ((hits[x] - expected) ** 2 / expected).sum()
    assert chi2 < 20.5, chi2  # chi-square, 5 degrees of freedom, p = 0.001


def test_choice_with_mask_errors():
    with pytest.raises(TypeError, match="bool tensor"):
        P.RandomChoiceWithMask(count=2)(Tensor(np.ones(3, np.float32)))
    with pytest.raises(TypeError, match="rank 1 to 5"):
        P.RandomChoiceWithMask(count=2)(Tensor(np.ones((1,) * 6, bool)))
    with pytest.raises(ValueError, match="'count' must be >= 1"):
        P.RandomChoiceWithMask(count=0)
    with pytest.raises(RuntimeError, match="INT_MAX"):
        P.RandomChoiceWithMask(count=2051328285)(Tensor(np.ones((4, 4), bool)))


@pytest.mark.parametrize("mode", MODES)
def test_multinomial_with_replacement_frequencies_and_seeds(mode):
    w = np.array([[0.0, 9.0, 4.0, 0.0, 7.0], [1.0, 1.0, 1.0, 1.0, 0.0]], np.float32)
    n = 6000
    net = _Net3(P.MultinomialWithReplacement(n, True))
    seed, offset = Tensor(np.array([50], np.int64)), Tensor(np.array([20], np.int64))
    out = in_mode(mode, net, Tensor(w), seed, offset)
    assert out.shape == (2, n) and out.dtype == np.int64
    for row, weights in zip(out, w):
        counts = np.bincount(row, minlength=5)
        p = weights / weights.sum()
        assert counts[p == 0].sum() == 0
        expected = n * p[p > 0]
        chi2 = ((counts[p > 0] - expected) ** 2 / expected).sum()
        assert chi2 < 16.3, chi2  # at most 3 degrees of freedom, p = 0.001
    # the same (seed, offset) gives the same draws, in either mode; another offset others
    np.testing.assert_array_equal(out, ops.multinomial_with_replacement(Tensor(w), 50, 20, n, True).asnumpy())
    other = ops.multinomial_with_replacement(Tensor(w), 50, 21, n, True).asnumpy()
    assert (other != out).any()


def test_multinomial_without_replacement_draws_distinct_classes():
    w = Tensor(np.array([[1.0, 5.0, 0.0, 2.0, 3.0]], np.float32))
    for offset in range(20):
        row = ops.multinomial_with_replacement(w, 7, offset, 4, False).asnumpy()[0]
        assert sorted(row) == [0, 1, 3, 4]  # every positive class once, never the zero one
    one_d = ops.multinomial_with_replacement(Tensor(np.array([0.0, 1.0], np.float32)), -1, 0, 3, True)
    np.testing.assert_array_equal(one_d.asnumpy(), [1, 1, 1])  # global generator, 1-d input


def test_multinomial_with_replacement_errors():
    w = Tensor(np.array([[1.0, 2.0]], np.float32))
    with pytest.raises(ValueError, match="exceeds the number of classes"):
        ops.multinomial_with_replacement(w, 1, 0, 3, False)
    with pytest.raises(ValueError, match="finite and >= 0"):
        ops.multinomial_with_replacement(Tensor(np.array([[1.0, -2.0]], np.float32)), 1, 0, 1, True)
    with pytest.raises(TypeError, match="seed must be an int or a Tensor"):
        ops.multinomial_with_replacement(w, 1.5, 0, 1, True)
    with pytest.raises(ValueError, match="'seed' must hold one value"):
        ops.multinomial_with_replacement(w, Tensor(np.array([1, 2], np.int64)), 0, 1, True)
