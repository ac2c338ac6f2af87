"""MindSpore's random primitives that take the shape as a call input (RandomGamma, RandomPoisson,
StandardLaplace, ParameterizedTruncatedNormal, NonDeterministicInts) and the candidate samplers
(UniformCandidateSampler, LogUniformCandidateSampler, ops.uniform_candidate_sampler,
ops.log_uniform_candidate_sampler), in both modes, with fixed seeds: shapes and dtypes exactly,
distributions by KS / chi-square statistics against closed-form CDFs, expected counts against
their closed forms, bad arguments by their errors."""
import math

import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, ops
from mycel.ops import operations as P

MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _call(prim, mode, *args):
    """prim(*args) eagerly, or inside a jit function (graph mode) with the shape a constant."""
    ms.set_context(mode=mode)
    if mode == ms.PYNATIVE_MODE:
        return prim(*args)
    shape, tensors = args[0], args[1:]

    @ms.jit
    def f(*ts):
        return prim(shape, *ts)
    return f(*tensors)


def _ks(samples, cdf):
    """Kolmogorov-Smirnov distance of the samples from a CDF."""
    x = np.sort(np.asarray(samples, np.float64).reshape(-1))
    n = len(x)
    f = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def _ks_bound(n):
    return 1.95 / math.sqrt(n)  # the 0.1% critical value


_erf = np.vectorize(math.erf)


def _phi(z):
    return 0.5 * (1 + _erf(z / math.sqrt(2)))


@MODES
def test_standard_laplace_shape_input(mode):
    out = _call(P.StandardLaplace(seed=5, seed2=1), mode, (40, 50))
    assert out.shape == (40, 50) and out.dtype == ms.float32
    cdf = lambda x: np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0)), 1 - 0.5 * np.exp(-np.maximum(x, 0)))
    assert _ks(out.asnumpy(), cdf) < _ks_bound(2000)
    again = _call(P.StandardLaplace(seed=5, seed2=1), mode, (40, 50))
    np.testing.assert_array_equal(out.asnumpy(), again.asnumpy())  # an op seed repeats


@MODES
def test_random_gamma_shape_input(mode):
    alpha = Tensor(np.array([1.0, 3.0], np.float32))
    out = _call(P.RandomGamma(seed=3, seed2=2), mode, (3000,), alpha).asnumpy()
    assert out.shape == (3000, 2) and out.dtype == np.float32
    # Gamma(1) is Exp(1); Gamma(3) has mean 3 and variance 3.
    assert _ks(out[:, 0], lambda x: 1 - np.exp(-x)) < _ks_bound(3000)
    assert abs(out[:, 1].mean() - 3) < 0.15 and abs(out[:, 1].var() - 3) < 0.5


def test_random_gamma_shape_as_tensor():
    out = P.RandomGamma(seed=1)(Tensor(np.array([4, 2], np.int32)), Tensor(np.array(2.0, np.float32)))
    assert out.shape == (4, 2)


@MODES
def test_random_poisson_shape_input(mode):
    rate = Tensor(np.array([2.5], np.float32))
    out = _call(P.RandomPoisson(seed=4, seed2=1, dtype=ms.int32), mode, (4000,), rate).asnumpy()
    assert out.shape == (4000, 1) and out.dtype == np.int32
    counts = np.bincount(out.reshape(-1), minlength=12)[:12].astype(np.float64)
    k = np.arange(12)
    pmf = np.exp(-2.5) * 2.5 ** k / np.array([math.factorial(int(i)) for i in k])
    expected = pmf * 4000
    keep = expected > 5
    chi2 = np.sum((counts[keep] - expected[keep]) ** 2 / expected[keep])
    assert chi2 < 32.9  # chi-square, 10 degrees of freedom at most, 0.1% level: 29.6


def test_random_poisson_default_dtype_is_int64():
    assert P.RandomPoisson(seed=1)((5,), Tensor(np.array(1.0, np.float32))).dtype == ms.int64


def _trunc_cdf(mean, sd, lo, hi):
    a, b = _phi((lo - mean) / sd), _phi((hi - mean) / sd)
    return lambda x: np.clip((_phi((x - mean) / sd) - a) / (b - a), 0, 1)


