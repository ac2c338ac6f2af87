"""The samplers added for MindSpore compatibility (TruncatedNormal, LogNormalReverse /
Tensor.log_normal, exponential / Tensor.exponential_, binomial, beta / random_beta) against their
laws, in both modes, with fixed seeds: moments within a few standard errors, Kolmogorov-Smirnov
tests against the closed-form CDFs written here in numpy, chi-square tests for the binomial pmf,
support checks, seeds that repeat, and bad arguments."""
import math

import numpy as np
import pytest
from scipy import special, stats

import mycel as ms
from mycel import Tensor, nn, ops

N = 40_000
P_MIN = 1e-3  # a correct sampler fails a test at this level one time in a thousand (seeds fixed)
MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
_erf = np.vectorize(math.erf)


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _np(t):
    return t.asnumpy().astype(np.float64)


def _phi(x):
    return 0.5 * (1 + _erf(np.asarray(x, np.float64) / math.sqrt(2)))


def _moments(x, mean, var, kurtosis):
    """Sample mean and variance within 5 standard errors (Var(s^2) ~ var^2 (kurtosis + 2) / n)."""
    n = x.size
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / n), (x.mean(), mean)
    assert abs(x.var() - var) < 5 * var * np.sqrt((kurtosis + 2) / n), (x.var(), var)


def _ks(x, cdf):
    assert stats.kstest(x, cdf).pvalue > P_MIN


def _run(mode, fn, *args):
    """fn(*args) inside a Cell's construct, run in `mode`."""
    ms.set_context(mode=mode)

    class Net(nn.Cell):
        def construct(self, *xs):
            return fn(*xs)
    return Net()(*args)


# ---- truncated normal: N(0, 1) within [-2, 2] --------------------------------------------------

def _trunc_cdf(x):
    z = _phi(2.0) - _phi(-2.0)
    return np.clip((_phi(x) - _phi(-2.0)) / z, 0, 1)


@MODES
def test_truncated_normal_law_and_support(mode):
    prim = ops.TruncatedNormal(seed=3, seed2=1)
    x = _np(_run(mode, lambda: prim((N,))))
    assert x.shape == (N,)
    assert x.min() >= -2 and x.max() <= 2
    z = _phi(2.0) - _phi(-2.0)
    pdf2 = math.exp(-2) / math.sqrt(2 * math.pi)
    var = 1 - 2 * 2 * pdf2 / z  # variance of N(0,1) on [-a, a]: 1 - 2 a phi(a) / Z
    _moments(x, 0.0, var, -1.0)
    _ks(x, _trunc_cdf)


def test_truncated_normal_primitive_forms():
    a = ops.TruncatedNormal(seed=5, seed2=2, dtype=ms.float64)(Tensor(np.array([3, 4], np.int32)))
    b = ops.TruncatedNormal(5, 2, ms.float64)((3, 4))
    assert a.shape == (3, 4) and a.dtype == ms.float64
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())  # the same seeds repeat
    c = ops.TruncatedNormal(seed=6, seed2=2, dtype=ms.float64)((3, 4))
    assert not np.array_equal(a.asnumpy(), c.asnumpy())
    assert ops.operations.TruncatedNormal is ops.TruncatedNormal
    with pytest.raises(TypeError, match="dtype"):
        ops.TruncatedNormal(dtype=ms.int32)((2,))
    with pytest.raises(TypeError, match="shape"):
        ops.TruncatedNormal()(Tensor(np.ones((2, 2), np.int32)))


# ---- log-normal -----------------------------------------------------------------------------

@MODES
def test_log_normal_law(mode):
    x = Tensor(np.zeros(N, np.float64))
    y = _np(_run(mode, lambda t: ops.log_normal(t, 0.5, 0.4, seed=7), x))
    assert y.shape == (N,) and y.min() > 0
    mu, s = 0.5, 0.4
    _moments(np.log(y), mu, s * s, 0.0)
    _ks(y, lambda v: _phi((np.log(np.maximum(v, 1e-300)) - mu) / s))


def test_log_normal_primitive_and_method():
    x = Tensor(np.ones((2, 3), np.float32))
    a = ops.LogNormalReverse(1.0, 0.5)(x)
    assert a.shape == (2, 3) and a.dtype == ms.float32 and (a.asnumpy() > 0).all()
    ms.set_seed(11)
    b = x.log_normal(1.0, 0.5)
    ms.set_seed(11)
    c = x.log_normal(1.0, 0.5)
    np.testing.assert_array_equal(b.asnumpy(), c.asnumpy())  # the global seed repeats
    with pytest.raises(ValueError, match="std"):
        ops.log_normal(x, 0.0, -1.0)
    with pytest.raises(TypeError):
        ops.log_normal(Tensor(np.ones(3, np.int32)))


# ---- exponential -----------------------------------------------------------------------------

@MODES
def test_exponential_law(mode):
    x = Tensor(np.zeros(N, np.float32))
    y = _np(_run(mode, lambda t: ops.exponential(t, 2.5, seed=4), x))
    assert y.min() > 0 and y.dtype == np.float64
    _moments(y, 1 / 2.5, 1 / 2.5 ** 2, 6.0)
    _ks(y, lambda v: 1 - np.exp(-2.5 * np.maximum(v, 0)))


def test_exponential_in_place():
    t = Tensor(np.zeros((200, 50), np.float32))
    out = t.exponential_(4.0)
    assert out is t and t.dtype == ms.float32
    v = t.asnumpy()
    assert v.min() > 0 and abs(v.mean() - 0.25) < 5 * 0.25 / math.sqrt(v.size)
    with pytest.raises(ValueError, match="lambd"):
        ops.exponential(t, 0.0)


