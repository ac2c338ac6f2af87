"""More of MindSpore 2.x's functional ops (mindspore.ops.<name>), written over the registry ops
so that gradients, vmap and graph mode come with them (graph mode parses these functions).
MindSpore's signatures and conventions win where they differ from NumPy's or PyTorch's
(ops.diag is TensorFlow's any-rank diag, ops.smooth_l1_loss reduces with 'none' by default).
The Tensor-method composites (tensor_composites.py) are exported here under their functional
names too. Measured coverage: bench/compat_api_coverage.py."""
import inspect
import math

import numpy as np


import mycel.ops as _P  # the Python-level ops (masked_fill, assign, ...); this module loads last
from mycel import _mycel
from mycel.common.dtype import (float16, bfloat16, float32, float64, int32, int64, bool_, complex64,
                                complex128)
from mycel.common.parameter import Parameter as _Parameter
from mycel.common.tensor import Tensor
from mycel.ops import tensor_composites as _tc
from mycel.ops.primitive import constexpr

_ops = _mycel.ops

# ---- the Tensor-method composites under their functional names ---------------------------------
acos = arccos = _tc.acos
asin = arcsin = _tc.asin
atan = arctan = _tc.atan
sinh, cosh = _tc.sinh, _tc.cosh
asinh = arcsinh = _tc.asinh
acosh = arccosh = _tc.acosh
atanh = arctanh = _tc.atanh
log2, log10, trunc, fix = _tc.log2, _tc.log10, _tc.trunc, _tc.trunc
xlogy, lerp, addmm, t = _tc.xlogy, _tc.lerp, _tc.addmm, _tc.t
swapaxes = swapdims = _tc.swapaxes
flip, tensor_split, hsplit, vsplit, dsplit = _tc.flip, _tc.tensor_split, _tc.hsplit, _tc.vsplit, _tc.dsplit
unbind, isclose, nan_to_num, narrow, ravel = _tc.unbind, _tc.isclose, _tc.nan_to_num, _tc.narrow, _tc.ravel


def _axis(x, axis):
    return axis % x.ndim if x.ndim else 0


_FLOATS = (float16, bfloat16, float32, float64)
_COMPLEX = (complex64, complex128)


def _float_like(x):
    return x if x.dtype in _FLOATS else _ops.cast(x, float32)


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


# ---- reductions ----------------------------------------------------------------------------------
def nansum(input, axis=None, keepdims=False, *, dtype=None):
    """The sum with NaNs counted as 0."""
    x = _ops.select(_ops.isnan(input), _ops.zeros_like(input), input)
    if dtype is not None:
        x = _ops.cast(x, dtype)
    axes = () if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    return _ops.sum(x, axes, keepdims)


def aminmax(input, *, axis=0, keepdims=False):
    """(min, max) along axis."""
    return _ops.min(input, (axis,), keepdims), _ops.max(input, (axis,), keepdims)


def median(input, axis=-1, keepdims=False):
    """(values, indices) of the median along axis: the lower middle for an even count."""
    d = _axis(input, axis)
    n = input.shape[d]
    values, order = _ops.sort(input, d)
    k = (n - 1) // 2
    v, i = _tc.narrow(values, d, k, 1), _tc.narrow(order, d, k, 1)
    if not keepdims:
        v, i = _ops.squeeze(v, (d,)), _ops.squeeze(i, (d,))
    return v, i


def msort(input):
    """input sorted along its first dimension."""
    return _ops.sort(input, 0)[0]


@constexpr
def _scan_shifts(n):
    """1, 2, 4, ... below n: the steps of a log-step scan."""
    out, s = [], 1
    while s < n:
        out.append(s)
        s *= 2
    return tuple(out)


@constexpr
def _slice_bounds(n, start, end, step):
    """(first, stop, positions) of start:end:step over n elements."""
    lo, hi, _ = slice(start, end, step).indices(n)
    return lo, hi, Tensor(np.arange(lo, hi, step, dtype=np.int64))


def _cumulative_extreme(who, x, axis, pick_later):
    """(values, indices) of a running max or min along axis: a log-step scan (Hillis-Steele) of
    (value, index) pairs, the later element winning ties (PyTorch's and MindSpore's rule)."""
    d = _axis(x, axis)
    n = x.shape[d]
    shape = tuple(n if k == d else 1 for k in range(x.ndim))
    v = x
    i = _ops.broadcast_to(_ops.arange(n, dtype=int64).reshape(shape), x.shape)
    for s in _scan_shifts(n):
        ev = _ops.concat((_P.full_like(_tc.narrow(v, d, 0, s), 0), _tc.narrow(v, d, 0, n - s)), d)
        ei = _ops.concat((_tc.narrow(i, d, 0, s), _tc.narrow(i, d, 0, n - s)), d)
        has_earlier = _ops.broadcast_to(_ops.greater_equal(_ops.arange(n, dtype=int64), s).reshape(shape), x.shape)
        later_wins = _ops.logical_or(_ops.logical_not(has_earlier), pick_later(v, ev))
        v = _ops.select(later_wins, v, ev)
        i = _ops.select(later_wins, i, ei)
    return v, i


def cummax(input, axis):
    """(values, indices) of the running maximum along axis."""
    return _cumulative_extreme("cummax", input, axis, _ops.greater_equal)


def cummin(input, axis):
    """(values, indices) of the running minimum along axis."""
    return _cumulative_extreme("cummin", input, axis, _ops.less_equal)


def logcumsumexp(input, axis):
    """log(cumsum(exp(input))) along axis, shifted by the maximum so it does not overflow."""
    m = _ops.stop_gradient(_ops.max(input, (_axis(input, axis),), True))
    return _ops.log(_ops.cumsum(_ops.exp(input - m), axis)) + m


