"""Table rows for unary, binary and ternary elementwise ops.

Each op gets: every claimed dtype on a small shape, 0-d, empty, a large case above the parallel
threshold, and non-contiguous numpy sources; binary and ternary ops also broadcast (both sides).
References are numpy, computed in float64 where numpy lacks the function (erf, gelu).
"""
import math

import numpy as np

from op_cases import OpCase, make_input

INT = ("int8", "uint8", "int16", "int32", "int64")
SIGNED_INT = ("int8", "int16", "int32", "int64")
FLOAT = ("float16", "float32", "float64")
ALL = FLOAT + INT + ("bool",)
NUMERIC = FLOAT + INT
SIGNED = FLOAT + SIGNED_INT


def quiet(fn):
    """A numpy reference with floating-point warnings silenced (log(0), x // 0, ...)."""
    def ref(*args, **kw):
        with np.errstate(all="ignore"):
            return fn(*args, **kw)
    return ref


def in_f64(fn):
    """Reference computed in float64, returned in the input's dtype (float-only functions)."""
    def ref(x, **kw):
        with np.errstate(all="ignore"):
            return np.asarray(fn(x.astype(np.float64), **kw)).astype(x.dtype)
    return ref


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def noncontig(shapes, domain="normal", transpose=False):
    """Inputs that are strided numpy views: x[:, ::2] (or x.T) of a larger array."""
    def gen(rng, dtype):
        out = []
        for s in shapes:
            if transpose:
                out.append(make_input(rng, s[::-1], dtype, domain).T)
            else:
                out.append(make_input(rng, s[:-1] + (2 * s[-1],), dtype, domain)[..., ::2])
        return out
    return gen


def with_specials(shapes, dtype_specials=(np.nan, np.inf, -np.inf, 0.0, -0.0)):
    """Random floats with NaN/inf/±0 sprinkled in (ints and bools unchanged)."""
    def gen(rng, dtype):
        out = []
        for s in shapes:
            a = make_input(rng, s, dtype)
            if a.dtype.kind == "f" and a.size:
                flat = a.reshape(-1)
                k = min(flat.size, 2 * len(dtype_specials))
                idx = rng.choice(flat.size, size=k, replace=False)
                for k, i in enumerate(idx):
                    flat[i] = dtype_specials[k % len(dtype_specials)]
            out.append(a)
        return out
    return gen


def small_ints(shapes, lo=-3, hi=4):
    """Small integers (with ties and zeros) in the requested dtype: for ==, <, logical ops."""
    def gen(rng, dtype):
        lo_ = 0 if np.dtype(dtype).kind in "ub" else lo
        hi_ = 2 if np.dtype(dtype) == np.bool_ else hi
        return [rng.integers(lo_, hi_, size=s).astype(dtype) for s in shapes]
    return gen


def scaled(shapes, scale, domain="normal"):
    def gen(rng, dtype):
        return [(make_input(rng, s, "float64", domain) * scale).astype(dtype) for s in shapes]
    return gen


