"""Elementwise math of MindSpore 2.x's functional ops, over the registry ops."""
import math

import numpy as np

import mycel.ops as _P  # the Python-level ops (masked_fill, assign, ...); this package loads last
from mycel import _mycel
from mycel.common.dtype import (float16, bfloat16, float32, float64, int32, int64, bool_, complex64,
                                complex128)
from mycel.common.parameter import Parameter as _Parameter
from mycel.common.tensor import Tensor
from mycel.ops import tensor_composites as _tc
from mycel.ops.primitive import constexpr
from mycel.ops.function_more._base import _axis, _float_like, _FLOATS, _COMPLEX

_ops = _mycel.ops

# ---- elementwise math ----------------------------------------------------------------------------
def arctan2(input, other):
    """atan2(input, other) (MindSpore's arctan2 alias)."""
    return _ops.atan2(input, other)


def negative(input):
    """-input."""
    return _ops.neg(input)


def positive(input):
    """input itself (a bool tensor is a TypeError, as in MindSpore)."""
    if input.dtype == bool_:
        raise TypeError("positive: the input must not be bool")
    return input


def multiply(input, other):
    """input * other."""
    return _ops.mul(input, other)


def subtract(input, other, *, alpha=1):
    """input - alpha * other."""
    return _ops.sub(input, other if alpha == 1 else other * alpha)


def true_divide(dividend, divisor):
    """dividend / divisor (true division)."""
    return _ops.div(dividend, divisor)


def divide(input, other, *, rounding_mode=None):
    """input / other; rounding_mode 'floor' rounds down, 'trunc' toward zero."""
    if rounding_mode is None:
        return _ops.div(input, other)
    if rounding_mode == "floor":
        return _ops.floor_div(input, other)
    if rounding_mode == "trunc":
        return _tc.trunc(_ops.div(input, other))
    raise ValueError(f"divide: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")


def remainder(input, other):
    """input - floor(input / other) * other: the result has the divisor's sign (Python's %)."""
    return _P.floor_mod(input, other)


def fmod(input, other):
    """input - trunc(input / other) * other: the result has the dividend's sign (C's fmod)."""
    return input - _tc.trunc(_ops.div(input, other)) * other


def exp2(input):
    """2 ** input."""
    return _ops.pow(2.0, _float_like(input))


def float_power(input, exponent):
    """input ** exponent in float64."""
    a = _ops.cast(input, float64) if hasattr(input, "dtype") else input
    b = _ops.cast(exponent, float64) if hasattr(exponent, "dtype") else exponent
    return _ops.pow(a, b)


def sinc(input):
    """sin(pi x) / (pi x), 1 at 0 (the division is kept away from 0, so gradients stay finite)."""
    x = _float_like(input)
    zero = _ops.equal(x, 0.0)
    safe = _ops.select(zero, _ops.ones_like(x), x) * math.pi
    return _ops.select(zero, _ops.ones_like(x), _ops.sin(safe) / safe)


def logit(input, eps=None):
    """log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given."""
    x = input if eps is None else _ops.clip_by_value(input, eps, 1.0 - eps)
    return _ops.log(x / (1.0 - x))


def deg2rad(x):
    """Degrees to radians."""
    return _float_like(x) * (math.pi / 180.0)


def rad2deg(x):
    """Radians to degrees."""
    return _float_like(x) * (180.0 / math.pi)


def hypot(input, other):
    """sqrt(input^2 + other^2) without overflow: the larger magnitude is factored out."""
    a, b = _ops.abs(input), _ops.abs(other)
    big, small = _ops.maximum(a, b), _ops.minimum(a, b)
    zero = _ops.equal(big, 0.0)
    ratio = small / _ops.select(zero, _ops.ones_like(big), big)
    return _ops.select(zero, _ops.zeros_like(big), big * _ops.sqrt(1.0 + ratio * ratio))


def logaddexp(input, other):
    """log(exp(input) + exp(other)), computed without overflow."""
    m = _ops.maximum(input, other)
    return m + _ops.log1p(_ops.exp(-_ops.abs(input - other)))


def logaddexp2(input, other):
    """log2(2^input + 2^other), computed without overflow."""
    m = _ops.maximum(input, other)
    return m + _ops.log1p(_ops.pow(2.0, -_ops.abs(input - other))) / math.log(2.0)


