"""mycel.common.initializer: statistics of each initializer against its closed form, names,
dtypes, and reproducibility under mycel.set_seed."""
import math

import numpy as np
import pytest

import mycel
from mycel.common import initializer as init

SHAPE = (128, 64, 3, 3)  # fan_in 576, fan_out 1152
FAN_IN, FAN_OUT = 64 * 9, 128 * 9


def _a(t):
    return t.asnumpy().astype(np.float64)


@pytest.mark.parametrize("make,low,high", [
    (lambda: init.Uniform(0.3), -0.3, 0.3),
    (lambda: init.XavierUniform(2.0), -2 * math.sqrt(6 / (FAN_IN + FAN_OUT)), 2 * math.sqrt(6 / (FAN_IN + FAN_OUT))),
    (lambda: init.HeUniform(), -math.sqrt(6 / FAN_IN), math.sqrt(6 / FAN_IN)),
    (lambda: init.HeUniform(math.sqrt(5)), -math.sqrt(1 / FAN_IN), math.sqrt(1 / FAN_IN)),
    (lambda: init.HeUniform(mode="fan_out", nonlinearity="relu"), -math.sqrt(6 / FAN_OUT), math.sqrt(6 / FAN_OUT)),
])
def test_uniform_family_bounds_and_variance(make, low, high):
    a = _a(init.initializer(make(), SHAPE))
    assert a.min() >= low and a.max() <= high
    assert a.min() < low * 0.99 and a.max() > high * 0.99  # the whole range is used
    np.testing.assert_allclose(a.var(), (high - low) ** 2 / 12, rtol=0.03)
    assert abs(a.mean()) < 0.02 * high


@pytest.mark.parametrize("make,mean,std", [
    (lambda: init.Normal(0.5, 1.0), 1.0, 0.5),
    (lambda: init.HeNormal(), 0.0, math.sqrt(2 / FAN_IN)),
    (lambda: init.HeNormal(mode="fan_out"), 0.0, math.sqrt(2 / FAN_OUT)),
    (lambda: init.XavierNormal(), 0.0, math.sqrt(2 / (FAN_IN + FAN_OUT))),
])
def test_normal_family_moments(make, mean, std):
    a = _a(init.initializer(make(), SHAPE))
    np.testing.assert_allclose(a.std(), std, rtol=0.02)
    assert abs(a.mean() - mean) < 0.02 * std + 1e-12


def test_truncated_normal_in_bounds_with_truncated_variance():
    a = _a(init.initializer(init.TruncatedNormal(sigma=0.1), SHAPE))
    assert a.min() >= -0.2 and a.max() <= 0.2
    # Variance of N(0, 1) truncated to [-2, 2]: 1 - 2 * 2 * phi(2) / (2 * Phi(2) - 1).
    phi2 = math.exp(-2) / math.sqrt(2 * math.pi)
    z = math.erf(2 / math.sqrt(2))
    np.testing.assert_allclose(a.var(), 0.01 * (1 - 4 * phi2 / z), rtol=0.03)


@pytest.mark.parametrize("name,cls", [("normal", init.Normal), ("zeros", init.Zero), ("ones", init.One),
                                      ("xavier_uniform", init.XavierUniform), ("he_uniform", init.HeUniform),
                                      ("he_normal", init.HeNormal), ("truncatedNormal", init.TruncatedNormal),
                                      ("uniform", init.Uniform), ("XavierNormal", init.XavierNormal)])
def test_names_match_classes(name, cls):
    mycel.set_seed(3)
    a = init.initializer(name, (8, 4)).asnumpy()
    mycel.set_seed(3)
    np.testing.assert_array_equal(a, init.initializer(cls(), (8, 4)).asnumpy())


def test_constants_and_dtypes():
    np.testing.assert_array_equal(init.initializer("zeros", (2, 3)).asnumpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(init.initializer(init.One(), (4,), mycel.float64).asnumpy(), np.ones(4))
    c = init.initializer(2.5, (3,), mycel.float16)
    assert c.dtype == mycel.float16 and np.all(c.asnumpy() == 2.5)
    i = init.initializer(init.Constant(7), (2, 2), mycel.int32)
    assert i.dtype == mycel.int32 and np.all(i.asnumpy() == 7)
    for dt in (mycel.float16, mycel.bfloat16, mycel.float64):
        assert init.initializer("he_uniform", (4, 4), dt).dtype == dt
    t = mycel.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert init.initializer(t, (2, 3)) is t


def test_reproducible_under_set_seed_and_advancing():
    mycel.set_seed(11)
    a, b = init.initializer("normal", (50,)).asnumpy(), init.initializer("he_uniform", (5, 10)).asnumpy()
    mycel.set_seed(11)
    np.testing.assert_array_equal(init.initializer("normal", (50,)).asnumpy(), a)
    np.testing.assert_array_equal(init.initializer("he_uniform", (5, 10)).asnumpy(), b)
    assert not np.array_equal(init.initializer("normal", (50,)).asnumpy(), a)  # the stream moves on
    mycel.set_seed(12)
    assert not np.array_equal(init.initializer("normal", (50,)).asnumpy(), a)


def test_layers_reproducible_under_set_seed():
    mycel.set_seed(1)
    w = mycel.nn.Conv2d(3, 8, 3).weight.asnumpy()
    mycel.set_seed(1)
    np.testing.assert_array_equal(mycel.nn.Conv2d(3, 8, 3).weight.asnumpy(), w)


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown init 'nope'"):
        init.initializer("nope", (2,))
    with pytest.raises(ValueError, match="at least 2 dims"):
        init.initializer("xavier_uniform", (5,))
    with pytest.raises(ValueError, match="mode must be"):
        init.HeUniform(mode="fan_avg")
    with pytest.raises(ValueError, match="expected \\(3, 3\\)"):
        init.initializer(mycel.Tensor(np.zeros((2, 2), np.float32)), (3, 3))
    with pytest.raises(TypeError, match="init must be"):
        init.initializer([1, 2], (2,))
    with pytest.raises(ValueError, match="shape must be"):
        init.initializer("zeros", (2, -1))
