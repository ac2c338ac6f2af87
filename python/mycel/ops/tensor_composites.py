"""MindSpore Tensor methods made of registry ops (x.acos(), x.hsplit(2), x.tensor_split(...)):
plain Python over ops, installed on Tensor for eager calls and looked up by the frontend for
graph mode (src/mycel/frontend/calls.cc, tensor_method), so both modes run the same code and
gradients come from the ops used."""
from mycel import _mycel
from mycel.common.dtype import bool_, float16, float32, float64, int16, int32, int64, uint8
from mycel.ops import norms as _norms

_ops = _mycel.ops


def acos(x):
    """arccos, as atan2(sqrt(1 - x^2), x) (NaN outside [-1, 1])."""
    return _ops.atan2(_ops.sqrt(1.0 - x * x), x)


def asin(x):
    """arcsin, as atan2(x, sqrt(1 - x^2))."""
    return _ops.atan2(x, _ops.sqrt(1.0 - x * x))


def atan(x):
    """arctan, as atan2(x, 1)."""
    return _ops.atan2(x, _ops.ones_like(x))


def sinh(x):
    """(e^x - e^-x) / 2."""
    return (_ops.exp(x) - _ops.exp(-x)) * 0.5


def cosh(x):
    """(e^x + e^-x) / 2."""
    return (_ops.exp(x) + _ops.exp(-x)) * 0.5


def asinh(x):
    """log(x + sqrt(x^2 + 1)), odd-symmetric so large negative x stays accurate."""
    a = _ops.abs(x)
    return _ops.sign(x) * _ops.log(a + _ops.sqrt(a * a + 1.0))


def acosh(x):
    """log(x + sqrt(x^2 - 1)) (NaN below 1)."""
    return _ops.log(x + _ops.sqrt(x * x - 1.0))


def atanh(x):
    """log((1 + x) / (1 - x)) / 2."""
    return _ops.log((1.0 + x) / (1.0 - x)) * 0.5


def log2(x):
    """Base-2 logarithm."""
    return _ops.log(x) * 1.4426950408889634


def log10(x):
    """Base-10 logarithm."""
    return _ops.log(x) * 0.4342944819032518


def trunc(x):
    """Rounds toward zero."""
    return _ops.sign(x) * _ops.floor(_ops.abs(x))


def div(x, other, rounding_mode=None):
    """x / other; rounding_mode 'floor' rounds the quotient down, 'trunc' toward zero."""
    if rounding_mode is None:
        return _ops.div(x, other)
    if rounding_mode == "floor":
        return _ops.floor_div(x, other)
    if rounding_mode == "trunc":
        return trunc(_ops.div(x, other))
    raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")


def xlogy(x, y):
    """x * log(y), 0 where x is 0."""
    return _ops.select(_ops.equal(x, 0.0), _ops.zeros_like(x), x * _ops.log(y))


def lerp(x, end, weight):
    """x + weight * (end - x)."""
    return x + weight * (end - x)


def addmm(x, mat1, mat2, beta=1, alpha=1):
    """beta * x + alpha * (mat1 @ mat2)."""
    return x * beta + _ops.matmul(mat1, mat2) * alpha


def expand_as(x, other):
    """x broadcast to other's shape."""
    return _ops.broadcast_to(x, other.shape)


def masked_fill(x, mask, value):
    """x with value where mask is True."""
    return _ops.select(mask, _ops.zeros_like(x) + value, x)


def ravel(x):
    """x flattened to 1-d."""
    return _ops.reshape(x, (-1,))


def t(x):
    """The transpose of a 2-d (or 1-d, unchanged) tensor."""
    if x.ndim < 2:
        return x
    return _ops.transpose(x, (1, 0))


def swapaxes(x, axis0, axis1):
    """x with two axes exchanged."""
    n = x.ndim
    if not (-n <= axis0 < n and -n <= axis1 < n):
        raise ValueError(f"swapaxes: axes ({axis0}, {axis1}) out of range for a {n}-d tensor")
    a, b = axis0 % n, axis1 % n  # (a comprehension, not item assignment: graph mode parses this)
    return _ops.transpose(x, tuple([b if i == a else a if i == b else i for i in range(n)]))