def signbit(input):
    """Whether the sign bit is set (true for -0.0 too)."""
    if input.dtype not in _FLOATS:
        return _ops.less(input, 0)
    neg_zero = _ops.logical_and(_ops.equal(input, 0.0), _ops.less(1.0 / input, 0.0))
    return _ops.logical_or(_ops.less(input, 0.0), neg_zero)


def copysign(x, other):
    """|x| with the sign of other (-0.0 counts as negative)."""
    mag = _ops.abs(_float_like(x))
    return _ops.select(signbit(other * _ops.ones_like(mag)), -mag, mag)


def sgn(input):
    """sign(input) for real tensors; input / |input| (0 at 0) for complex ones."""
    if input.dtype in _COMPLEX:
        mag = _ops.abs(input)
        zero = _ops.equal(mag, 0.0)
        safe = _ops.cast(_ops.select(zero, _ops.ones_like(mag), mag), input.dtype)
        return _ops.select(_ops.broadcast_to(zero, input.shape), _ops.zeros_like(input), input / safe)
    return _ops.sign(input)


def frac(x):
    """x - trunc(x): the fractional part, with x's sign."""
    return x - _tc.trunc(x)


def _horner(w, coefficients):
    p = _ops.ones_like(w) * coefficients[0]
    for c in coefficients[1:]:
        p = p * w + c
    return p


def erfc(input):
    """1 - erf(x) without the cancellation: t exp(-z^2 + P(t)), t = 1 / (1 + z / 2), z = |x|
    (Numerical Recipes' erfcc, relative error below 1.2e-7), reflected as 2 - erfc(-x) for x < 0."""
    out_dtype = _float_like(input).dtype
    x = _ops.cast(input, float64)  # exp(-z^2) needs float64's exponent precision for z up to 9
    z = _ops.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = _horner(t, (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
                       0.09678418, 0.37409196, 1.00002368, -1.26551223))
    r = t * _ops.exp(-z * z + poly)
    return _ops.cast(_ops.select(_ops.less(x, 0.0), 2.0 - r, r), out_dtype)


def erfinv(input):
    """The inverse of erf on (-1, 1): Giles' single-precision approximation, then one Newton step
    on erf; +-inf at +-1, NaN outside."""
    x = _float_like(input)
    w = -_ops.log((1.0 - x) * (1.0 + x))
    central = _horner(w - 2.5, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                                0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941))
    tail = _horner(_ops.sqrt(w) - 3.0, (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                                        0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682))
    y = _ops.select(_ops.less(w, 5.0), central, tail) * x
    finite = _ops.less(_ops.abs(x), 1.0)
    y_safe = _ops.select(finite, y, _ops.zeros_like(y))
    slope = (2.0 / math.sqrt(math.pi)) * _ops.exp(-y_safe * y_safe)
    refined = y_safe - (_ops.erf(y_safe) - x) / slope
    edge = _ops.stop_gradient(x) * float("inf")  # +-1 -> +-inf (no gradient: inf * 0 is NaN)
    return _ops.select(finite, refined, _ops.select(_ops.equal(_ops.abs(x), 1.0), edge, y))


def ldexp(x, other):
    """x * 2^other."""
    return _float_like(x) * _ops.pow(2.0, _float_like(other))


def trapz(y, x=None, *, dx=1.0, dim=-1):
    """The trapezoid rule along dim, with sample points x or spacing dx."""
    d = _axis(y, dim)
    n = y.shape[d]
    left, right = _tc.narrow(y, d, 0, n - 1), _tc.narrow(y, d, 1, n - 1)
    if x is None:
        return _ops.sum((left + right) * (0.5 * dx), (d,))
    xd = _axis(x, dim if x.ndim == y.ndim else -1)
    spacing = _tc.narrow(x, xd, 1, n - 1) - _tc.narrow(x, xd, 0, n - 1)
    return _ops.sum((left + right) * spacing * 0.5, (d,))