def count_nonzero(x, axis=(), keep_dims=False, dtype=int32):
    """The number of nonzero elements along axis (all of them for ())."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return _ops.cast(_ops.sum(_ops.cast(_ops.not_equal(x, 0), int32), axes, keep_dims), dtype)


def histc(input, bins=100, min=0., max=0.):  # noqa: A002 (MindSpore's argument names)
    """Counts of input in `bins` equal bins over [min, max] (the data's range when both are 0);
    values outside are ignored. Not differentiable."""
    x = _ops.stop_gradient(_ops.cast(input, float32)).reshape((-1,))
    lo, hi = float(min), float(max)
    if lo == hi == 0.0:
        lo, hi = float(_ops.min(x).asnumpy()), float(_ops.max(x).asnumpy())
    if hi == lo:
        lo, hi = lo - 1.0, hi + 1.0
    inside = _ops.logical_and(_ops.greater_equal(x, lo), _ops.less_equal(x, hi))
    idx = _ops.cast(_ops.floor((x - lo) * (bins / (hi - lo))), int32)
    idx = _ops.clip_by_value(idx, 0, bins - 1)
    hits = _ops.one_hot(idx, bins) * _ops.expand_dims(_ops.cast(inside, float32), 1)
    return _ops.cast(_ops.sum(hits, (0,)), input.dtype)


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None):
    """For each value, the index where inserting it keeps sorted_sequence's last dimension sorted:
    before equal elements (side 'left'), or after them (right=True or side 'right')."""
    if side is not None:
        if side not in ("left", "right"):
            raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
        right = side == "right"
    seq = sorted_sequence if sorter is None else _ops.gather_elements(sorted_sequence, sorter, dim=-1)
    s = _ops.expand_dims(seq, -2)                  # (..., 1, n)
    v = _ops.expand_dims(values, -1)               # (..., m, 1)
    before = _ops.less_equal(s, v) if right else _ops.less(s, v)
    return _ops.cast(_ops.sum(_ops.cast(before, int32), (-1,)), int32 if out_int32 else int64)


# ---- linear algebra ------------------------------------------------------------------------------
def outer(input, vec2):
    """The outer product of two 1-d tensors."""
    return _ops.expand_dims(input, 1) * _ops.expand_dims(vec2, 0)


ger = outer


def inner(input, other):
    """The sum over the last dimensions of input and other (a scalar operand multiplies)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    a = input.reshape(tuple(input.shape[:-1]) + (1,) * (other.ndim - 1) + (input.shape[-1],))
    return _ops.sum(a * other, (-1,))


def mm(input, mat2):
    """The product of two 2-d matrices."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise ValueError(f"mm: expected two 2-d tensors, got shapes {tuple(input.shape)} and {tuple(mat2.shape)}")
    return _ops.matmul(input, mat2)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec)."""
    return input * beta + _ops.matmul(mat, vec) * alpha


def addr(x, vec1, vec2, *, beta=1, alpha=1):
    """beta * x + alpha * outer(vec1, vec2)."""
    return x * beta + outer(vec1, vec2) * alpha


def baddbmm(input, batch1, batch2, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2), batched."""
    return input * beta + _P.bmm(batch1, batch2) * alpha


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * sum over the batch of batch1 @ batch2."""
    return input * beta + _ops.sum(_P.bmm(batch1, batch2), (0,)) * alpha


def adjoint(x):
    """The conjugate transpose of the last two dimensions."""
    perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    y = _ops.transpose(x, perm)
    return _ops.conj(y) if x.dtype in _COMPLEX else y


def logdet(input):
    """log(det(input)) (NaN where the determinant is negative)."""
    return _ops.log(_ops.det(input))


def tensor_dot(x1, x2, axes):
    """Contraction over axes: an int n (the last n of x1 with the first n of x2) or a pair of
    axis lists (MindSpore's ops.tensor_dot)."""
    if isinstance(axes, int):
        a1, a2 = tuple(range(x1.ndim - axes, x1.ndim)), tuple(range(axes))
    else:
        a1, a2 = axes
        a1 = (a1,) if isinstance(a1, int) else tuple(a1)
        a2 = (a2,) if isinstance(a2, int) else tuple(a2)
    a1 = tuple(a % x1.ndim for a in a1)
    a2 = tuple(a % x2.ndim for a in a2)
    if len(a1) != len(a2) or any(x1.shape[i] != x2.shape[j] for i, j in zip(a1, a2)):
        raise ValueError(f"tensor_dot: axes {a1} of shape {tuple(x1.shape)} and {a2} of shape "
                         f"{tuple(x2.shape)} do not match")
    free1 = tuple(i for i in range(x1.ndim) if i not in a1)
    free2 = tuple(i for i in range(x2.ndim) if i not in a2)
    k = int(np.prod([x1.shape[i] for i in a1])) if a1 else 1
    m1 = _ops.transpose(x1, free1 + a1).reshape((-1, k))
    m2 = _ops.transpose(x2, a2 + free2).reshape((k, -1))
    return _ops.matmul(m1, m2).reshape(tuple(x1.shape[i] for i in free1) + tuple(x2.shape[i] for i in free2))


def kron(input, other):
    """The Kronecker product (the lower-rank operand gets leading 1s)."""
    nd = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (nd - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.ndim) + tuple(other.shape))
    sa = []
    sb = []
    for d in range(nd):
        sa += [a.shape[d], 1]
        sb += [1, b.shape[d]]
    out = a.reshape(tuple(sa)) * b.reshape(tuple(sb))
    return out.reshape(tuple(a.shape[d] * b.shape[d] for d in range(nd)))


def cross(input, other, dim=None):
    """The cross product along dim (the first dimension of size 3 when dim is None)."""
    if dim is None:
        dims = [d for d in range(input.ndim) if input.shape[d] == 3]
        if not dims:
            raise ValueError(f"cross: no dimension of size 3 in shape {tuple(input.shape)}")
        dim = dims[0]
    d = _axis(input, dim)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise ValueError(f"cross: dimension {dim} must have size 3, got shapes {tuple(input.shape)} "
                         f"and {tuple(other.shape)}")
    a = [_tc.narrow(input, d, i, 1) for i in range(3)]
    b = [_tc.narrow(other, d, i, 1) for i in range(3)]
    return _ops.concat((a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]), d)