# ---- unary ----
# (op, reference, dtypes, domain)
UNARY = [
    ("neg", np.negative, SIGNED, "normal"),
    ("abs", np.abs, ALL, "normal"),
    ("sign", np.sign, NUMERIC, "normal"),
    ("square", np.square, NUMERIC, "normal"),
    ("reciprocal", np.reciprocal, FLOAT, "nonzero"),
    ("sqrt", quiet(np.sqrt), ALL, "positive"),
    ("rsqrt", quiet(lambda x: 1 / np.sqrt(x)), ALL, "positive"),
    ("exp", quiet(np.exp), ALL, "normal"),
    ("expm1", np.expm1, ALL, "normal"),
    ("log", quiet(np.log), ALL, "positive"),
    ("log1p", quiet(np.log1p), ALL, "positive"),
    ("sin", np.sin, ALL, "normal"),
    ("cos", np.cos, ALL, "normal"),
    ("tan", np.tan, ALL, "unit"),
    ("tanh", np.tanh, FLOAT, "normal"),
    ("erf", in_f64(_erf), FLOAT, "normal"),
    ("sigmoid", in_f64(lambda x: 1 / (1 + np.exp(-x))), FLOAT, "normal"),
    ("silu", in_f64(lambda x: x / (1 + np.exp(-x))), FLOAT, "normal"),
    ("softsign", lambda x: x / (1 + np.abs(x)), FLOAT, "normal"),
    ("relu", lambda x: np.maximum(x, 0).astype(x.dtype), SIGNED, "normal"),
    ("relu6", lambda x: np.minimum(np.maximum(x, 0), 6).astype(x.dtype), FLOAT, "normal"),
    ("leaky_relu", lambda x: np.where(x > 0, x, x * x.dtype.type(0.2)), FLOAT, "normal"),
    ("elu", in_f64(lambda x: np.where(x > 0, x, np.expm1(x))), FLOAT, "normal"),
    ("gelu", in_f64(_gelu), FLOAT, "normal"),
    ("softplus", in_f64(_softplus), FLOAT, "normal"),
    ("floor", np.floor, NUMERIC, "normal"),
    ("ceil", np.ceil, NUMERIC, "normal"),
    ("round", np.round, NUMERIC, "normal"),
    ("logical_not", np.logical_not, ALL, "normal"),
    ("isnan", np.isnan, ALL, "normal"),
    ("isinf", np.isinf, ALL, "normal"),
    ("isfinite", np.isfinite, ALL, "normal"),
]

CASES = []
for op, ref, dtypes, domain in UNARY:
    CASES += [
        OpCase(op, ref, [(3, 4)], dtypes=dtypes, domain=domain),
        OpCase(op, ref, [()], domain=domain, id="0d"),
        OpCase(op, ref, [(0, 3)], domain=domain, id="empty"),
        OpCase(op, ref, [(300, 301)], dtypes=("float32",), domain=domain, id="large"),
        OpCase(op, ref, noncontig([(5, 7)], domain), domain=domain, id="strided"),
        OpCase(op, ref, noncontig([(6, 5)], domain, transpose=True), dtypes=("float32",),
               domain=domain, id="transposed"),
    ]

# invert is bitwise (integers and bool only): numpy's ~ is the reference.
CASES += [OpCase("invert", np.invert, [(3, 4)], dtypes=INT + ("bool",), domain="int"),
          OpCase("invert", np.invert, [()], dtypes=("int32", "bool"), domain="int", id="0d"),
          OpCase("invert", np.invert, [(0, 3)], dtypes=("int64",), domain="int", id="empty"),
          OpCase("invert", np.invert, noncontig([(5, 7)], "int"), dtypes=("int16",), domain="int", id="strided")]

_int_large = [op for op, _, dtypes, _ in UNARY if "int32" in dtypes]
CASES += [OpCase(op, ref, [(40000,)], dtypes=("int32",), domain=domain, id="large_int")
          for op, ref, dtypes, domain in UNARY if op in _int_large]

