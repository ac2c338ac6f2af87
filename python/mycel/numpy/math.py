"""Elementwise math and comparison (mindspore.numpy), each one or a few Mycel ops."""
from mycel import _mycel
from mycel.common.tensor import Tensor
from mycel.numpy.creation import array
from mycel.ops.primitive import constexpr

_ops = _mycel.ops
# Python values (lists, numbers) become Tensors in Python: at compile time in graph mode.
_to_tensor = constexpr(array)


def _t(x):
    if isinstance(x, Tensor):
        return x
    return _to_tensor(x)


def add(x1, x2):
    """x1 + x2."""
    return _ops.add(_t(x1), x2)


def subtract(x1, x2):
    """x1 - x2."""
    return _ops.sub(_t(x1), x2)


def multiply(x1, x2):
    """x1 * x2."""
    return _ops.mul(_t(x1), x2)


def divide(x1, x2):
    """x1 / x2 (true division: integers give float32)."""
    return _ops.div(_t(x1), x2)


true_divide = divide


def floor_divide(x1, x2):
    """x1 // x2."""
    return _ops.floor_div(_t(x1), x2)


def power(x1, x2):
    """x1 ** x2."""
    return _ops.pow(_t(x1), x2)


def remainder(x1, x2):
    """x1 % x2 with the sign of x2 (numpy.remainder)."""
    return _ops.mod(_t(x1), x2)


mod = remainder


def negative(x):
    """-x."""
    return _ops.neg(_t(x))


def positive(x):
    """+x (a copy)."""
    return _ops.identity(_t(x))


def absolute(x):
    """|x|."""
    return _ops.abs(_t(x))


abs = absolute  # noqa: A001 (numpy's name)


def sign(x):
    """-1, 0 or 1 by the sign of x."""
    return _ops.sign(_t(x))


def sqrt(x):
    """Square root."""
    return _ops.sqrt(_t(x))


def square(x):
    """x * x."""
    return _ops.square(_t(x))


def exp(x):
    """e ** x."""
    return _ops.exp(_t(x))


def expm1(x):
    """e ** x - 1, accurate near 0."""
    return _ops.expm1(_t(x))


def log(x):
    """Natural logarithm."""
    return _ops.log(_t(x))


def log1p(x):
    """log(1 + x), accurate near 0."""
    return _ops.log1p(_t(x))


def log2(x):
    """Base-2 logarithm."""
    return _ops.log(_t(x)) * (1.0 / 0.6931471805599453)


def log10(x):
    """Base-10 logarithm."""
    return _ops.log(_t(x)) * (1.0 / 2.302585092994046)


def sin(x):
    """Sine."""
    return _ops.sin(_t(x))


def cos(x):
    """Cosine."""
    return _ops.cos(_t(x))


def tan(x):
    """Tangent."""
    return _ops.tan(_t(x))


def arctan2(x1, x2):
    """The angle of (x2, x1), quadrant-aware."""
    return _ops.atan2(_t(x1), _t(x2))


def tanh(x):
    """Hyperbolic tangent."""
    return _ops.tanh(_t(x))


def floor(x):
    """Largest integer <= x."""
    return _ops.floor(_t(x))


def ceil(x):
    """Smallest integer >= x."""
    return _ops.ceil(_t(x))


def rint(x):
    """Round half to even."""
    return _ops.round(_t(x))


def maximum(x1, x2):
    """Elementwise max."""
    return _ops.maximum(_t(x1), _t(x2))


def minimum(x1, x2):
    """Elementwise min."""
    return _ops.minimum(_t(x1), _t(x2))


def clip(a, a_min, a_max):
    """a limited to [a_min, a_max] (either may be None)."""
    return _ops.clip_by_value(_t(a), a_min, a_max)


def reciprocal(x):
    """1 / x."""
    return _ops.reciprocal(_t(x))


def isnan(x):
    """x is NaN."""
    return _ops.isnan(_t(x))


def isinf(x):
    """x is +-inf."""
    return _ops.isinf(_t(x))


def isfinite(x):
    """x is neither inf nor NaN."""
    return _ops.isfinite(_t(x))


def logical_and(x1, x2):
    """x1 and x2, elementwise."""
    return _ops.logical_and(_t(x1), _t(x2))


def logical_or(x1, x2):
    """x1 or x2, elementwise."""
    return _ops.logical_or(_t(x1), _t(x2))


def logical_not(x):
    """not x, elementwise."""
    return _ops.logical_not(_t(x))


def logical_xor(x1, x2):
    """x1 xor x2, elementwise."""
    return _ops.logical_xor(_t(x1), _t(x2))


def equal(x1, x2):
    """x1 == x2."""
    return _ops.equal(_t(x1), x2)


def not_equal(x1, x2):
    """x1 != x2."""
    return _ops.not_equal(_t(x1), x2)


def greater(x1, x2):
    """x1 > x2."""
    return _ops.greater(_t(x1), x2)


def greater_equal(x1, x2):
    """x1 >= x2."""
    return _ops.greater_equal(_t(x1), x2)


def less(x1, x2):
    """x1 < x2."""
    return _ops.less(_t(x1), x2)


def less_equal(x1, x2):
    """x1 <= x2."""
    return _ops.less_equal(_t(x1), x2)


def where(condition, x=None, y=None):
    """x where condition, else y (both required: the one-argument form's shape depends on values)."""
    if x is None or y is None:
        raise ValueError("where: x and y are both required (where(condition) alone gives a shape "
                         "known only from the values; use Tensor.nonzero eagerly)")
    cond, x, y = _t(condition), _t(x), _t(y)
    return _ops.select(cond, x, y)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b|, elementwise (numpy.isclose)."""
    a, b = _t(a), _t(b)
    close = _ops.less_equal(_ops.abs(a - b), atol + rtol * _ops.abs(b))
    close = _ops.logical_or(close, _ops.equal(a, b))  # infinities of the same sign
    if equal_nan:
        close = _ops.logical_or(close, _ops.logical_and(_ops.isnan(a), _ops.isnan(b)))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """All of isclose (a 0-d bool tensor)."""
    return _ops.all(isclose(a, b, rtol, atol, equal_nan))


def cumsum(a, axis=None, dtype=None):
    """Running sum along axis (of the flattened tensor when axis is None)."""
    a = _t(a)
    if axis is None:
        a, axis = _ops.reshape(a, (-1,)), 0
    out = _ops.cumsum(a, axis)
    return out if dtype is None else _ops.cast(out, dtype)