def diag(input):
    """TensorFlow's diag, as MindSpore's: a rank-k input of shape S gives the rank-2k tensor of
    shape S + S with input on its diagonal."""
    shape = tuple(input.shape)
    n = int(np.prod(shape)) if shape else 1
    flat = input.reshape((n,))
    eye = _ops.cast(_ops.eye(n, n, float32), input.dtype) if input.dtype != bool_ else _ops.eye(n, n, float32) > 0
    return (_ops.expand_dims(flat, 1) * eye).reshape(shape + shape)


@constexpr
def _diagonal_mask(n, m, offset):
    """The (n, m) float32 indicator of diagonal `offset`."""
    return Tensor((np.arange(m)[None, :] - np.arange(n)[:, None] == offset).astype(np.float32))


@constexpr
def _diagonal_span(n, m, offset):
    """(first row, length) of diagonal `offset` of an n x m matrix."""
    start = max(0, -offset)
    return start, max(0, min(n, m - offset) - start)


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of the (dim1, dim2) planes, as the last dimension (PyTorch's/NumPy's)."""
    d1, d2 = _axis(input, dim1), _axis(input, dim2)
    if d1 == d2:
        raise ValueError(f"diagonal: dim1 and dim2 must differ, got {dim1} and {dim2}")
    rest = tuple(d for d in range(input.ndim) if d not in (d1, d2))
    x = _ops.transpose(input, rest + (d1, d2))
    n, m = x.shape[-2], x.shape[-1]
    start, length = _diagonal_span(n, m, offset)
    on_diagonal = _diagonal_mask(n, m, offset)
    if x.dtype == bool_:
        picked = _ops.any(_ops.logical_and(x, _ops.cast(on_diagonal, bool_)), (-1,))
    else:
        picked = _ops.sum(x * _ops.cast(on_diagonal, x.dtype), (-1,))
    return _tc.narrow(picked, -1, start, length)


def trace(input):
    """The sum of the main diagonal of a 2-d tensor."""
    if input.ndim != 2:
        raise ValueError(f"trace: expected a 2-d tensor, got shape {tuple(input.shape)}")
    return _ops.sum(diagonal(input), ())


def diagflat(input, offset=0):
    """A 2-d tensor with input (flattened) on diagonal `offset`."""
    flat = input.reshape((-1,))
    n = flat.shape[0]
    square = diag(flat)
    k = abs(offset)
    pads = (0, k, k, 0) if offset > 0 else (k, 0, 0, k)
    return _ops.pad(square, pads) if k else square


def _einsum_parse(equation, ranks):
    """[(labels of each operand)], output labels: '...' expanded to capital letters, checked."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"einsum: equation {equation!r} has {len(terms)} operands, got {len(ranks)} tensors")
    ell = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    n_ell = 0
    parsed = []
    for term, rank in zip(terms, ranks):
        if "..." in term:
            k = rank - (len(term) - 3)
            if k < 0:
                raise ValueError(f"einsum: operand '{term}' has more labels than its {rank} dimensions")
            n_ell = max(n_ell, k)
            term = term.replace("...", ell[n_ell - k:n_ell] if k else "")
        if len(term) != rank or not all(c.isalpha() and c.islower() or c in ell for c in term):
            raise ValueError(f"einsum: operand labels '{term}' do not match a {rank}-d tensor")
        parsed.append(term)
    if arrow:
        out = out.replace("...", ell[:n_ell])
    else:  # implicit output: the ellipsis, then the labels used once, sorted
        counts = {}
        for t in parsed:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell[:n_ell] + "".join(sorted(c for c, n in counts.items() if n == 1 and c.islower()))
    return parsed, out


def _einsum_schedule(equation, shapes):
    """The whole contraction, planned from the shapes when the call is compiled: per operand the
    (i, j) diagonals to take, per pair (perm_a, shape_a, perm_b, shape_b, out_shape) of one
    batched matmul, then the axes to sum and the final permutation."""
    terms, out = _einsum_parse(equation, tuple(len(sh) for sh in shapes))
    size = {}
    diags, labels = [], []
    for term, shape in zip(terms, shapes):
        for c, n in zip(term, shape):
            if size.setdefault(c, n) != n and n != 1 and size[c] != 1:
                raise ValueError(f"einsum: label '{c}' has sizes {size[c]} and {n}")
            size[c] = max(size[c], n)
        steps, lab, shp = [], term, list(shape)
        while True:
            dup = next((c for c in lab if lab.count(c) > 1), None)
            if dup is None:
                break
            i = lab.index(dup)
            j = lab.index(dup, i + 1)
            if shp[i] != shp[j]:
                raise ValueError(f"einsum: repeated label '{dup}' has sizes {shp[i]} and {shp[j]}")
            steps.append((i, j))
            lab = "".join(c for k, c in enumerate(lab) if k not in (i, j)) + dup
            shp = [n for k, n in enumerate(shp) if k not in (i, j)] + [shp[i]]
        for c, n in zip(lab, shp):
            if n != size[c]:
                raise ValueError(f"einsum: label '{c}' has sizes {n} and {size[c]} (no broadcasting)")
        diags.append(tuple(steps))
        labels.append(lab)

    def prod(ls):
        out_ = 1
        for c in ls:
            out_ *= size[c]
        return out_
    pairs, la = [], labels[0]
    for k in range(1, len(labels)):
        lb, keep = labels[k], "".join(labels[k + 1:]) + out
        batch = [c for c in la if c in lb and c in keep]
        contract = [c for c in la if c in lb and c not in keep]
        free_a = [c for c in la if c not in lb]
        free_b = [c for c in lb if c not in la]
        pairs.append((tuple(la.index(c) for c in batch + free_a + contract),
                      (prod(batch), prod(free_a), prod(contract)),
                      tuple(lb.index(c) for c in batch + contract + free_b),
                      (prod(batch), prod(contract), prod(free_b)),
                      tuple(size[c] for c in batch + free_a + free_b)))
        la = "".join(batch + free_a + free_b)
    gone = tuple(i for i, c in enumerate(la) if c not in out)
    kept = "".join(c for c in la if c in out)
    perm = tuple(kept.index(c) for c in out)
    return tuple(diags), tuple(pairs), gone, (perm if perm != tuple(range(len(perm))) else ())


_einsum_plan = constexpr(_einsum_schedule)