CASES += [
    # NaN, inf and signed zeros.
    *[OpCase(op, ref, with_specials([(4, 5)]), dtypes=("float32", "float64"), id="specials")
      for op, ref in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                      ("relu", lambda x: np.maximum(x, 0).astype(x.dtype)),
                      ("abs", np.abs), ("sign", np.sign), ("neg", np.negative),
                      ("exp", np.exp), ("floor", np.floor), ("round", np.round),
                      ("logical_not", np.logical_not)]],
    # Wide ranges: exp overflow/underflow (incl. subnormal results), activations' saturation.
    OpCase("exp", quiet(np.exp), scaled([(2000,)], 60.0), dtypes=("float32", "float64"), id="wide"),
    OpCase("exp", quiet(np.exp), lambda rng, dt: [np.linspace(-110, 95, 4001).astype(dt)],
           dtypes=("float32",), rtol=1e-6, atol=0, id="range"),
    OpCase("sigmoid", in_f64(lambda x: 1 / (1 + np.exp(-x))), scaled([(2000,)], 40.0),
           id="wide"),
    OpCase("tanh", np.tanh, scaled([(2000,)], 6.0), id="wide"),
    OpCase("tanh", np.tanh, lambda rng, dt: [np.geomspace(1e-8, 20, 4000).astype(dt)],
           dtypes=("float32",), rtol=1e-6, atol=0, id="range"),
    OpCase("relu6", lambda x: np.minimum(np.maximum(x, 0), 6).astype(x.dtype),
           scaled([(4, 50)], 5.0), id="wide"),
    OpCase("round", np.round, lambda rng, dt: [np.arange(-6, 6.5, 0.5).astype(dt)],
           dtypes=FLOAT, id="ties"),
    OpCase("abs", np.abs, lambda rng, dt: [np.array([-128, -1, 0, 127], dtype=dt)],
           dtypes=("int8",), id="int_min"),
    OpCase("leaky_relu", lambda x, alpha: np.where(x > 0, x, x * x.dtype.type(alpha)), [(3, 4)],
           attrs={"alpha": 0.01}, id="alpha"),
    OpCase("elu", in_f64(lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(x))), [(3, 4)],
           attrs={"alpha": 0.5}, id="alpha"),
    OpCase("gelu", in_f64(_gelu), [(3, 4)], dtypes=FLOAT, attrs={"approximate": "tanh"},
           id="tanh"),
    OpCase("gelu", in_f64(_gelu), [(300, 301)], dtypes=("float32",),
           attrs={"approximate": "tanh"}, id="tanh_large"),
    OpCase("softplus", in_f64(_softplus), scaled([(4, 50)], 3.0),
           attrs={"beta": 2.0, "threshold": 1.0}, id="beta_threshold"),
    OpCase("softplus", in_f64(_softplus), scaled([(4, 50)], 40.0), id="wide"),
]

# ---- binary ----
# (op, reference, dtypes, domain of both inputs)
BINARY = [
    ("add", np.add, ALL, "normal"),
    ("sub", np.subtract, NUMERIC, "normal"),
    ("mul", np.multiply, ALL, "normal"),
    ("div", quiet(np.true_divide), ALL, "nonzero"),
    ("floor_div", quiet(np.floor_divide), NUMERIC, "nonzero"),
    ("mod", quiet(np.remainder), NUMERIC, "nonzero"),
    ("pow", np.power, FLOAT, "positive"),
    ("maximum", np.maximum, ALL, "normal"),
    ("minimum", np.minimum, ALL, "normal"),
    ("atan2", np.arctan2, ALL, "normal"),
    ("squared_difference", quiet(lambda x, y: np.square(np.subtract(x, y))), NUMERIC, "normal"),
    ("equal", np.equal, ALL, "int"),
    ("not_equal", np.not_equal, ALL, "int"),
    ("less", np.less, ALL, "int"),
    ("less_equal", np.less_equal, ALL, "int"),
    ("greater", np.greater, ALL, "int"),
    ("greater_equal", np.greater_equal, ALL, "int"),
    ("logical_and", np.logical_and, ALL, "int"),
    ("logical_or", np.logical_or, ALL, "int"),
    ("logical_xor", np.logical_xor, ALL, "int"),
]

for op, ref, dtypes, domain in BINARY:
    # "int" domain: small integers with ties and zeros, so that ==, <= and logical ops see both.
    def shp(shapes, domain=domain):
        return small_ints(shapes) if domain == "int" else shapes
    CASES += [
        OpCase(op, ref, shp([(3, 4), (3, 4)]), dtypes=dtypes, domain=domain),
        OpCase(op, ref, shp([(3, 1), (1, 4)]), dtypes=dtypes, domain=domain, id="bcast_both"),
        OpCase(op, ref, shp([(2, 1, 4), (3, 1)]), domain=domain, id="bcast"),
        OpCase(op, ref, shp([(), (3,)]), domain=domain, id="0d"),
        OpCase(op, ref, shp([(), ()]), domain=domain, id="0d_0d"),
        OpCase(op, ref, shp([(4,), ()]), domain=domain, id="scalar_rhs"),
        OpCase(op, ref, shp([(0, 3), (1, 3)]), domain=domain, id="empty"),
        OpCase(op, ref, shp([(300, 301), (300, 301)]), dtypes=("float32",), domain=domain,
               id="large"),
        OpCase(op, ref, shp([(257, 1, 130), (1, 129, 1)]), dtypes=("float32",), domain=domain,
               id="large_bcast"),
        OpCase(op, ref, noncontig([(5, 7), (5, 7)], "positive" if domain == "int" else domain),
               domain=domain, id="strided"),
        OpCase(op, ref, noncontig([(4, 6), (4, 6)], "positive" if domain == "int" else domain,
                                  transpose=True),
               dtypes=("float32",), domain=domain, id="transposed"),
    ]