@MODES
def test_parameterized_truncated_normal(mode):
    mean = Tensor(np.array([0.0, 5.0], np.float64))
    sd = Tensor(np.array([1.0, 2.0], np.float64))
    lo = Tensor(np.array([-0.5, 6.0], np.float64))  # row 1: only the right tail
    hi = Tensor(np.array([2.0, 20.0], np.float64))
    out = _call(P.ParameterizedTruncatedNormal(seed=7, seed2=3), mode, (2, 3000), mean, sd, lo, hi)
    assert out.shape == (2, 3000) and out.dtype == ms.float64
    v = out.asnumpy()
    assert v[0].min() >= -0.5 and v[0].max() <= 2.0 and v[1].min() >= 6.0
    assert _ks(v[0], _trunc_cdf(0.0, 1.0, -0.5, 2.0)) < _ks_bound(3000)
    assert _ks(v[1], _trunc_cdf(5.0, 2.0, 6.0, 20.0)) < _ks_bound(3000)


def test_parameterized_truncated_normal_scalar_params_and_errors():
    one = lambda v: Tensor(np.array([v], np.float32))
    out = P.ParameterizedTruncatedNormal(seed=1)((4, 5), one(0.0), one(1.0), one(-1.0), one(1.0))
    assert out.shape == (4, 5) and out.dtype == ms.float32 and np.abs(out.asnumpy()).max() <= 1.0
    with pytest.raises(ValueError, match="stdevs > 0"):
        P.ParameterizedTruncatedNormal(seed=1)((2, 5), one(0.0), one(-1.0), one(-1.0), one(1.0)).asnumpy()
    with pytest.raises(ValueError, match="min < max"):
        P.ParameterizedTruncatedNormal(seed=1)((2, 5), one(0.0), one(1.0), one(1.0), one(1.0)).asnumpy()
    with pytest.raises((ValueError, RuntimeError), match="one value or one per batch row"):
        P.ParameterizedTruncatedNormal(seed=1)((2, 5), Tensor(np.zeros(3, np.float32)), one(1.0),
                                               one(-1.0), one(1.0))


@MODES
@pytest.mark.parametrize("dt", ["int32", "int64", "uint32", "uint64"])
def test_non_deterministic_ints(mode, dt):
    prim = P.NonDeterministicInts(dtype=getattr(ms, dt))
    a = _call(prim, mode, (2000,)).asnumpy()
    b = _call(prim, mode, (2000,)).asnumpy()
    assert a.dtype == np.dtype(dt) and a.shape == (2000,)
    assert not np.array_equal(a, b)  # no seed: each call differs
    # The whole range: the top bit is set about half the time, the values nearly all distinct.
    bits = np.dtype(dt).itemsize * 8
    top = (a.view(np.dtype(f"uint{bits}")) >> np.uint64(bits - 1)).astype(np.float64)
    assert abs(top.mean() - 0.5) < 0.06
    assert len(np.unique(a)) > 1990


def test_non_deterministic_ints_refuses_float():
    with pytest.raises(TypeError, match="non_deterministic_ints.*dtype"):
        P.NonDeterministicInts(dtype=ms.float32)((3,))


TRUE = np.array([[1], [3], [4], [6], [3]], np.int64)


@MODES
def test_uniform_candidate_sampler_mindspore_example(mode):
    ms.set_context(mode=mode)
    sampler = P.UniformCandidateSampler(1, 3, False, 7, 1)
    run = sampler if mode == ms.PYNATIVE_MODE else ms.jit(lambda t: sampler(t))
    s, te, se = run(Tensor(TRUE))
    assert s.shape == (3,) and te.shape == (5, 1) and se.shape == (3,)
    assert s.dtype == ms.int64 and te.dtype == ms.float32
    assert s.asnumpy().min() >= 0 and s.asnumpy().max() < 7
    np.testing.assert_allclose(te.asnumpy(), np.full((5, 1), 3 / 7), rtol=1e-6)  # p * num_sampled
    np.testing.assert_allclose(se.asnumpy(), np.full(3, 3 / 7), rtol=1e-6)


def test_uniform_candidate_sampler_frequencies():
    s, _, _ = ops.uniform_candidate_sampler(Tensor(TRUE[:3]), 1, 6000, False, 6, seed=9)
    counts = np.bincount(s.asnumpy(), minlength=6)
    chi2 = np.sum((counts - 1000) ** 2 / 1000)
    assert chi2 < 20.5  # 5 degrees of freedom, 0.1% level