def _take_diagonals(x, steps):
    for i, j in steps:
        x = diagonal(x, 0, i, j)  # the diagonal becomes the last dimension
    return x


def einsum(equation, *operands):
    """Einstein summation (NumPy's notation: 'ij,jk->ik', '...' for leading dimensions, implicit
    output). Operands are contracted left to right, each pair as one batched matmul; a label
    repeated within an operand takes its diagonal. The plan is made from the shapes at compile
    time, so graph mode runs only the transposes, reshapes and matmuls."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    diags, pairs, gone, perm = _einsum_plan(equation, tuple(x.shape for x in operands))
    acc = _take_diagonals(operands[0], diags[0])
    for (perm_a, shape_a, perm_b, shape_b, shape_out), b, steps in zip(pairs, operands[1:], diags[1:]):
        a3 = _ops.transpose(acc, perm_a).reshape(shape_a)
        b3 = _ops.transpose(_take_diagonals(b, steps), perm_b).reshape(shape_b)
        acc = _P.bmm(a3, b3).reshape(shape_out)
    if gone:
        acc = _ops.sum(acc, gone)
    if perm:
        acc = _ops.transpose(acc, perm)
    return acc


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


def mv(mat, vec):
    """The product of a matrix and a vector."""
    if mat.ndim != 2 or vec.ndim != 1:
        raise ValueError(f"mv: expected a 2-d matrix and a 1-d vector, got shapes {tuple(mat.shape)} and {tuple(vec.shape)}")
    return _ops.matmul(mat, vec)


def matrix_band_part(x, lower, upper):
    """x with everything outside the band (lower diagonals below, upper above; -1: all) zeroed."""
    n, m = x.shape[-2], x.shape[-1]
    lo = n if lower < 0 else lower
    hi = m if upper < 0 else upper
    return _ops.triu(_ops.tril(x, hi), -lo)


def heaviside(input, values):
    """0 where input < 0, values where input == 0, 1 where input > 0."""
    ones = _ops.ones_like(input)
    return _ops.select(_ops.equal(input, 0), values * ones, _ops.cast(_ops.greater(input, 0), input.dtype) * ones)


def nanmean(input, axis=None, keepdims=False, *, dtype=None):
    """The mean ignoring NaNs."""
    valid = _ops.logical_not(_ops.isnan(input))
    total = nansum(input, axis, keepdims, dtype=dtype)
    axes = () if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    count = _ops.sum(_ops.cast(valid, total.dtype), axes, keepdims)
    return total / count


def ptp(input, axis=None, keepdims=False):
    """max - min (over axis, or all elements)."""
    axes = () if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    return _ops.max(input, axes, keepdims) - _ops.min(input, axes, keepdims)


# ---- array ---------------------------------------------------------------------------------------
def cat(tensors, axis=0):
    """concat (MindSpore 2.x's name)."""
    return _ops.concat(tensors, axis)


def _atleast(x, n):
    if x.ndim >= n:
        return x
    if n == 2:
        return x.reshape((1,) + tuple(x.shape) if x.ndim == 1 else (1, 1))
    return x.reshape((1, x.shape[0], 1) if x.ndim == 1 else (1,) * (3 - x.ndim) + tuple(x.shape)
                     if x.ndim == 0 else tuple(x.shape) + (1,))


def hstack(tensors):
    """Concatenation along the columns (the first axis for 1-d tensors)."""
    ts = tuple(tensors)
    return _ops.concat(ts, 0 if all(t.ndim == 1 for t in ts) else 1)


def vstack(inputs):
    """Concatenation of the inputs (made at least 2-d) along the rows."""
    return _ops.concat(tuple(_atleast(t, 2) for t in inputs), 0)


def dstack(inputs):
    """Concatenation of the inputs (made at least 3-d) along the third axis."""
    return _ops.concat(tuple(_atleast(t, 3) for t in inputs), 2)


def column_stack(tensors):
    """1-d tensors as columns (higher ones as they are), side by side."""
    return _ops.concat(tuple(t.reshape((-1, 1)) if t.ndim <= 1 else t for t in tensors), 1)


def block_diag(*inputs):
    """A block-diagonal matrix of the inputs (0-d and 1-d ones become 1-row blocks)."""
    blocks = [t.reshape((1, -1)) if t.ndim < 2 else t for t in inputs]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        rows.append(_ops.pad(b, (0, 0, left, width - left - b.shape[1])))
        left += b.shape[1]
    return _ops.concat(tuple(rows), 0)


def channel_shuffle(x, groups):
    """Channels (axis 1) regrouped: (N, g, C/g, ...) transposed to (N, C/g, g, ...)."""
    n, c = x.shape[0], x.shape[1]
    if groups <= 0 or c % groups:
        raise ValueError(f"channel_shuffle: {c} channels do not split into {groups} groups")
    rest = tuple(x.shape[2:])
    y = x.reshape((n, groups, c // groups) + rest)
    y = _ops.transpose(y, (0, 2, 1) + tuple(range(3, 3 + len(rest))))
    return y.reshape((n, c) + rest)


def deepcopy(input_x):
    """A new tensor with input_x's values."""
    return _ops.identity(input_x)


def fliplr(input):
    """input reversed along its second dimension."""
    return _tc.flip(input, (1,))


def flipud(input):
    """input reversed along its first dimension."""
    return _tc.flip(input, (0,))


def reverse(x, axis):
    """x reversed along the given axes (ReverseV2)."""
    return _tc.flip(x, axis)


@constexpr
def _roll_plan(shape, shifts, dims):
    """((axis, shift) ...) with shifts taken modulo the axis length; checked."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(dims)} dims")
    plan = []
    for s, d in zip(shifts, dims):
        d = d % len(shape)
        if shape[d] and s % shape[d]:
            plan.append((d, s % shape[d], shape[d]))
    return tuple(plan)


def roll(input, shifts, dims=None):
    """Elements shifted along dims, wrapping around (the flattened tensor when dims is None)."""
    if dims is None:
        return roll(input.reshape((-1,)), shifts, 0).reshape(input.shape)
    out = input
    for d, s, n in _roll_plan(input.shape, shifts, dims):
        out = _ops.concat((_tc.narrow(out, d, n - s, s), _tc.narrow(out, d, 0, n - s)), d)
    return out


def index_select(input, axis, index):
    """The entries of input at index (1-d) along axis."""
    if index.ndim != 1:
        raise ValueError(f"index_select: index must be 1-d, got shape {tuple(index.shape)}")
    return _ops.gather(input, index, axis)


def index_fill(x, axis, index, value):
    """x with the positions index (1-d) along axis set to value."""
    d = _axis(x, axis)
    hit = _ops.any(_ops.equal(_ops.expand_dims(_ops.arange(x.shape[d], dtype=index.dtype), 1),
                                     _ops.expand_dims(index, 0)), (1,))
    shape = tuple(x.shape[d] if i == d else 1 for i in range(x.ndim))
    return _P.masked_fill(x, _ops.broadcast_to(hit.reshape(shape), tuple(x.shape)), value)


def moveaxis(x, source, destination):
    """x with the axes `source` moved to the positions `destination`."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    src = tuple(_axis(x, s) for s in src)
    dst = tuple(_axis(x, s) for s in dst)
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: {len(src)} source axes for {len(dst)} destinations")
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _ops.transpose(x, tuple(order))


movedim = moveaxis


def meshgrid(*inputs, indexing="xy"):
    """Coordinate grids from 1-d inputs ('xy': the first two axes swapped, as NumPy)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    ts = list(inputs[0]) if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)) else list(inputs)
    shape = [t.shape[0] for t in ts]
    if indexing == "xy" and len(ts) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    outs = []
    for i, t in enumerate(ts):
        axis = (1 if i == 0 else 0 if i == 1 else i) if indexing == "xy" and len(ts) >= 2 else i
        view = tuple(shape[d] if d == axis else 1 for d in range(len(ts)))
        outs.append(_ops.broadcast_to(t.reshape(view), tuple(shape)))
    return tuple(outs)


def numel(input):
    """The number of elements."""
    return int(np.prod(input.shape)) if input.shape else 1


def repeat_elements(x, rep, axis=0):
    """Each element repeated rep times along axis."""
    d = _axis(x, axis)
    y = _ops.expand_dims(x, d + 1)
    shape = tuple(x.shape[:d + 1]) + (rep,) + tuple(x.shape[d + 1:])
    y = _ops.broadcast_to(y, shape)
    return y.reshape(tuple(x.shape[:d]) + (x.shape[d] * rep,) + tuple(x.shape[d + 1:]))


def repeat_interleave(input, repeats, axis=None):
    """Each element repeated `repeats` (an int) times along axis (the flattened input when None)."""
    if not isinstance(repeats, int) or isinstance(repeats, bool):
        raise TypeError("repeat_interleave: repeats must be an int (per-element repeats give a "
                        "data-dependent shape)")
    if axis is None:
        return repeat_elements(input.reshape((-1,)), repeats, 0)
    return repeat_elements(input, repeats, axis)


def scatter(input, axis, index, src):
    """input with src written at index along axis (tensor_scatter_elements)."""
    return _ops.tensor_scatter_elements(input, index, src, axis)


def scatter_nd(indices, updates, shape):
    """A zero tensor of `shape` with updates added at indices (duplicates add up)."""
    return _ops.tensor_scatter_add(_ops.zeros(tuple(shape), updates.dtype), indices, updates)


def sequence_mask(lengths, maxlen=None):
    """mask[..., j] = j < lengths[...]; maxlen (the mask's length) defaults to max(lengths)."""
    if maxlen is None:
        maxlen = int(_ops.max(lengths).asnumpy())
    return _ops.less(_ops.arange(maxlen, dtype=lengths.dtype), _ops.expand_dims(lengths, -1))


def unstack(input_x, axis=0):
    """The slices along axis, as a tuple."""
    return _tc.unbind(input_x, axis)


def unsorted_segment_sum(input_x, segment_ids, num_segments):
    """out[s] = the sum of input_x's slices whose segment id is s (ids in [0, num_segments))."""
    tail = tuple(input_x.shape[segment_ids.ndim:])
    out = _ops.zeros((num_segments,) + tail, input_x.dtype)
    return _ops.tensor_scatter_add(out, _ops.expand_dims(segment_ids, -1), input_x)


def index_add(x, indices, y, axis, use_lock=True, check_index_bound=True):
    """x with y's slices added at `indices` (1-d) along axis; a Parameter x is updated in place
    (MindSpore's IndexAdd) and returned."""
    d = _axis(x, axis)
    moved = moveaxis(x, d, 0)
    summed = _ops.tensor_scatter_add(moved, _ops.expand_dims(indices, -1), moveaxis(y, d, 0))
    out = moveaxis(summed, 0, d)
    return _P.assign(x, out) if isinstance(x, _Parameter) else out


def tensor_scatter_sub(input_x, indices, updates):
    """input_x with updates subtracted at indices (duplicates subtract up)."""
    return _ops.tensor_scatter_add(input_x, indices, -updates)


def scatter_update(input_x, indices, updates):
    """input_x[indices[...]] = updates (along the first axis), assigned to the Parameter input_x."""
    idx = indices.reshape((-1, 1))
    upd = updates.reshape((-1,) + tuple(input_x.shape[1:]))
    return _P.assign(input_x, _P.tensor_scatter_update(input_x, idx, upd))


def slice_scatter(input, src, axis=0, start=None, end=None, step=1):
    """input with src written over input[start:end:step] along axis."""
    d = _axis(input, axis)
    n = input.shape[d]
    lo, hi, positions = _slice_bounds(n, start, end, step)
    if step == 1:
        parts = []
        if lo > 0:
            parts.append(_tc.narrow(input, d, 0, lo))
        parts.append(src)
        if hi < n:
            parts.append(_tc.narrow(input, d, hi, n - hi))
        return _ops.concat(parts, d)
    moved = moveaxis(input, d, 0)
    out = _P.tensor_scatter_update(moved, _ops.expand_dims(positions, -1), moveaxis(src, d, 0))
    return moveaxis(out, 0, d)


def select_scatter(input, src, axis, index):
    """input with src written over the slice `index` of axis (src lacks that axis)."""
    d = _axis(input, axis)
    i = index % input.shape[d]
    return slice_scatter(input, _ops.expand_dims(src, d), d, i, i + 1)


def view_as_real(input):
    """A complex tensor as real pairs: a last dimension of (real, imag)."""
    if input.dtype not in _COMPLEX:
        raise TypeError(f"view_as_real: expected a complex tensor, got {input.dtype}")
    return _ops.stack((_ops.real(input), _ops.imag(input)), -1)


def inplace_update(x, v, indices):
    """x with rows indices (along axis 0) replaced by v (a new tensor, as MindSpore's)."""
    idx = indices if hasattr(indices, "shape") else Tensor(np.asarray(indices, np.int32))
    return _P.tensor_scatter_update(x, _ops.expand_dims(idx, -1), v)


def inplace_add(x, v, indices):
    """x with v added to rows indices (a new tensor)."""
    idx = indices if hasattr(indices, "shape") else Tensor(np.asarray(indices, np.int32))
    return _ops.tensor_scatter_add(x, _ops.expand_dims(idx, -1), v)


def inplace_sub(x, v, indices):
    """x with v subtracted from rows indices (a new tensor)."""
    return inplace_add(x, -v, indices)


def is_nonzero(input):
    """Whether the one element of input is nonzero."""
    if numel(input) != 1:
        raise ValueError(f"is_nonzero: expected one element, got shape {tuple(input.shape)}")
    return bool(input.asnumpy().reshape(()) != 0)


def scalar_cast(input_x, input_y):
    """A Python scalar cast to a mycel dtype's Python type."""
    name = input_y.name
    if name == "bool":
        return bool(input_x)
    return int(input_x) if name.startswith(("int", "uint")) else float(input_x)


def scalar_to_tensor(input_x, dtype=float32):
    """A 0-d Tensor of a Python scalar."""
    return Tensor(np.asarray(input_x, np.dtype(dtype.name)))


def tuple_to_array(input_x):
    """A 1-d Tensor of a tuple of numbers (int64 for ints, float32 for floats)."""
    a = np.asarray(input_x)
    return Tensor(a.astype(np.int64 if a.dtype.kind in "iu" else np.float32))


def eps(x):
    """A tensor like x filled with its dtype's smallest positive (subnormal) value."""
    return _P.full_like(x, float(np.finfo(np.dtype(x.dtype.name)).smallest_subnormal))


def logspace(start, end, steps, base=10, *, dtype=float32):
    """base ** linspace(start, end, steps)."""
    exps = np.linspace(float(start), float(end), int(steps), dtype=np.float64)
    return Tensor((float(base) ** exps).astype(np.dtype(dtype.name)))


def _range(start, end, step):
    """[start, end) by step (MindSpore's ops.range; arange's dtype rules)."""
    return _ops.arange(start, end, step)


def _window(who, window_length, periodic, dtype, make):
    if isinstance(window_length, bool) or not isinstance(window_length, int) or window_length < 0:
        raise ValueError(f"{who}: window_length must be an int >= 0, got {window_length!r}")
    if window_length <= 1:
        return Tensor(np.ones(window_length, np.dtype(dtype.name)))
    n = window_length + 1 if periodic else window_length
    w = make(n)[:window_length]
    return Tensor(np.asarray(w, np.float64).astype(np.dtype(dtype.name)))


def bartlett_window(window_length, periodic=True, *, dtype=float32):
    """The triangular window (periodic: the first window_length of window_length + 1)."""
    return _window("bartlett_window", window_length, periodic, dtype, np.bartlett)


def blackman_window(window_length, periodic=True, *, dtype=float32):
    """The Blackman window."""
    return _window("blackman_window", window_length, periodic, dtype, np.blackman)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=float32):
    """alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype,
                   lambda n: alpha - beta * np.cos(2 * np.pi * np.arange(n) / (n - 1)))


def hann_window(window_length, periodic=True, *, dtype=float32):
    """The Hann window."""
    return _window("hann_window", window_length, periodic, dtype, np.hanning)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=float32):
    """The Kaiser window of shape parameter beta."""
    return _window("kaiser_window", window_length, periodic, dtype, lambda n: np.kaiser(n, beta))


# ---- activations ---------------------------------------------------------------------------------
def celu(x, alpha=1.0):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0")
    return _ops.relu(x) + _ops.minimum(_ops.expm1(x / alpha) * alpha, _ops.zeros_like(x))


def selu(input_x):
    """scale * elu(x, alpha) with the self-normalizing constants."""
    return _ops.elu(input_x, alpha=1.6732632423543772) * 1.0507009873554805


def hardsigmoid(input):
    """relu6(x + 3) / 6."""
    return _ops.relu6(input + 3.0) / 6.0


def hardswish(x):
    """x * relu6(x + 3) / 6."""
    return x * _ops.relu6(x + 3.0) / 6.0


def hardtanh(input, min_val=-1.0, max_val=1.0):
    """input clamped to [min_val, max_val]."""
    return _ops.clip_by_value(input, min_val, max_val)


def mish(x):
    """x * tanh(softplus(x))."""
    return x * _ops.tanh(_ops.softplus(x))


def logsigmoid(x):
    """log(sigmoid(x)) = -softplus(-x)."""
    return -_ops.softplus(-x)


def tanhshrink(input):
    """input - tanh(input)."""
    return input - _ops.tanh(input)


def softshrink(x, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, else 0."""
    return _ops.relu(x - lambd) - _ops.relu(-x - lambd)


def hardshrink(x, lambd=0.5):
    """x where |x| > lambd, else 0."""
    return _ops.select(_ops.greater(_ops.abs(x), lambd), x, _ops.zeros_like(x))


def threshold(input, thr, value):
    """input where input > thr, else value."""
    return _ops.select(_ops.greater(input, thr), input, _P.full_like(input, value))


def fast_gelu(x):
    """x * sigmoid(1.702 x) (MindSpore's FastGeLU)."""
    return x * _ops.sigmoid(x * 1.702)


def prelu(x, weight):
    """max(0, x) + weight * min(0, x), weight per channel (axis 1) or one value."""
    w = weight
    if weight.ndim == 1 and weight.shape[0] > 1 and x.ndim >= 2:
        w = weight.reshape((1, weight.shape[0]) + (1,) * (x.ndim - 2))
    return _ops.relu(x) - w * _ops.relu(-x)


def _channel_window_sum(sq, before, after):
    """The sum over channels c - before .. c + after of sq (N, C, ...), zeros beyond the edges."""
    c = sq.shape[1]
    padded = _ops.pad(sq, (0, 0, before, after) + (0, 0) * (sq.ndim - 2))
    total = _tc.narrow(padded, 1, 0, c)
    for k in range(1, before + after + 1):
        total = total + _tc.narrow(padded, 1, k, c)
    return total


def lrn(x, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, norm_region="ACROSS_CHANNELS"):
    """Local response normalization (TensorFlow's and MindSpore's form):
    x / (bias + alpha * sum of x^2 over channels c - r .. c + r) ** beta."""
    if norm_region != "ACROSS_CHANNELS":
        raise ValueError(f"lrn: norm_region must be 'ACROSS_CHANNELS', got {norm_region!r}")
    s = _channel_window_sum(x * x, depth_radius, depth_radius)
    return x / _ops.pow(bias + alpha * s, beta)


def local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0):
    """PyTorch's form: x / (k + alpha / size * sum of x^2 over `size` channels) ** beta."""
    s = _channel_window_sum(x * x, size // 2, (size - 1) // 2)
    return x / _ops.pow(k + alpha / size * s, beta)


# ---- losses ----------------------------------------------------------------------------------------
def _reduce(who, loss, reduction):
    if reduction == "mean":
        return _ops.mean(loss)
    if reduction == "sum":
        return _ops.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{who}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def l1_loss(input, target, reduction="mean"):
    """|input - target|, reduced."""
    return _reduce("l1_loss", _ops.abs(input - target), reduction)


def smooth_l1_loss(input, target, beta=1.0, reduction="none"):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target); MindSpore
    reduces with 'none' by default."""
    if beta <= 0:
        raise ValueError(f"smooth_l1_loss: beta must be > 0, got {beta!r}")
    d = _ops.abs(input - target)
    loss = _ops.select(_ops.less(d, beta), 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce("smooth_l1_loss", loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be > 0, got {delta!r}")
    d = _ops.abs(input - target)
    loss = _ops.select(_ops.less(d, delta), 0.5 * d * d, delta * (d - 0.5 * delta))
    return _reduce("huber_loss", loss, reduction)


def soft_margin_loss(input, target, reduction="mean"):
    """log(1 + exp(-target * input)), reduced."""
    return _reduce("soft_margin_loss", _ops.softplus(-target * input), reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin), reduced."""
    return _reduce("margin_ranking_loss", _ops.relu(-target * (input1 - input2) + margin), reduction)


def hinge_embedding_loss(inputs, targets, margin=1.0, reduction="mean"):
    """inputs where targets == 1, max(0, margin - inputs) where targets == -1; reduced."""
    loss = _ops.select(_ops.equal(targets, 1), inputs * _ops.ones_like(targets),
                       _ops.relu(margin - inputs) * _ops.ones_like(targets))
    return _reduce("hinge_embedding_loss", loss, reduction)


def kl_div(logits, labels, reduction="mean", log_target=False):
    """labels * (log(labels) - logits), logits being log-probabilities (0 where labels is 0);
    'batchmean' divides the sum by the batch size."""
    if log_target:
        loss = _ops.exp(labels) * (labels - logits)
    else:
        safe = _ops.select(_ops.greater(labels, 0), labels, _ops.ones_like(labels))
        loss = _ops.select(_ops.greater(labels, 0), labels * (_ops.log(safe) - logits), _ops.zeros_like(labels))
    if reduction == "batchmean":
        return _ops.sum(loss) / logits.shape[0]
    return _reduce("kl_div", loss, reduction)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    """<x1, x2> / max(|x1| |x2|, eps) along dim."""
    d = dim
    dot = _ops.sum(x1 * x2, (d,))
    n1 = _ops.sqrt(_ops.sum(x1 * x1, (d,)))
    n2 = _ops.sqrt(_ops.sum(x2 * x2, (d,)))
    return dot / _ops.maximum(n1 * n2, eps)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """1 - cos(input1, input2) where target == 1, max(0, cos - margin) where target == -1."""
    c = cosine_similarity(input1, input2, 1, 1e-12) if input1.ndim > 1 else cosine_similarity(input1, input2, 0, 1e-12)
    loss = _ops.select(_ops.equal(target, 1), 1.0 - c, _ops.relu(c - margin))
    return _reduce("cosine_embedding_loss", loss, reduction)


def dist(input, other, p=2):
    """The p-norm of input - other (all elements)."""
    d = _ops.abs(input - other).reshape((-1,))
    if p == 0:
        return _ops.sum(_ops.cast(_ops.not_equal(d, 0), d.dtype))
    if p == float("inf"):
        return _ops.max(d)
    return _ops.pow(_ops.sum(_ops.pow(d, float(p))), 1.0 / p)


def cdist(x1, x2, p=2.0):
    """The p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M): (..., P, R)."""
    diff = _ops.abs(_ops.expand_dims(x1, -2) - _ops.expand_dims(x2, -3))
    if p == float("inf"):
        return _ops.max(diff, (-1,))
    return _ops.pow(_ops.sum(_ops.pow(diff, float(p)), (-1,)), 1.0 / p)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False,
                        reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the p-norm distance along the last axis."""
    def d(a, b):
        return _ops.pow(_ops.sum(_ops.pow(_ops.abs(a - b) + eps, float(p)), (-1,)), 1.0 / p)
    dp, dn = d(anchor, positive), d(anchor, negative)
    if swap:
        dn = _ops.minimum(dn, d(positive, negative))
    return _reduce("triplet_margin_loss", _ops.relu(dp - dn + margin), reduction)


def gaussian_nll_loss(x, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(max(var, eps)) + (x - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) with full)."""
    v = _ops.maximum(var, eps)
    loss = 0.5 * (_ops.log(v) + (x - target) * (x - target) / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce("gaussian_nll_loss", loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, reduction="mean"):
    """-mean over classes of y log(sigmoid(x)) + (1 - y) log(sigmoid(-x)), per sample, reduced."""
    loss = -(target * logsigmoid(input) + (1.0 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce("multilabel_soft_margin_loss", _ops.mean(loss, (-1,)), reduction)


# ---- clipping and parameters ---------------------------------------------------------------------
def clip_by_norm(x, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """x (a tensor or a tuple of them) scaled so that its total norm is at most max_norm."""
    many = isinstance(x, (list, tuple))
    ts = tuple(x) if many else (x,)
    if norm_type == float("inf"):
        total = _ops.max(_ops.stack(tuple(_ops.max(_ops.abs(t)) for t in ts)))
    else:
        total = _ops.pow(sum(_ops.sum(_ops.pow(_ops.abs(t), float(norm_type))) for t in ts), 1.0 / norm_type)
    if error_if_nonfinite and not bool(_ops.isfinite(total).asnumpy()):
        raise RuntimeError(f"clip_by_norm: the total norm {float(total.asnumpy())} is not finite")
    scale = _ops.minimum(max_norm / (total + 1e-6), 1.0)
    out = tuple(t * _ops.cast(scale, t.dtype) for t in ts)
    return out if many else out[0]


def assign_add(variable, value):
    """variable += value (a Parameter), returned."""
    return _P.assign(variable, variable + value)


def assign_sub(variable, value):
    """variable -= value (a Parameter), returned."""
    return _P.assign(variable, variable - value)


# ops.range: defined as _range so that this module's own loops keep Python's range.
FUNCTIONS = {n: v for n, v in globals().items() if not n.startswith("_") and inspect.isfunction(v)
             and n != "constexpr"}
FUNCTIONS["range"] = _range


# ---- Tensor methods ------------------------------------------------------------------------------
# MindSpore's Tensor methods that are these functions with the tensor first.
_TENSOR_METHODS = (
    "cummax", "cummin", "index_add", "slice_scatter", "select_scatter", "erfc", "erfinv", "xdivy", "fmax", "heaviside", "nanmean", "ptp", "fliplr", "flipud", "reverse", "hardshrink",
    "addbmm", "addcdiv", "addcmul", "addmv", "addr", "baddbmm", "copysign", "count_nonzero", "cross",
    "deg2rad", "diag", "diagflat", "diagonal", "diff", "float_power", "fmod", "frac", "hypot",
    "index_fill", "index_select", "inner", "isneginf", "isposinf", "isreal", "is_complex",
    "is_floating_point", "kron", "logaddexp", "logaddexp2", "logit", "median", "moveaxis", "movedim",
    "msort", "nansum", "outer", "rad2deg", "repeat_interleave", "roll", "rot90", "sgn", "signbit",
    "sinc", "trace", "ger", "logdet", "remainder", "true_divide", "subtract",
    "multiply", "divide", "negative", "positive", "nan_to_num", "aminmax", "logcumsumexp", "histc",
    "unsorted_segment_sum")


def _permute(self, *axis):
    """x.permute(*dims) (or one tuple of them)."""
    dims = tuple(axis[0]) if len(axis) == 1 and isinstance(axis[0], (tuple, list)) else axis
    return _ops.transpose(self, dims)


def _expand(self, *size):
    """x broadcast to size (one tuple or the sizes; -1 keeps a dimension)."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    return _ops.broadcast_to(self, shape)


def _where(self, condition, y):
    """where(condition, self, y)."""
    return _ops.select(condition, self, y)


def _type(self, dtype=None):
    """The dtype's name when dtype is None (MindSpore's 'Float32'), else self cast to dtype."""
    return str(self.dtype) if dtype is None else _ops.cast(self, dtype)


_OTHER_METHODS = {
    "bmm": lambda self, mat2: _P.bmm(self, mat2),
    "dot": lambda self, other: _ops.sum(self * other),
    "det": lambda self: _P.det(self),
    "inverse": lambda self: _P.inverse(self),
    "slogdet": lambda self: _P.slogdet(self),
    "svd": lambda self, full_matrices=False, compute_uv=True: _P.svd(self, full_matrices, compute_uv),
    "cholesky": lambda self, upper=False: _P.cholesky(self, upper),
    "expand": _expand,
    "new_ones": lambda self, size, dtype=None: _P.ones(tuple(size), dtype or self.dtype),
    "new_zeros": lambda self, size, dtype=None: _P.zeros(tuple(size), dtype or self.dtype),
    "ndimension": lambda self: self.ndim,
    "masked_select": lambda self, mask: _P.masked_select(self, mask),
    "nonzero": lambda self, as_tuple=False: _P.nonzero(self, as_tuple=as_tuple),
    "reshape_as": lambda self, other: self.reshape(other.shape),
    "view_as": lambda self, other: self.reshape(other.shape),
    "type_as": lambda self, other: _ops.cast(self, other.dtype),
    "to": lambda self, dtype: _ops.cast(self, dtype),
    "type": _type,
    "where": _where,
    "take": lambda self, indices: _ops.gather(self.reshape((-1,)), indices, 0),
    "scatter": lambda self, axis, index, src: scatter(self, axis, index, src),
    "inv": lambda self: _ops.reciprocal(self),
    "is_signed": lambda self: self.dtype not in (bool_,) and not str(self.dtype).lower().startswith("u"),
    "unique_consecutive": lambda self, return_idx=False, return_counts=False, axis=None:
        _P.unique_consecutive(self, return_idx, return_counts, axis),
    "gather_nd": lambda self, indices: _P.gather_nd(self, indices),
    "argwhere": lambda self: _P.argwhere(self),
}


def _install_tensor_methods():
    for name in _TENSOR_METHODS:
        fn = globals().get(name)
        if fn is not None and not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    if not hasattr(Tensor, "permute"):
        Tensor.permute = _permute
    for name, fn in _OTHER_METHODS.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)


_install_tensor_methods()