def _int_pairs(lo_y, hi_y, zero_y=False):
    """x in [-20, 20], y in [lo_y, hi_y) (zeros kept when zero_y), unsigned clipped at 0."""
    def gen(rng, dtype):
        unsigned = np.dtype(dtype).kind == "u"
        x = rng.integers(0 if unsigned else -20, 21, size=(6, 7)).astype(dtype)
        y = rng.integers(max(lo_y, 0) if unsigned else lo_y, hi_y, size=(6, 7)).astype(dtype)
        if not zero_y:
            y[y == 0] = 1
        return [x, y]
    return gen


CASES += [
    # Integer division rounding toward -inf, signs of the remainder, and x // 0 == x % 0 == 0.
    OpCase("floor_div", quiet(np.floor_divide), _int_pairs(-7, 8), dtypes=INT, id="int_signs"),
    OpCase("mod", quiet(np.remainder), _int_pairs(-7, 8), dtypes=INT, id="int_signs"),
    OpCase("floor_div", quiet(np.floor_divide), _int_pairs(-2, 3, zero_y=True), dtypes=INT,
           id="int_zero"),
    OpCase("mod", quiet(np.remainder), _int_pairs(-2, 3, zero_y=True), dtypes=INT, id="int_zero"),
    OpCase("floor_div", quiet(np.floor_divide),
           lambda rng, dt: [np.array([np.iinfo(dt).min, 7, -7], dt), np.array([-1, -1, 0], dt)],
           dtypes=SIGNED_INT, id="int_min"),
    OpCase("mod", quiet(np.remainder),
           lambda rng, dt: [np.array([np.iinfo(dt).min, 7, -7], dt), np.array([-1, -1, 0], dt)],
           dtypes=SIGNED_INT, id="int_min"),
    OpCase("floor_div", quiet(np.floor_divide), with_specials([(5, 6), (5, 6)]),
           dtypes=("float32", "float64"), id="specials"),
    OpCase("mod", quiet(np.remainder), with_specials([(5, 6), (5, 6)]),
           dtypes=("float32", "float64"), id="specials"),
    OpCase("floor_div", quiet(np.floor_divide), scaled([(5, 6), (5, 6)], 10.0),
           dtypes=("float32", "float64"), id="mixed_signs"),
    OpCase("mod", quiet(np.remainder), scaled([(5, 6), (5, 6)], 10.0),
           dtypes=("float32", "float64"), id="mixed_signs"),
    # Integer powers (wrapping like numpy) and float powers with mixed signs.
    OpCase("pow", np.power, _int_pairs(0, 5, zero_y=True), dtypes=INT, id="int"),
    OpCase("pow", np.power,
           lambda rng, dt: [np.array([3, -3, 2, 1, -1, 0], dt),
                            np.array([40, 41, 63, 100, 7, 0], dt)],
           dtypes=("int32", "int64"), id="int_wrap"),
    OpCase("pow", quiet(np.power), [(3, 4), (3, 4)], dtypes=("float32", "float64"), id="neg_base"),
    OpCase("pow", np.power, [(40000,), ()], dtypes=("int32",), domain="positive", id="large_int"),
    # NaN propagates through maximum/minimum from either side.
    OpCase("maximum", np.maximum, with_specials([(4, 5), (4, 5)]), dtypes=("float32", "float64"),
           id="specials"),
    OpCase("minimum", np.minimum, with_specials([(4, 5), (4, 5)]), dtypes=("float32", "float64"),
           id="specials"),
    OpCase("maximum", np.maximum,
           lambda rng, dt: [np.array([np.nan, 1, np.nan, -np.inf], dt),
                            np.array([1, np.nan, np.nan, np.inf], dt)],
           dtypes=("float32", "float64"), id="nan"),
    OpCase("minimum", np.minimum,
           lambda rng, dt: [np.array([np.nan, 1, np.nan, -np.inf], dt),
                            np.array([1, np.nan, np.nan, np.inf], dt)],
           dtypes=("float32", "float64"), id="nan"),
    OpCase("equal", np.equal, with_specials([(4, 5), (4, 5)]), dtypes=("float32",), id="specials"),
    OpCase("less", np.less, with_specials([(4, 5), (4, 5)]), dtypes=("float32",), id="specials"),
    OpCase("atan2", np.arctan2, with_specials([(4, 5), (4, 5)]), dtypes=("float32",),
           id="specials"),
    OpCase("add", np.add, lambda rng, dt: [np.array([np.iinfo(dt).max, np.iinfo(dt).min], dt),
                                           np.array([1, -1]).astype(dt)],
           dtypes=INT, id="wrap"),
    OpCase("mul", np.multiply, lambda rng, dt: [np.array([np.iinfo(dt).max, 100], dt),
                                                np.array([3, 100], dt)],
           dtypes=INT, id="wrap"),
    OpCase("div", np.true_divide, [(40000,), (40000,)], dtypes=("int32",), domain="nonzero",
           id="large_int"),
    OpCase("floor_div", quiet(np.floor_divide), [(40000,), (1,)], dtypes=("int64",),
           domain="nonzero", id="large_int"),
    # Mixed input dtypes promote like numpy.
    OpCase("add", np.add,
           lambda rng, dt: [make_input(rng, (3, 4), "int8"), make_input(rng, (4,), dt)],
           dtypes=("float16", "int32", "uint8", "float64"), id="promote"),
    OpCase("div", np.true_divide,
           lambda rng, dt: [make_input(rng, (3, 4), "int16", "nonzero"),
                            make_input(rng, (3, 4), dt, "nonzero")],
           dtypes=("int8", "float32"), id="promote"),
    OpCase("less", np.less,
           lambda rng, dt: [make_input(rng, (3, 4), "uint8"), make_input(rng, (3, 4), dt)],
           dtypes=("int8", "float32"), id="promote"),
]

