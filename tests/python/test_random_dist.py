"""The sampled distributions (random_gamma, gamma, random_poisson, poisson, standard_laplace,
random_categorical, multinomial) against their laws, with fixed seeds: moments within a few
standard errors, Kolmogorov-Smirnov tests for the continuous ones and chi-square tests for the
discrete ones (scipy.stats), seeds that repeat, and bad arguments."""
import numpy as np
import pytest
from scipy import stats

import mycel as ms
from mycel import Tensor, ops

N = 40_000
P_MIN = 1e-3  # a correct sampler fails a test at this level one time in a thousand (seeds fixed)


def _np(t):
    return t.asnumpy().astype(np.float64)


def _moments(x, mean, var, kurtosis):
    """Sample mean and variance within 5 standard errors (the variance's from the law's excess
    kurtosis: Var(s^2) ~ var^2 (kurtosis + 2) / n)."""
    n = x.size
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / n), (x.mean(), mean)
    assert abs(x.var() - var) < 5 * var * np.sqrt((kurtosis + 2) / n), (x.var(), var)


def test_standard_laplace():
    x = _np(ops.standard_laplace((N,), seed=3))
    _moments(x, 0.0, 2.0, 3.0)
    assert stats.kstest(x, stats.laplace.cdf).pvalue > P_MIN
    assert ops.standard_laplace((2, 3), seed=1, dtype=ms.float64).dtype == ms.float64


@pytest.mark.parametrize("alpha", [0.3, 1.0, 2.5, 40.0])
def test_random_gamma(alpha):
    x = ops.random_gamma((N,), Tensor(np.array([alpha], np.float64)), seed=5)
    assert x.shape == (N, 1) and x.dtype == ms.float64
    v = _np(x).ravel()
    _moments(v, alpha, alpha, 6 / alpha)
    assert stats.kstest(v, stats.gamma(alpha).cdf).pvalue > P_MIN