def flip(x, dims):
    """x reversed along the given dims (ints or a tuple)."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    out = x
    for d in dims:
        n = x.shape[d]
        out = _ops.gather(out, _ops.arange(n - 1, -1, -1, dtype=int64), d)
    return out


def nelement(x):
    """Number of elements."""
    return x.size


def _split_sizes(n, indices_or_sections, who):
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise ValueError(f"{who}: the number of sections must be positive, got {k}")
        # numpy.array_split: the first n % k pieces one longer
        return tuple(n // k + (1 if i < n % k else 0) for i in range(k))
    cuts = [0]
    for i in indices_or_sections:
        cuts.append(min(max(i if i >= 0 else i + n, 0), n))
    cuts.append(n)
    return tuple(max(b - a, 0) for a, b in zip(cuts[:-1], cuts[1:]))


def _pieces(x, sizes, axis):
    out = ()
    start = 0
    for s in sizes:
        out = out + (_ops.slice(x, tuple(start if d == axis % x.ndim else 0 for d in range(x.ndim)),
                                tuple(s if d == axis % x.ndim else x.shape[d] for d in range(x.ndim))),)
        start = start + s
    return out


def tensor_split(x, indices_or_sections, axis=0):
    """Pieces along axis: k nearly equal ones (an int, the first ones longer) or cut at indices."""
    return _pieces(x, _split_sizes(x.shape[axis], indices_or_sections, "tensor_split"), axis)


def hsplit(x, indices_or_sections):
    """tensor_split along axis 1 (axis 0 for 1-d tensors)."""
    return tensor_split(x, indices_or_sections, 1 if x.ndim > 1 else 0)


def vsplit(x, indices_or_sections):
    """tensor_split along axis 0 (needs at least 2 dims)."""
    if x.ndim < 2:
        raise ValueError(f"vsplit: expects a tensor of at least 2 dims, got shape {x.shape}")
    return tensor_split(x, indices_or_sections, 0)


def dsplit(x, indices_or_sections):
    """tensor_split along axis 2 (needs at least 3 dims)."""
    if x.ndim < 3:
        raise ValueError(f"dsplit: expects a tensor of at least 3 dims, got shape {x.shape}")
    return tensor_split(x, indices_or_sections, 2)


def _chunk_sizes(n, k):
    """(k, k, ..., the rest) adding up to n."""
    if k <= 0:
        raise ValueError(f"split: split_size must be positive, got {k}")
    return (k,) * (n // k) + ((n % k,) if n % k else ())


def split(x, split_size_or_sections, axis=0):
    """Pieces of split_size_or_sections each (an int; the last smaller) or of the given sizes."""
    n = x.shape[axis]
    if isinstance(split_size_or_sections, int):
        k = split_size_or_sections
        sizes = _chunk_sizes(n, k)
    else:
        sizes = tuple(split_size_or_sections)
        if sum(sizes) != n:
            raise ValueError(f"split: sizes {sizes} must add up to dimension {axis} of size {n}")
    return _pieces(x, sizes, axis)


def chunk(x, chunks, axis=0):
    """Pieces of ceil(n / chunks) along axis (fewer when n does not need them all)."""
    n = x.shape[axis]
    size = (n + chunks - 1) // chunks
    return split(x, size, axis)


def unbind(x, dim=0):
    """The slices along dim, each without that dim."""
    return tuple(_ops.squeeze(p, (dim,)) for p in split(x, 1, dim))


def repeat(x, repeats, axis=None):
    """Each element repeated `repeats` times along axis (flattened when None), as numpy.repeat."""
    if axis is None:
        x = _ops.reshape(x, (-1,))
        axis = 0
    axis = axis % x.ndim
    e = _ops.expand_dims(x, axis + 1)
    reps = tuple(repeats if d == axis + 1 else 1 for d in range(e.ndim))
    shape = tuple(x.shape[d] * repeats if d == axis else x.shape[d] for d in range(x.ndim))
    return _ops.reshape(_ops.tile(e, reps), shape)


def isclose(x, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|x - other| <= atol + rtol * |other|."""
    close = _ops.logical_or(_ops.less_equal(_ops.abs(x - other), atol + rtol * _ops.abs(other)),
                            _ops.equal(x, other))
    if equal_nan:
        close = _ops.logical_or(close, _ops.logical_and(_ops.isnan(x), _ops.isnan(other)))
    return close


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN to `nan`, +-inf to posinf/neginf (the dtype's largest finite values by default)."""
    big = 3.4028234663852886e38 if x.dtype == float32 else (65504.0 if x.dtype == float16 else 1.7976931348623157e308)
    hi = big if posinf is None else posinf
    lo = -big if neginf is None else neginf
    out = _ops.select(_ops.isnan(x), _ops.zeros_like(x) + nan, x)
    out = _ops.select(_ops.logical_and(_ops.isinf(out), _ops.greater(out, 0.0)), _ops.zeros_like(x) + hi, out)
    return _ops.select(_ops.logical_and(_ops.isinf(out), _ops.less(out, 0.0)), _ops.zeros_like(x) + lo, out)


def norm(x, ord=None, dim=None, keepdim=False):  # noqa: A002 (MindSpore's name)
    """x.norm(...): ops.norm (a vector or matrix norm, as numpy.linalg.norm picks)."""
    return _norms.norm(x, ord, dim, keepdim)


def narrow(x, axis, start, length):
    """The `length` elements from `start` along axis."""
    return _ops.slice(x, tuple(start if d == axis % x.ndim else 0 for d in range(x.ndim)),
                      tuple(length if d == axis % x.ndim else x.shape[d] for d in range(x.ndim)))


def float_(x):
    """Cast to float32."""
    return _ops.cast(x, float32)


def double(x):
    """Cast to float64."""
    return _ops.cast(x, float64)


def half(x):
    """Cast to float16."""
    return _ops.cast(x, float16)


def int_(x):
    """Cast to int32."""
    return _ops.cast(x, int32)


def long(x):
    """Cast to int64."""
    return _ops.cast(x, int64)


def short(x):
    """Cast to int16."""
    return _ops.cast(x, int16)


def byte(x):
    """Cast to uint8."""
    return _ops.cast(x, uint8)


def bool_method(x):
    """Cast to bool."""
    return _ops.cast(x, bool_)


def gather_elements(x, dim, index):
    """x.gather_elements(dim, index), MindSpore's order (the registry op takes index first)."""
    return _ops.gather_elements(x, index, dim=dim)


# method name -> function (first argument the tensor)
METHODS = {
    "gather_elements": gather_elements, "div": div, "divide": div,
    "acos": acos, "arccos": acos, "asin": asin, "arcsin": asin, "atan": atan, "arctan": atan,
    "sinh": sinh, "cosh": cosh, "asinh": asinh, "arcsinh": asinh, "acosh": acosh,
    "arccosh": acosh, "atanh": atanh, "arctanh": atanh, "log2": log2, "log10": log10,
    "trunc": trunc, "fix": trunc, "xlogy": xlogy, "lerp": lerp, "addmm": addmm,
    "expand_as": expand_as, "masked_fill": masked_fill, "ravel": ravel, "t": t,
    "swapaxes": swapaxes, "swapdims": swapaxes, "flip": flip, "nelement": nelement,
    "tensor_split": tensor_split, "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit,
    "chunk": chunk, "unbind": unbind, "repeat": repeat, "isclose": isclose,
    "nan_to_num": nan_to_num, "norm": norm, "narrow": narrow, "float": float_, "double": double,
    "half": half, "int": int_, "long": long, "short": short, "byte": byte, "bool": bool_method,
}


# Eager only: in graph mode `.split` on a compile-time str must stay Python's (the frontend
# decides before it knows the receiver), so a graph splits tensors with ops.split.
EAGER_METHODS = {"split": split}


def _install():
    for name, fn in list(METHODS.items()) + list(EAGER_METHODS.items()):
        if not hasattr(_mycel.Tensor, name):
            setattr(_mycel.Tensor, name, fn)


_install()