# ---- ternary ----


def _select(shapes, cond_shape):
    def gen(rng, dtype):
        return [rng.random(cond_shape) < 0.5] + [make_input(rng, s, dtype) for s in shapes]
    return gen


def _select_mixed(rng, dtype):
    return [rng.random((3, 4)) < 0.5, make_input(rng, (3, 4), "int8"), make_input(rng, (4,), dtype)]


def _select_strided(rng, dtype):
    c = (rng.random((5, 14)) < 0.5)[:, ::2]
    return [c, make_input(rng, (7, 5), dtype).T, make_input(rng, (5, 14), dtype)[:, ::2]]


def _clip_ref(x, lo, hi):
    return np.minimum(np.maximum(x, lo), hi)


def _clip(x_shape, lo_shape, hi_shape, ordered=True):
    def gen(rng, dtype):
        x = make_input(rng, x_shape, dtype)
        lo = make_input(rng, lo_shape, dtype)
        hi = make_input(rng, hi_shape, dtype)
        if ordered and np.dtype(dtype) != np.bool_:
            lo, hi = np.asarray(np.minimum(lo, hi)), np.asarray(np.maximum(lo, hi))
        return [x, lo, hi]
    return gen


CASES += [
    OpCase("select", np.where, _select([(3, 4), (3, 4)], (3, 4)), dtypes=ALL),
    OpCase("select", np.where, _select([(3, 1), (1, 4)], (3, 4)), id="bcast_xy"),
    OpCase("select", np.where, _select([(2, 3, 4), ()], (3, 1)), dtypes=ALL, id="bcast_all"),
    OpCase("select", np.where, _select([(), ()], ()), id="0d"),
    OpCase("select", np.where, _select([(0, 4), (4,)], (1, 4)), id="empty"),
    OpCase("select", np.where, _select([(300, 301), (300, 301)], (300, 301)),
           dtypes=("float32",), id="large"),
    OpCase("select", np.where, _select([(1, 301), (300, 1)], (300, 301)), dtypes=("float32",),
           id="large_bcast"),
    OpCase("select", np.where, _select([(300, 301), ()], (300, 301)), dtypes=("float32",),
           id="large_scalar"),
    OpCase("select", np.where, _select_mixed, dtypes=("float32", "int32", "uint8", "bool"),
           id="promote"),
    OpCase("select", np.where, _select_strided, id="strided"),
    OpCase("clip_by_value", _clip_ref, _clip((3, 4), (), ()), dtypes=ALL),
    OpCase("clip_by_value", _clip_ref, _clip((3, 4), (3, 1), (1, 4)), dtypes=NUMERIC,
           id="bcast"),
    OpCase("clip_by_value", _clip_ref, _clip((3, 4), (3, 4), (3, 4), ordered=False),
           id="min_above_max"),
    OpCase("clip_by_value", _clip_ref, _clip((), (), ()), id="0d"),
    OpCase("clip_by_value", _clip_ref, _clip((0, 4), (), (4,)), id="empty"),
    OpCase("clip_by_value", _clip_ref, _clip((300, 301), (), ()), dtypes=("float32",),
           id="large"),
    OpCase("clip_by_value", _clip_ref, _clip((300, 301), (300, 1), (1, 301)),
           dtypes=("float32",), id="large_bcast"),
    OpCase("clip_by_value", _clip_ref, with_specials([(4, 5), (), ()]), dtypes=("float32",),
           id="specials"),
    OpCase("clip_by_value", _clip_ref,
           lambda rng, dt: [m[:, ::2] for m in _clip((5, 14), (5, 14), (5, 14))(rng, dt)],
           id="strided"),
]