def test_gamma_scale_and_broadcast():
    alpha, beta = Tensor(np.array([[2.0], [5.0]], np.float32)), Tensor(np.array([0.5, 3.0, 1.0], np.float32))
    x = _np(ops.gamma((N // 8, 2, 3), alpha, beta, seed=2))
    assert x.shape == (N // 8, 2, 3)
    for i, a in enumerate((2.0, 5.0)):
        for j, b in enumerate((0.5, 3.0, 1.0)):
            assert stats.kstest(x[:, i, j], stats.gamma(a, scale=b).cdf).pvalue > P_MIN


def _chi2(counts, probs):
    expected = probs * counts.sum()
    keep = expected > 5  # pool the thin tail, as the test needs
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    obs, exp = (obs, exp) if exp[-1] > 0 else (obs[:-1], exp[:-1])
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


@pytest.mark.parametrize("rate", [0.7, 4.0, 12.0, 250.0])
def test_random_poisson(rate):
    """Knuth's method below rate 10, PTRS above: the exact pmf either way."""
    x = _np(ops.random_poisson((N,), Tensor(np.array(rate)), seed=9, dtype=ms.int64))
    _moments(x, rate, rate, 1 / rate)
    k = np.arange(int(rate + 12 * np.sqrt(rate) + 12))
    counts = np.bincount(x.astype(np.int64), minlength=k.size)[:k.size]
    assert _chi2(counts, stats.poisson(rate).pmf(k)) > P_MIN


def test_poisson_older_form():
    x = ops.poisson((1000, 2), Tensor(np.array([1.0, 30.0], np.float32)), seed=4)
    assert x.dtype == ms.int32 and x.shape == (1000, 2)
    m = x.asnumpy().mean(0)
    assert abs(m[0] - 1) < 0.2 and abs(m[1] - 30) < 1.2


def test_random_categorical():
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]))
    x = ops.random_categorical(Tensor(logits), N, seed=11).asnumpy()
    assert x.shape == (2, N) and x.dtype == np.int64
    for r in range(2):
        assert _chi2(np.bincount(x[r], minlength=3), np.exp(logits[r])) > P_MIN


def test_multinomial_with_replacement():
    w = np.array([[0.0, 9.0, 4.0, 1.0], [1.0, 1.0, 1.0, 1.0]], np.float32)
    x = ops.multinomial(Tensor(w), N, seed=6).asnumpy()
    assert x.shape == (2, N) and x.dtype == np.int32
    assert not (x[0] == 0).any()  # a zero weight is never drawn
    for r in range(2):
        assert _chi2(np.bincount(x[r], minlength=4), w[r] / w[r].sum()) > P_MIN


def test_multinomial_without_replacement():
    """Draws are distinct; the first draw follows the weights and the pair (first, second) the
    sequential law P(i) P(j | i) = w_i / W * w_j / (W - w_i)."""
    w = np.array([1.0, 2.0, 3.0, 4.0])
    rows = np.tile(w, (N // 4, 1))
    x = ops.multinomial(Tensor(rows), 2, replacement=False, seed=8).asnumpy()
    assert (x[:, 0] != x[:, 1]).all()
    pairs = x[:, 0] * 4 + x[:, 1]
    probs = np.array([w[i] / w.sum() * (w[j] / (w.sum() - w[i]) if i != j else 0) for i in range(4) for j in range(4)])
    counts = np.bincount(pairs, minlength=16)
    nz = probs > 0
    assert stats.chisquare(counts[nz], probs[nz] * counts.sum()).pvalue > P_MIN
    full = ops.multinomial(Tensor(w), 4, replacement=False, seed=1).asnumpy()
    assert sorted(full) == [0, 1, 2, 3]


def test_seeds_repeat_and_global_generator_advances():
    a = ops.random_gamma((5,), Tensor(np.array([2.0])), seed=3).asnumpy()
    np.testing.assert_array_equal(a, ops.random_gamma((5,), Tensor(np.array([2.0])), seed=3).asnumpy())
    ms.set_seed(1)
    b = ops.standard_laplace((5,)).asnumpy()
    c = ops.standard_laplace((5,)).asnumpy()
    assert not np.array_equal(b, c)
    ms.set_seed(1)
    np.testing.assert_array_equal(ops.standard_laplace((5,)).asnumpy(), b)


def test_thread_count_does_not_change_samples():
    threads = ms.get_context("num_threads")
    try:
        ms.set_context(num_threads=1)
        one = ops.random_poisson((3000,), Tensor(np.array([3.0, 40.0])), seed=2).asnumpy()
        ms.set_context(num_threads=max(threads, 2))
        np.testing.assert_array_equal(ops.random_poisson((3000,), Tensor(np.array([3.0, 40.0])), seed=2).asnumpy(),
                                      one)
    finally:
        ms.set_context(num_threads=threads)


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"\[multinomial\] weights must be finite and >= 0"):
        ops.multinomial(Tensor(np.array([1.0, -1.0])), 1)
    with pytest.raises(ValueError, match=r"\[multinomial\] row 0 has no positive weight"):
        ops.multinomial(Tensor(np.zeros(3)), 1)
    with pytest.raises(ValueError, match=r"without replacement exceeds the number of classes 3"):
        ops.multinomial(Tensor(np.ones(3)), 4, replacement=False)
    with pytest.raises(ValueError, match=r"without replacement exceeds the 1 classes of positive weight"):
        ops.multinomial(Tensor(np.array([0.0, 1.0, 0.0])), 2, replacement=False)
    with pytest.raises(TypeError, match=r"\[random_poisson\] attribute 'dtype' must be one of"):
        ops.random_poisson((2,), Tensor(np.array([1.0])), dtype=ms.bool_)
    with pytest.raises(ValueError, match=r"\[random_gamma\] attribute 'seed' must be >= 0"):
        ops.random_gamma((2,), Tensor(np.array([1.0])), seed=-1)
    with pytest.raises(ValueError, match=r"\[random_categorical\] input 'logits' must have rank 2"):
        ops.random_categorical(Tensor(np.ones(3)), 2)
    with pytest.raises(ValueError, match=r"\[random_poisson\] rates must be in \[0, 2\^50\], got -1"):
        ops.random_poisson((2,), Tensor(np.array([-1.0])), dtype=ms.int32)
    with pytest.raises(ValueError, match=r"\[multinomial\] input 'x' needs at least one class"):
        ops.multinomial(Tensor(np.ones((2, 0))), 1)
    assert np.isnan(ops.random_gamma((2,), Tensor(np.array([-1.0]))).asnumpy()).all()  # alpha <= 0: NaN
    with pytest.raises(ValueError, match=r"\[random_categorical\] 40000 classes do not fit dtype int16"):
        ops.random_categorical(Tensor(np.zeros((1, 40000))), 1, dtype=ms.int16)
    # counts past the integer dtype's range saturate (2^40 has no int32 value)
    big = ops.random_poisson((3,), Tensor(np.array([2.0 ** 40])), seed=1, dtype=ms.int32).asnumpy()
    assert (big == np.iinfo(np.int32).max).all()
