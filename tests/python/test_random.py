"""Random ops and the global generator: reproducibility, statistics, thread independence, errors."""
import math

import numpy as np
import pytest

import mycel
from mycel import ops
from mycel.common import seed as seed_mod
from op_cases import all_cases, make_input

N = 100_000
# The seeded ops (non_deterministic_ints has no seed: compat/test_compat_random_prims.py).
ROWS = [c for c in all_cases()
        if c.nondeterministic and any(a[0] == "seed" for a in mycel._mycel.op_handles[c.op].attrs)]


def _np(t):
    return t.asnumpy()


@pytest.fixture(autouse=True)
def _restore_generator():
    state = seed_mod.get_rng_state()
    threads = mycel.get_context("num_threads")
    yield
    seed_mod.set_rng_state(state)
    mycel.set_context(num_threads=threads)


def _call(case, dtype, **extra):
    attrs = dict(case.attrs, **extra)
    handle = mycel._mycel.op_handles[case.op]
    # A row's dtypes are the `dtype` attribute's values for ops drawn from attributes alone, and
    # the input's for ops with inputs (random_gamma, multinomial, ...: their dtype attribute keeps
    # its default here).
    has_dtype_attr = any(a[0] == "dtype" for a in handle.attrs) and not handle.inputs
    rng = np.random.default_rng(0)
    arrays = (case.shapes(rng, dtype) if callable(case.shapes)  # a row that generates its inputs
              else [make_input(rng, s, dtype, case.domain) for s in case.shapes])
    if has_dtype_attr:
        attrs["dtype"] = getattr(mycel, dtype)
    # The registry's own signature (mycel.ops may hold MindSpore-order wrappers, as random_gamma).
    out = getattr(mycel._mycel.ops, case.op)(*[mycel.Tensor(a) for a in arrays], **attrs)
    ref_attrs = dict(attrs, dtype=dtype) if has_dtype_attr else attrs
    return out, case.ref(*arrays, **ref_attrs)


def _params():
    for case in ROWS:
        for dt in case.dtypes:
            yield pytest.param(case, dt, id=f"{case.name()}-{dt}")


@pytest.mark.parametrize("case,dtype", list(_params()))
def test_table_row_shape_dtype_and_op_seed(case, dtype):
    out, ref = _call(case, dtype, seed=7, seed2=3)
    outs, refs = (out, ref) if isinstance(ref, tuple) else ((out,), (ref,))
    for o, r in zip(outs, refs):
        assert _np(o).shape == r.shape and _np(o).dtype == r.dtype
    again, _ = _call(case, dtype, seed=7, seed2=3)  # op-level seeds repeat on every call
    again = again if isinstance(again, tuple) else (again,)
    for o, a in zip(outs, again):
        np.testing.assert_array_equal(_np(o), _np(a))