# ---- binomial ----------------------------------------------------------------------------------

def _chi2(counts, probs):
    expected = probs * counts.sum()
    keep = expected > 5  # pool the thin tail, as the test needs
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    obs, exp = (obs, exp) if exp[-1] > 0 else (obs[:-1], exp[:-1])
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


def _binom_pmf(n, p, k):
    """The binomial pmf from log-gamma (numpy + math only)."""
    lg = np.vectorize(math.lgamma)
    return np.exp(lg(n + 1) - lg(k + 1) - lg(n - k + 1) + k * np.log(p) + (n - k) * np.log1p(-p))


@MODES
@pytest.mark.parametrize("n,p", [(5, 0.3), (40, 0.1), (100, 0.45), (1000, 0.8), (10 ** 6, 0.02)],
                         ids=["inversion", "inversion-n40", "btrs", "btrs-flipped", "btrs-large"])
def test_binomial_law(mode, n, p):
    count = Tensor(np.full(N, n, np.float64))
    probs = Tensor(np.full(N, p, np.float64))
    x = _np(_run(mode, lambda c, q: ops.binomial(c, q, seed=9), count, probs))
    assert (x >= 0).all() and (x <= n).all() and (x == np.floor(x)).all()
    _moments(x, n * p, n * p * (1 - p), (1 - 6 * p * (1 - p)) / (n * p * (1 - p)))
    lo, hi = int(max(0, n * p - 12 * math.sqrt(n * p * (1 - p)) - 12)), \
        int(min(n, n * p + 12 * math.sqrt(n * p * (1 - p)) + 12))
    k = np.arange(lo, hi + 1)
    counts = np.array([(x == v).sum() for v in k])
    assert counts.sum() == N
    assert _chi2(counts, _binom_pmf(n, p, k)) > P_MIN


def test_binomial_broadcast_edges_and_errors():
    count = Tensor(np.array([[0.0], [7.0], [20.0]], np.float32))
    probs = Tensor(np.array([0.0, 1.0, 0.5], np.float32))
    x = ops.binomial(count, probs, seed=2).asnumpy()
    assert x.shape == (3, 3) and x.dtype == np.float32
    np.testing.assert_array_equal(x[:, 0], [0, 0, 0])   # p = 0
    np.testing.assert_array_equal(x[:, 1], [0, 7, 20])  # p = 1
    np.testing.assert_array_equal(x, ops.binomial(count, probs, seed=2).asnumpy())
    with pytest.raises(ValueError, match="probs"):
        ops.binomial(count, Tensor(np.array([1.5], np.float32)))
    with pytest.raises(ValueError, match="count"):
        ops.binomial(Tensor(np.array([2.5], np.float32)), Tensor(np.array([0.5], np.float32)))
    with pytest.raises(ValueError, match="broadcast|shape"):
        ops.binomial(Tensor(np.ones(3, np.float32)), Tensor(np.ones(4, np.float32)) * 0.5)
    with pytest.raises(ValueError, match="shape"):
        ops.Binomial()(Tensor(np.ones(3, np.float32)), Tensor(np.ones(1, np.float32)) * 0.5)


# ---- beta ------------------------------------------------------------------------------------

@MODES
@pytest.mark.parametrize("a,b", [(0.5, 0.5), (2.0, 5.0), (30.0, 3.0)])
def test_random_beta_law(mode, a, b):
    alpha = Tensor(np.array([a], np.float64))
    beta = Tensor(np.array([b], np.float64))
    x = _run(mode, lambda s, t: ops.random_beta((N,), s, t, seed=6), alpha, beta)
    assert x.shape == (N, 1) and x.dtype == ms.float64
    v = _np(x).ravel()
    assert v.min() >= 0 and v.max() <= 1
    var = a * b / ((a + b) ** 2 * (a + b + 1))
    kurt = 6 * ((a - b) ** 2 * (a + b + 1) - a * b * (a + b + 2)) / (a * b * (a + b + 2) * (a + b + 3))
    _moments(v, a / (a + b), var, kurt)
    _ks(v, lambda t: special.betainc(a, b, np.clip(t, 0, 1)))


def test_beta_broadcast_tiny_parameters_and_seeds():
    alpha = Tensor(np.array([[1.0], [3.0]], np.float32))
    beta = Tensor(np.array([1.0, 2.0, 0.5], np.float32))
    x = ops.beta((N // 8, 2, 3), alpha, beta, seed=2).asnumpy().astype(np.float64)
    assert x.shape == (N // 8, 2, 3)
    for i, a in enumerate((1.0, 3.0)):
        for j, b in enumerate((1.0, 2.0, 0.5)):
            _ks(x[:, i, j], lambda t, a=a, b=b: special.betainc(a, b, np.clip(t, 0, 1)))
    # Tiny parameters put the mass at 0 and 1 (log-space draws, never 0/0): P(X > 1/2) = 1/2.
    tiny = ops.random_beta((N,), Tensor(np.array([0.01])), Tensor(np.array([0.01])), seed=3).asnumpy()
    assert np.isfinite(tiny).all() and abs((tiny > 0.5).mean() - 0.5) < 5 * 0.5 / math.sqrt(N)
    again = ops.random_beta((N,), Tensor(np.array([0.01])), Tensor(np.array([0.01])), seed=3).asnumpy()
    np.testing.assert_array_equal(tiny, again)
    assert np.isnan(ops.random_beta((2,), Tensor(np.array([-1.0])), Tensor(np.array([1.0]))).asnumpy()).all()
    with pytest.raises(TypeError):
        ops.random_beta((2,), np.array([1.0]), Tensor(np.array([1.0])))