def test_unique_sampler_counts_follow_the_tries():
    # Without repeats every candidate is distinct and expected counts are 1 - (1 - p)^tries for
    # the same number of tries: p = 1/10 for all classes, so all counts agree and lie between
    # the values for the fewest (num_sampled) and a generous bound of tries.
    s, te, se = ops.uniform_candidate_sampler(Tensor(TRUE), 1, 8, True, 10, seed=2)
    v = s.asnumpy()
    assert len(set(v.tolist())) == 8
    tries = np.log1p(-se.asnumpy()) / np.log1p(-0.1)
    np.testing.assert_allclose(tries, np.round(tries), atol=1e-3)  # an integer number of tries
    assert 8 <= round(float(tries[0])) < 200
    np.testing.assert_allclose(te.asnumpy(), np.full((5, 1), se.asnumpy()[0]), rtol=1e-6)


def test_remove_accidental_hits():
    s, _, _ = ops.uniform_candidate_sampler(Tensor(TRUE), 1, 200, False, 10, seed=4,
                                            remove_accidental_hits=True)
    assert not set(s.asnumpy().tolist()) & {1, 3, 4, 6}
    with pytest.raises(ValueError, match="distinct"):
        ops.uniform_candidate_sampler(Tensor(TRUE), 1, 7, True, 10, seed=4,
                                      remove_accidental_hits=True)[0].asnumpy()


@MODES
def test_log_uniform_candidate_sampler(mode):
    ms.set_context(mode=mode)
    sampler = P.LogUniformCandidateSampler(1, 5000, False, 20, seed=3)
    run = sampler if mode == ms.PYNATIVE_MODE else ms.jit(lambda t: sampler(t))
    s, te, se = run(Tensor(TRUE))
    p = lambda k: np.log((k + 2.0) / (k + 1.0)) / np.log(21.0)
    counts = np.bincount(s.asnumpy(), minlength=20)
    expected = p(np.arange(20)) * 5000
    chi2 = np.sum((counts - expected) ** 2 / expected)
    assert chi2 < 43.8  # 19 degrees of freedom, 0.1% level
    np.testing.assert_allclose(te.asnumpy(), p(TRUE) * 5000, rtol=1e-5)
    np.testing.assert_allclose(se.asnumpy(), p(s.asnumpy()) * 5000, rtol=1e-5)


def test_log_uniform_functional_defaults_and_errors():
    s, te, se = ops.log_uniform_candidate_sampler(Tensor(np.array([[1], [2]], np.int64)), seed=1)
    assert s.shape == (5,) and sorted(s.asnumpy().tolist()) == [0, 1, 2, 3, 4]  # unique, range 5
    with pytest.raises(ValueError, match="num_sampled"):
        P.UniformCandidateSampler(1, 11, True, 10)
    with pytest.raises(TypeError, match="unique"):
        P.UniformCandidateSampler(1, 3, 1, 10)
    with pytest.raises((ValueError, RuntimeError), match="true_classes.*shape"):
        P.UniformCandidateSampler(2, 3, False, 10)(Tensor(TRUE))
    with pytest.raises(ValueError, match=r"true_classes.*non-negative"):
        P.UniformCandidateSampler(1, 3, False, 5)(Tensor(-TRUE))[0].asnumpy()


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE])
def test_candidate_samplers_take_true_classes_beyond_range(mode):
    # MindSpore (and TensorFlow) accept true classes >= range_max: they are never drawn, and their
    # expected count is the distribution's formula at that class (uniform: num_sampled / range).
    ms.set_context(mode=mode)
    try:
        s, te, se = P.UniformCandidateSampler(1, 3, False, 4, seed=3,
                                              remove_accidental_hits=True)(Tensor(TRUE))
        assert s.shape == (3,) and set(s.asnumpy().tolist()) <= {0, 2}  # 1 and 3 are true
        np.testing.assert_allclose(te.asnumpy(), np.full((5, 1), 3 / 4), rtol=1e-6)
        np.testing.assert_allclose(se.asnumpy(), np.full(3, 3 / 4), rtol=1e-6)
        s, te, _ = P.LogUniformCandidateSampler(1, 2, False, 3, seed=2)(Tensor(TRUE))
        p = np.log((TRUE + 2.0) / (TRUE + 1.0)) / np.log(4.0)
        np.testing.assert_allclose(te.asnumpy(), p * 2, rtol=1e-6)
        assert s.asnumpy().max() < 3
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