def test_philox_known_answer_from_python():
    # Random123 tests/kat_vectors, "philox4x32 10" with the pi-digits counter and key.
    got = mycel._mycel.philox4x32_10([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
                                     [0xA4093822, 0x299F31D0])
    assert list(got) == [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def test_every_random_op_is_marked_random():
    for name in ("uniform", "normal", "randint", "bernoulli", "dropout"):
        assert mycel._mycel.op_handles[name].random


# ---- the global generator ----

def test_set_seed_reproduces_sequence():
    mycel.set_seed(5)
    a, b = _np(ops.uniform((100,))), _np(ops.normal((100,)))
    mycel.set_seed(5)
    np.testing.assert_array_equal(_np(ops.uniform((100,))), a)
    np.testing.assert_array_equal(_np(ops.normal((100,))), b)


def test_successive_calls_differ_and_seeds_differ():
    mycel.set_seed(5)
    a, b = _np(ops.uniform((100,))), _np(ops.uniform((100,)))
    assert not np.array_equal(a, b)
    mycel.set_seed(6)
    assert not np.array_equal(_np(ops.uniform((100,))), a)


def test_op_seeds_differ_from_each_other():
    a = _np(ops.uniform((100,), seed=1))
    assert not np.array_equal(a, _np(ops.uniform((100,), seed=2)))
    assert not np.array_equal(a, _np(ops.uniform((100,), seed=1, seed2=1)))
    # Op-level seeds neither read nor advance the global generator.
    state = seed_mod.get_rng_state()
    ops.uniform((100,), seed=1)
    assert seed_mod.get_rng_state() == state


def test_rng_state_round_trip():
    mycel.set_seed(11)
    ops.normal((10,))
    state = seed_mod.get_rng_state()
    a = _np(ops.randint(0, 100, (50,)))
    seed_mod.set_rng_state(state)
    np.testing.assert_array_equal(_np(ops.randint(0, 100, (50,))), a)


def test_primitive_classes_and_aliases():
    a = _np(ops.UniformReal(seed=2)((3, 4)))
    np.testing.assert_array_equal(a, _np(ops.UniformReal(seed=2)((3, 4))))
    x = mycel.Tensor(np.ones((50,), np.float32))
    y1, m1 = ops.Dropout(keep_prob=0.5, Seed0=1, Seed1=2)(x)
    y2, m2 = ops.dropout(x, keep_prob=0.5, seed=1, seed2=2)
    np.testing.assert_array_equal(_np(m1), _np(m2))
    np.testing.assert_array_equal(_np(ops.randint(0, 9, size=(4,), seed=3)),
                                  _np(ops.randint(0, 9, (4,), 3)))


@pytest.mark.parametrize("op,args", [
    ("uniform", dict(shape=(70001,))), ("normal", dict(shape=(70001,), dtype=mycel.float64)),
    ("randint", dict(low=-5, high=1000, shape=(70001,))),
    ("bernoulli", dict(x=np.zeros(70001, np.float32), p=0.4)),
    ("dropout", dict(x=np.ones(70001, np.float16), keep_prob=0.6)),
])
def test_same_result_for_any_thread_count(op, args):
    args = {k: mycel.Tensor(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}
    results = []
    for nt in (1, 2):
        mycel.set_context(num_threads=nt)
        mycel.set_seed(123)
        out = getattr(ops, op)(**args)
        results.append(_np(out[0] if isinstance(out, tuple) else out))
    np.testing.assert_array_equal(results[0], results[1])


# ---- statistics (fixed seeds, so these are deterministic) ----

def _ks(samples, cdf):
    """Kolmogorov-Smirnov distance between the samples and a CDF."""
    x = np.sort(samples.astype(np.float64))
    f = cdf(x)
    n = len(x)
    return max((np.arange(1, n + 1) / n - f).max(), (f - np.arange(n) / n).max())


def _check_moments(x, mean, var, fourth_central):
    n = len(x)
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / n), (x.mean(), mean)
    assert abs(x.var() - var) < 5 * math.sqrt((fourth_central - var * var) / n), (x.var(), var)


_erf = np.frompyfunc(math.erf, 1, 1)


def _normal_cdf(v):
    return 0.5 * (1 + _erf(v / math.sqrt(2)).astype(np.float64))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform_statistics(dtype):
    mycel.set_seed(2024)
    x = _np(ops.uniform((N,), dtype=getattr(mycel, dtype)))
    assert x.dtype == dtype and x.min() >= 0 and x.max() < 1
    _check_moments(x.astype(np.float64), 0.5, 1 / 12, 1 / 80)
    assert _ks(x, lambda v: v) < 0.01


def test_uniform_range():
    x = _np(ops.uniform((N,), -3.0, 2.0, seed=4))
    assert x.min() >= -3 and x.max() < 2
    assert _ks(x, lambda v: (v + 3) / 5) < 0.01


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_uniform_low_precision_stays_below_one(dtype):
    x = _np(ops.uniform((N,), seed=9, dtype=getattr(mycel, dtype)))
    assert x.min() >= 0 and x.max() < 1 and abs(x.mean() - 0.5) < 0.01


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_statistics(dtype):
    mycel.set_seed(77)
    x = _np(ops.normal((N,), dtype=getattr(mycel, dtype))).astype(np.float64)
    assert np.isfinite(x).all()
    _check_moments(x, 0.0, 1.0, 3.0)
    assert _ks(x, _normal_cdf) < 0.01


def test_normal_mean_stddev():
    x = _np(ops.normal((N,), mean=3.0, stddev=0.5, seed=5)).astype(np.float64)
    _check_moments(x, 3.0, 0.25, 3 * 0.25 ** 2)
    assert _ks((x - 3.0) / 0.5, _normal_cdf) < 0.01


def test_normal_odd_length_and_float16():
    x = _np(ops.normal((7,), seed=1, dtype=mycel.float64))
    np.testing.assert_array_equal(x, _np(ops.normal((8,), seed=1, dtype=mycel.float64))[:7])
    h = _np(ops.normal((N,), seed=3, dtype=mycel.float16)).astype(np.float64)
    assert np.isfinite(h).all() and abs(h.mean()) < 0.02 and abs(h.std() - 1) < 0.02


def test_randint_chi_square():
    mycel.set_seed(8)
    x = _np(ops.randint(-3, 7, (N,)))
    assert x.dtype == np.int64 and x.min() == -3 and x.max() == 6
    counts = np.bincount(x + 3, minlength=10)
    expected = N / 10
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 40  # 9 degrees of freedom: P(chi2 > 40) < 1e-5


def test_randint_full_dtype_ranges():
    x = _np(ops.randint(-128, 128, (N,), seed=2, dtype=mycel.int8))
    assert x.dtype == np.int8 and x.min() == -128 and x.max() == 127
    counts = np.bincount(x.astype(np.int64) + 128, minlength=256)
    assert ((counts - N / 256) ** 2 / (N / 256)).sum() < 255 + 5 * math.sqrt(2 * 255)
    big = _np(ops.randint(-2**63, 2**63 - 1, (1000,), seed=3))
    assert big.min() < -2**61 and big.max() > 2**61
    u = _np(ops.randint(0, 256, (1000,), seed=3, dtype=mycel.uint8))
    assert u.dtype == np.uint8 and u.max() > 200


def test_randint_single_value():
    np.testing.assert_array_equal(_np(ops.randint(4, 5, (10,))), np.full(10, 4))


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_bernoulli_statistics(p):
    mycel.set_seed(3)
    x = _np(ops.bernoulli(mycel.Tensor(np.zeros(N, np.float32)), p))
    assert set(np.unique(x)) <= {0.0, 1.0}
    assert abs(x.mean() - p) <= 5 * math.sqrt(p * (1 - p) / N)


def test_bernoulli_keeps_input_dtype():
    x = ops.bernoulli(mycel.Tensor(np.zeros((4, 5), np.int32)), 0.5, seed=1)
    assert _np(x).dtype == np.int32 and _np(x).shape == (4, 5)
    b = _np(ops.bernoulli(mycel.Tensor(np.zeros(100, bool)), 0.5, seed=1))
    assert b.dtype == np.bool_ and 0 < b.sum() < 100


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dropout_values(dtype):
    mycel.set_seed(21)
    x = np.random.default_rng(0).standard_normal(N).astype(dtype)
    y, mask = ops.dropout(mycel.Tensor(x), keep_prob=0.7)
    y, mask = _np(y), _np(mask)
    assert mask.dtype == dtype and set(np.unique(mask)) <= {0.0, 1.0}
    assert abs(mask.mean() - 0.7) < 5 * math.sqrt(0.7 * 0.3 / N)
    np.testing.assert_allclose(y, x * mask / np.asarray(0.7, dtype), rtol=1e-6)


def test_dropout_keep_prob_one_is_identity():
    x = np.random.default_rng(0).standard_normal((30, 7)).astype(np.float32)
    y, mask = ops.dropout(mycel.Tensor(x), keep_prob=1.0)
    np.testing.assert_array_equal(_np(y), x)
    assert (_np(mask) == 1).all()


# ---- errors ----

@pytest.mark.parametrize("op,args,kwargs", [
    ("uniform", ((2, -1),), {}), ("normal", ((-3,),), {}), ("randint", (0, 5, (4, -2)), {}),
])
def test_negative_shape(op, args, kwargs):
    with pytest.raises(ValueError, match=rf"\[{op}\].*shape"):
        getattr(ops, op)(*args, **kwargs)


def test_random_attr_errors():
    with pytest.raises(ValueError, match=r"\[uniform\].*minval"):
        ops.uniform((3,), 1.0, 1.0)
    with pytest.raises(ValueError, match=r"\[uniform\].*finite"):
        ops.uniform((3,), 0.0, float("inf"))
    with pytest.raises(ValueError, match=r"\[normal\].*stddev"):
        ops.normal((3,), 0.0, -1.0)
    with pytest.raises(ValueError, match=r"\[randint\].*low"):
        ops.randint(5, 5, (3,))
    with pytest.raises(ValueError, match=r"\[randint\].*int8"):
        ops.randint(0, 200, (3,), dtype=mycel.int8)
    with pytest.raises(TypeError, match=r"\[randint\].*dtype"):
        ops.randint(0, 5, (3,), dtype=mycel.float32)
    with pytest.raises(TypeError, match=r"\[uniform\].*dtype"):
        ops.uniform((3,), dtype=mycel.int32)
    with pytest.raises(ValueError, match=r"\[uniform\].*seed"):
        ops.uniform((3,), seed=-1)
    with pytest.raises(ValueError, match=r"\[uniform\].*too large"):
        ops.uniform((2**40, 2**40))
    with pytest.raises(ValueError, match=r"\[bernoulli\].*'p'"):
        ops.bernoulli(mycel.Tensor(np.zeros(3, np.float32)), 1.5)
    with pytest.raises(TypeError, match=r"\[randint\].*missing"):
        ops.randint(0, 5)


@pytest.mark.parametrize("keep_prob", [0.0, -0.1, 1.5, float("nan")])
def test_dropout_keep_prob_out_of_range(keep_prob):
    with pytest.raises(ValueError, match=r"\[dropout\].*keep_prob"):
        ops.dropout(mycel.Tensor(np.ones(3, np.float32)), keep_prob=keep_prob)


def test_dropout_rejects_int_input():
    with pytest.raises(TypeError, match=r"\[dropout\]"):
        ops.dropout(mycel.Tensor(np.ones(3, np.int32)))


def test_set_seed_validates():
    with pytest.raises(ValueError, match="set_seed"):
        mycel.set_seed(-1)
    with pytest.raises(ValueError, match="set_seed"):
        mycel.set_seed(1.5)