def _tri_indices(who, row, col, offset, dtype, upper):
    for name, v in (("row", row), ("col", col), ("offset", offset)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{who}: {name} must be an int, got {v!r}")
    if row < 0 or col < 0:
        raise ValueError(f"{who}: row and col must be >= 0, got {row}, {col}")
    r, c = (np.triu_indices if upper else np.tril_indices)(row, offset, col)
    return Tensor(np.stack([r, c]).astype(np.dtype(dtype.name)))


def tril_indices(row, col, offset=0, *, dtype=int64):
    """The (2, N) coordinates of the lower triangle of a row x col matrix (diagonal offset)."""
    return _tri_indices("tril_indices", row, col, offset, dtype, upper=False)


def triu_indices(row, col, offset=0, *, dtype=int64):
    """The (2, N) coordinates of the upper triangle of a row x col matrix (diagonal offset)."""
    return _tri_indices("triu_indices", row, col, offset, dtype, upper=True)


def approximate_equal(x, y, tolerance=1e-5):
    """|x - y| < tolerance."""
    return _ops.less(_ops.abs(x - y), tolerance)


def isneginf(input):
    """input == -inf."""
    return _ops.logical_and(_ops.isinf(input), _ops.less(input, 0))


def isposinf(input):
    """input == +inf."""
    return _ops.logical_and(_ops.isinf(input), _ops.greater(input, 0))


def isreal(input):
    """True where the imaginary part is 0 (everywhere for a real tensor)."""
    if input.dtype in _COMPLEX:
        return _ops.equal(_ops.imag(input), 0.0)
    return _ops.cast(_ops.ones_like(input), bool_)


def is_complex(input):
    """Whether the dtype is complex."""
    return input.dtype in _COMPLEX


def is_floating_point(input):
    """Whether the dtype is a floating-point one."""
    return input.dtype in _FLOATS


def addcdiv(input, tensor1, tensor2, value=1):
    """input + value * tensor1 / tensor2."""
    return input + value * _ops.div(tensor1, tensor2)


def addcmul(input, tensor1, tensor2, value=1):
    """input + value * tensor1 * tensor2."""
    return input + value * tensor1 * tensor2


def diff(x, n=1, axis=-1, prepend=None, append=None):
    """The n-th forward difference along axis (prepend/append joined first)."""
    d = _axis(x, axis)
    if prepend is not None:
        x = _ops.concat((prepend, x), d)
    if append is not None:
        x = _ops.concat((x, append), d)
    for _ in range(n):
        m = x.shape[d]
        x = _tc.narrow(x, d, 1, m - 1) - _tc.narrow(x, d, 0, m - 1)
    return x


def rot90(input, k=1, dims=(0, 1)):
    """input rotated by k quarter turns in the plane dims (from the first axis toward the second)."""
    a, b = _axis(input, dims[0]), _axis(input, dims[1])
    k = k % 4
    if k == 0:
        return input
    perm = tuple(b if i == a else a if i == b else i for i in range(input.ndim))
    if k == 1:
        return _ops.transpose(_tc.flip(input, (b,)), perm)
    if k == 2:
        return _tc.flip(input, (a, b))
    return _tc.flip(_ops.transpose(input, perm), (b,))


def absolute(input):
    """|input| (MindSpore's other name of abs)."""
    return _ops.abs(input)


def addn(x):
    """The sum of a tuple or list of tensors."""
    out = x[0]
    for t in x[1:]:
        out = out + t
    return out


accumulate_n = addn


def truncate_div(x, y):
    """x / y rounded toward zero."""
    return divide(x, y, rounding_mode="trunc")


def truncate_mod(x, y):
    """x - truncate_div(x, y) * y: the dividend's sign."""
    return fmod(x, y)


def xdivy(x, y):
    """x / y, 0 where x is 0."""
    zero = _ops.equal(x * _ops.ones_like(y), 0)
    yb = y * _ops.ones_like(x)
    return _ops.select(zero, _ops.zeros_like(yb), _ops.div(x, _ops.select(zero, _ops.ones_like(yb), yb)))


def fmax(input, other):
    """The elementwise maximum, ignoring NaN (NaN only where both are)."""
    a, b = input * _ops.ones_like(other), other * _ops.ones_like(input)
    return _ops.select(_ops.isnan(a), b, _ops.select(_ops.isnan(b), a, _ops.maximum(a, b)))


def fmin(input, other):
    """The elementwise minimum, ignoring NaN (NaN only where both are)."""
    a, b = input * _ops.ones_like(other), other * _ops.ones_like(input)
    return _ops.select(_ops.isnan(a), b, _ops.select(_ops.isnan(b), a, _ops.minimum(a, b)))


def heaviside(input, values):
    """0 where input < 0, values where input == 0, 1 where input > 0."""
    ones = _ops.ones_like(input)
    return _ops.select(_ops.equal(input, 0), values * ones, _ops.cast(_ops.greater(input, 0), input.dtype) * ones)