# Bitwise ops against numpy: and/or/xor on integers (negative values: two's complement) and bools;
# shifts with counts inside the bit width, and numpy's results for counts at or past it.
def _shift_counts(rng, dt):
    bits = np.dtype(dt).itemsize * 8
    unsigned = np.dtype(dt).kind == "u"
    x = rng.integers(0 if unsigned else -100, 101, size=(5, 6)).astype(dt)
    return [x, rng.integers(0, bits, size=(5, 6)).astype(dt)]


def _shift_ref(fn):
    def ref(x, n):
        bits = x.dtype.itemsize * 8
        out = fn(x, np.clip(n, 0, bits - 1).astype(x.dtype))
        big = (n.astype(np.int64) >= bits) | (n.astype(np.int64) < 0)
        fill = np.where(x < 0, -1, 0) if fn is np.right_shift else 0
        return np.where(big, fill, out).astype(x.dtype)
    return ref


for _op, _ref in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                  ("bitwise_xor", np.bitwise_xor)):
    CASES += [OpCase(_op, _ref, _int_pairs(-20, 21, zero_y=True), dtypes=INT + ("bool", "uint16", "uint32", "uint64")),
              OpCase(_op, _ref, small_ints([(3, 1), (1, 4)]), dtypes=("int32",), domain="int", id="bcast")]
for _op, _fn in (("bitwise_left_shift", np.left_shift), ("bitwise_right_shift", np.right_shift)):
    CASES += [OpCase(_op, _shift_ref(_fn), _shift_counts, dtypes=INT + ("uint16", "uint32", "uint64")),
              OpCase(_op, _shift_ref(_fn),
                     lambda rng, dt: [np.array([-5, 5, 1, -1], dt), np.array([8, 64, 70, 100], dt)],
                     dtypes=("int8", "int64"), id="past_width")]

# Complex parts of real inputs (numpy: the input, zeros, the input); complex inputs are in
# compat/test_compat_dtypes.py (the table draws real dtypes only).
CASES += [OpCase("real", np.real, [(3, 4)], dtypes=ALL),
          OpCase("imag", np.imag, [(3, 4)], dtypes=ALL),
          OpCase("conj", np.conj, [(3, 4)], dtypes=NUMERIC),  # numpy: conj of bool is int8, Mycel keeps bool
          OpCase("conj", lambda x: x, [(3, 4)], dtypes=("bool",), id="bool")]
