"""Rows for uint16/uint32/uint64 and complex64/complex128: every op that claims them, against
numpy (the generic table draws only the core dtypes, so these rows draw their own inputs)."""
import numpy as np

from op_cases import OpCase

UNSIGNED = ("uint16", "uint32", "uint64")
COMPLEX = ("complex64", "complex128")
EXT = UNSIGNED + COMPLEX


def _draw(*shapes):
    def gen(rng, dt):
        out = []
        for s in shapes:
            if np.dtype(dt).kind == "c":
                out.append((rng.normal(size=s) + 1j * rng.normal(size=s)).astype(dt))
            else:  # away from 0, so that division is defined
                out.append(rng.integers(1, 200, size=s).astype(dt))
        return out
    return gen


def _quiet(f):
    def ref(*a, **k):
        with np.errstate(all="ignore"):
            return f(*a, **k)
    return ref


CASES = [OpCase(op, ref, _draw((3, 4), (3, 4)), dtypes=EXT, id="ext")
         for op, ref in (("add", np.add), ("sub", _quiet(np.subtract)), ("mul", _quiet(np.multiply)),
                         ("div", np.true_divide), ("equal", np.equal), ("not_equal", np.not_equal))]
CASES += [OpCase(op, ref, _draw((3, 4)), dtypes=EXT, id="ext")
          for op, ref in (("abs", np.abs), ("real", np.real), ("imag", np.imag), ("conj", np.conj))]
CASES += [OpCase("neg", np.negative, _draw((3, 4)), dtypes=COMPLEX, id="ext"),
          OpCase("cast", lambda x, dtype: x.astype(dtype), _draw((3, 4)), dict(dtype="complex128"), dtypes=EXT,
                 id="ext"),
          OpCase("reshape", lambda x, shape: x.reshape(shape), _draw((3, 4)), dict(shape=(2, -1, 2)), dtypes=EXT,
                 id="ext"),
          OpCase("flatten", lambda x: x.reshape(x.shape[0], -1), _draw((2, 3, 4)), dtypes=EXT, id="ext"),
          OpCase("expand_dims", lambda x, axis: np.expand_dims(x, axis), _draw((3, 4)), dict(axis=1), dtypes=EXT,
                 id="ext"),
          OpCase("squeeze", lambda x, axis: np.squeeze(x, axis), _draw((1, 3, 1)), dict(axis=(0, -1)), dtypes=EXT,
                 id="ext"),
          OpCase("identity", lambda x: x, _draw((3, 4)), dtypes=EXT, id="ext"),
          OpCase("transpose", lambda x, perm: np.transpose(x, perm), _draw((2, 3, 4)), dict(perm=(2, 0, 1)),
                 dtypes=EXT, id="ext")]


def _axes(f):
    """numpy's reduction f with the registry's attributes (axis: a tuple, empty for all)."""
    def ref(x, axis=(), keep_dims=False):
        return np.asarray(f(x, axis=tuple(axis) if axis else None, keepdims=keep_dims))
    return ref


# Reductions: sum/prod/mean take complex too (numpy: uint16/32/64 sum to uint64, complex stays).
CASES += [OpCase(op, _axes(ref), _draw((3, 4)), attrs, dtypes=EXT, id=f"ext{i}")
          for op, ref in (("sum", np.sum), ("prod", np.prod), ("mean", np.mean))
          for i, attrs in enumerate((dict(axis=(1,)), dict(axis=(0,), keep_dims=True)))]
CASES += [OpCase("sum", _axes(np.sum), _draw((2, 3, 4)), dtypes=EXT, id="ext_all")]
CASES += [OpCase(op, _axes(ref), _draw((3, 4)), attrs, dtypes=UNSIGNED, id=f"ext{i}")
          for op, ref in (("max", np.max), ("min", np.min))
          for i, attrs in enumerate((dict(axis=(1,)), dict(axis=(), keep_dims=True)))]
CASES += [OpCase(op, lambda x, axis=-1, keep_dims=False, f=f: np.asarray(f(x, axis=axis, keepdims=keep_dims)),
                 _draw((3, 5)), attrs, dtypes=UNSIGNED, id=f"ext{i}")
          for op, f in (("argmax", np.argmax), ("argmin", np.argmin))
          for i, attrs in enumerate((dict(axis=1), dict(axis=0, keep_dims=True)))]
# Ordered comparisons: the unsigned types (complex values have no order).
CASES += [OpCase(op, ref, _draw((3, 4), (3, 4)), dtypes=UNSIGNED, id="ext")
          for op, ref in (("less", np.less), ("less_equal", np.less_equal), ("greater", np.greater),
                          ("greater_equal", np.greater_equal))]
# matmul: the unsigned types wrap like numpy's; complex products as numpy's.
CASES += [OpCase("matmul", lambda x, y, transpose_a=False, transpose_b=False: np.matmul(x, y.T if transpose_b else y),
                 _draw((2, 3, 4), (5, 4)), dict(transpose_b=True), dtypes=EXT, id="ext")]


# Unary math (issue 14): the wider unsigned types everywhere numpy takes them (transcendental
# functions promote to float32/float64), complex values where the math is defined.
def _q(f):
    return _quiet(f)


_FLOAT_OUT = (("sqrt", np.sqrt), ("rsqrt", lambda x: 1 / np.sqrt(x)), ("exp", np.exp), ("expm1", np.expm1),
              ("log", np.log), ("log1p", np.log1p), ("sin", np.sin), ("cos", np.cos), ("tan", np.tan))
CASES += [OpCase(op, _q(ref), _draw((3, 4)), dtypes=EXT, id="ext") for op, ref in _FLOAT_OUT]
CASES += [OpCase(op, _q(ref), _draw((3, 4)), dtypes=EXT, id="ext")
          for op, ref in (("sign", np.sign), ("square", np.square))]
CASES += [OpCase(op, _q(ref), _draw((3, 4)), dtypes=COMPLEX, id="ext")
          for op, ref in (("reciprocal", np.reciprocal), ("tanh", np.tanh),
                          ("sigmoid", lambda z: 1 / (1 + np.exp(-z))))]
# Near 0 (expm1 and log1p keep their accuracy there) and at 0 (sign of complex 0 is 0).
CASES += [OpCase(op, _q(ref), lambda rng, dt: [(1e-4 * (rng.normal(size=(6,)) + 1j * rng.normal(size=(6,))))
                                                .astype(dt)], dtypes=COMPLEX, id="small")
          for op, ref in (("expm1", np.expm1), ("log1p", np.log1p))]
CASES += [OpCase("sign", np.sign, lambda rng, dt: [np.array([0, 3 + 4j, -2j, 1e-30], dt)], dtypes=COMPLEX,
                 id="zero")]
CASES += [OpCase(op, lambda x, f=f: f(x).astype(x.dtype), _draw((3, 4)), dtypes=UNSIGNED, id="ext")
          for op, f in (("floor", np.floor), ("ceil", np.ceil), ("round", np.round))]


def _specials(rng, dt):
    """Values with NaN, inf and 0 in the real or the imaginary part (complex), or 0 and large values."""
    if np.dtype(dt).kind == "c":
        inf, nan = np.inf, np.nan
        return [np.array([0, 1 + 2j, complex(nan, 0), complex(0, nan), complex(inf, 1), complex(1, -inf),
                          complex(inf, nan), 0j], dt)]
    return [np.array([0, 1, 7, np.iinfo(dt).max], dt)]


CASES += [OpCase(op, ref, _specials, dtypes=EXT, id="ext")
          for op, ref in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                          ("logical_not", np.logical_not))]


# Scans and the statistics: cumsum/cumprod sum to uint64 from the wider unsigned types and stay
# complex; var/std of complex values are real (numpy's); logsumexp of the unsigned types is float64.
def _scan(f, identity):
    def ref(x, axis, exclusive=False, reverse=False):
        a = np.flip(x, axis) if reverse else x
        with np.errstate(all="ignore"):
            r = f(a, axis=axis)
        if exclusive:
            r = np.concatenate([np.full_like(np.take(r, [0], axis), identity),
                                np.delete(r, -1, axis)], axis=axis)
        return np.flip(r, axis) if reverse else r
    return ref


CASES += [OpCase(op, _scan(f, ident), _draw((3, 4)), attrs, dtypes=EXT, id=f"ext{i}")
          for op, f, ident in (("cumsum", np.cumsum, 0), ("cumprod", np.cumprod, 1))
          for i, attrs in enumerate((dict(axis=1), dict(axis=0, exclusive=True, reverse=True)))]
CASES += [OpCase(op, _axes(ref), _draw((3, 5)), attrs, dtypes=EXT, id=f"ext{i}")
          for op, ref in (("var", np.var), ("std", np.std))
          for i, attrs in enumerate((dict(axis=(1,)), dict(axis=(), keep_dims=True)))]
CASES += [OpCase(op, lambda x, axis=(), keep_dims=False, ddof=0, f=f: np.asarray(
                     f(x, axis=tuple(axis) or None, keepdims=keep_dims, ddof=ddof)),
                 _draw((4, 5)), dict(axis=(0,), ddof=1), dtypes=EXT, id="ext_ddof")
          for op, f in (("var", np.var), ("std", np.std))]


def _logsumexp(x, axis=(), keep_dims=False):
    a = x.astype(np.float64)
    m = a.max(axis=tuple(axis) or None, keepdims=True)
    r = np.log(np.exp(a - m).sum(axis=tuple(axis) or None, keepdims=True)) + m
    return r if keep_dims else np.squeeze(r, axis=tuple(axis) or None)


CASES += [OpCase("logsumexp", _logsumexp, _draw((3, 4)), attrs, dtypes=UNSIGNED, id=f"ext{i}")
          for i, attrs in enumerate((dict(axis=(1,)), dict(axis=(), keep_dims=True)))]


# Data movement that complex gradients pass through (bytes only: every type), and the
# backward ops and fills they use (docs/autodiff.md "Complex values"). Inputs of more than 48
# elements keep these rows out of the ops' help examples (scripts/gen_op_examples.py).
CASES += [OpCase("broadcast_to", lambda x, shape: np.broadcast_to(x, shape), _draw((1, 50)), dict(shape=(2, 50)),
                 dtypes=EXT, id="ext"),
          OpCase("broadcast_like", lambda x, like: np.broadcast_to(x, like.shape), _draw((50, 1), (50, 2)),
                 dtypes=EXT, id="ext"),
          OpCase("slice", lambda x, begin, size: x[1:3, 2:], _draw((7, 8)), dict(begin=(1, 2), size=(2, -1)),
                 dtypes=EXT, id="ext"),
          OpCase("strided_slice", lambda x, **a: x[0:3:2, 3:0:-1], _draw((7, 8)),
                 dict(begin=(0, 3), end=(3, 0), strides=(2, -1)), dtypes=EXT, id="ext"),
          OpCase("pad", lambda x, paddings: np.pad(x, ((1, 2), (0, 1))), _draw((7, 8)), dict(paddings=(1, 2, 0, 1)),
                 dtypes=EXT, id="ext"),
          OpCase("zeros_like", np.zeros_like, _draw((7, 8)), dtypes=EXT, id="ext"),
          OpCase("ones_like", np.ones_like, _draw((7, 8)), dtypes=EXT, id="ext")]


def _ss_grad_ref(dy, like, **attrs):
    out = np.zeros(like.shape, dy.dtype)
    out[0:3:2, 3:0:-1] = dy
    return out


def _pad_grad_ref(dy, like, paddings):
    return dy[1:-2, 0:-1].copy()


CASES += [OpCase("strided_slice_grad", _ss_grad_ref, _draw((2, 3), (7, 8)),
                 dict(begin=(0, 3), end=(3, 0), strides=(2, -1)), dtypes=COMPLEX, id="ext"),
          OpCase("pad_grad", _pad_grad_ref, _draw((10, 9), (7, 8)), dict(paddings=(1, 2, 0, 1)), dtypes=COMPLEX,
                 id="ext")]

# Joins and splits (bytes only): vmap's per-item loop stacks complex results with them.
CASES += [OpCase("concat", lambda *xs, axis=0: np.concatenate(xs, axis), _draw((7, 8), (3, 8)), dict(axis=0),
                 dtypes=EXT, id="ext"),
          OpCase("stack", lambda *xs, axis=0: np.stack(xs, axis), _draw((7, 8), (7, 8)), dict(axis=1),
                 dtypes=EXT, id="ext"),
          OpCase("split", lambda x, axis=0, output_num=1: tuple(np.split(x, output_num, axis)), _draw((7, 8)),
                 dict(axis=1, output_num=2), dtypes=EXT, id="ext")]


# The binary ops beyond the arithmetic above, and the shape and indexing ops (compat8; their
# mode-parity tests: compat/test_compat_dtype_ops2.py). Ordered ops take the unsigned types only.
def _with(gen, *extra):
    """gen's arrays followed by fixed int64 index arrays (or bool masks)."""
    def both(rng, dt):
        return gen(rng, dt) + [np.asarray(e) for e in extra]
    return both


def _gather_nd_inputs(rng, dt):
    return _draw((3, 4))(rng, dt) + [np.array([[0, 1], [2, 3], [1, 1]])]


def _scatter_add_ref(x, indices, updates):
    out = x.copy()
    np.add.at(out, indices, updates)
    return out


def _tensor_scatter_add_ref(x, indices, updates):
    out = x.copy()
    np.add.at(out, tuple(indices[..., k] for k in range(indices.shape[-1])), updates)
    return out


def _scatter_elements_ref(x, indices, updates, axis=0, reduction="none"):
    out = x.copy()
    for j, k in np.ndindex(indices.shape):
        out[indices[j, k], k] = updates[j, k]
    return out


def _sort_ref(x, axis=-1, descending=False):
    idx = np.argsort(-x if descending else x, axis=axis, kind="stable")
    return np.take_along_axis(x, idx, axis), idx.astype(np.int64)


def _top_k_ref(x, k, sorted=True):  # noqa: A002 (the registry's attribute name)
    idx = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")[..., :k]  # values < 2^53 here
    return np.take_along_axis(x, idx, -1), idx.astype(np.int64)


def _unique_ref(x, consecutive=False):
    v, inv, cnt = np.unique(x.reshape(-1), return_inverse=True, return_counts=True)
    return v, inv.reshape(x.shape).astype(np.int64), cnt.astype(np.int64)


def _mask_first(rng, dt):
    return [np.array([[True, False, True, False], [False, True, True, False], [True, True, False, False]])] + \
        _draw((3, 4), (3, 4))(rng, dt)


CASES += [OpCase(op, ref, _draw((3, 4), (3, 4)), dtypes=UNSIGNED, id="ext")
          for op, ref in (("maximum", np.maximum), ("minimum", np.minimum), ("floor_div", np.floor_divide),
                          ("mod", np.remainder), ("pow", _quiet(np.power)))]
CASES += [
    OpCase("pow", np.power, _draw((3, 4), (3, 4)), dtypes=COMPLEX, rtol=1e-4, atol=1e-6, id="ext_complex"),
    OpCase("clip_by_value", lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), _draw((3, 4), (3, 4), (3, 4)),
           dtypes=UNSIGNED, id="ext"),
    OpCase("gather", lambda x, i, axis: np.take(x, i, axis), _with(_draw((3, 4)), [2, 0, 2]), dict(axis=1),
           dtypes=EXT, id="ext"),
    OpCase("gather_nd", lambda x, i: x[i[:, 0], i[:, 1]], _gather_nd_inputs, dtypes=EXT, id="ext"),
    OpCase("gather_elements", lambda x, i, dim: np.take_along_axis(x, i, dim),
           _with(_draw((3, 4)), [[0, 2, 1, 0], [2, 2, 0, 1]]), dict(dim=0), dtypes=EXT, id="ext"),
    OpCase("scatter_add", _scatter_add_ref, lambda rng, dt: [_draw((3, 4))(rng, dt)[0], np.array([2, 0, 2]),
                                                              _draw((3, 4))(rng, dt)[0]], dtypes=EXT, id="ext"),
    OpCase("tensor_scatter_add", _tensor_scatter_add_ref,
           lambda rng, dt: [_draw((3, 4))(rng, dt)[0], np.array([[0, 1], [2, 3], [0, 1]]), _draw((3,))(rng, dt)[0]],
           dtypes=EXT, id="ext"),
    OpCase("tensor_scatter_elements", _scatter_elements_ref,
           lambda rng, dt: [_draw((3, 4))(rng, dt)[0], np.array([[0, 2, 1, 0], [2, 1, 0, 1]]),
                            _draw((2, 4))(rng, dt)[0]], dict(axis=0), dtypes=EXT, id="ext"),
    OpCase("select", np.where, _mask_first, dtypes=EXT, id="ext"),
    OpCase("tile", lambda x, multiples: np.tile(x, multiples), _draw((3, 4)), dict(multiples=(2, 1, 3)), dtypes=EXT,
           id="ext"),
    OpCase("tril", lambda x, diagonal: np.tril(x, diagonal), _draw((2, 3, 4)), dict(diagonal=1), dtypes=EXT, id="ext"),
    OpCase("triu", lambda x, diagonal: np.triu(x, diagonal), _draw((2, 3, 4)), dict(diagonal=-1), dtypes=EXT,
           id="ext"),
    OpCase("sort", _sort_ref, _draw((3, 5)), dict(axis=1, descending=True), dtypes=UNSIGNED, id="ext"),
    OpCase("argsort", lambda x, axis: _sort_ref(x, axis)[1], _draw((4, 3)), dict(axis=0), dtypes=UNSIGNED, id="ext"),
    OpCase("top_k", _top_k_ref, _draw((3, 5)), dict(k=2), dtypes=UNSIGNED, id="ext"),
    OpCase("unique_with_counts", _unique_ref, lambda rng, dt: [rng.integers(0, 5, size=(3, 4)).astype(dt)],
           dtypes=UNSIGNED, id="ext"),
]


# issue 14 (compat12): atan2 of the unsigned types gives numpy's float; squared_difference of
# every extended type ((x - y)^2 wrapping, complex squared unconjugated); relu of the unsigned
# types is the identity.
CASES += [OpCase("atan2", np.arctan2, _draw((3, 4), (3, 4)), dtypes=UNSIGNED, id="ext"),
          OpCase("squared_difference", lambda x, y: _quiet(np.square)(_quiet(np.subtract)(x, y)),
                 _draw((3, 4), (3, 4)), dtypes=EXT, id="ext"),
          OpCase("relu", lambda x: x.copy(), _draw((3, 4)), dtypes=("uint8",) + UNSIGNED, id="ext")]


# Integer neg/invert/reciprocal (MindSpore's CPU kernels): neg and invert wrap as numpy's do;
# reciprocal truncates 1/x and gives the type's minimum for 1/0 (0 for unsigned types).
def _small_ints(rng, dt):
    low = 0 if np.dtype(dt).kind == "u" else -3
    return [rng.integers(low, 4, size=(3, 5)).astype(dt)]


def _int_reciprocal(x):
    with np.errstate(all="ignore"):
        q = np.trunc(1.0 / x.astype(np.float64))
    return np.where(x == 0, np.iinfo(x.dtype).min, q).astype(x.dtype)


CASES += [OpCase("neg", _quiet(np.negative), _small_ints, dtypes=("uint8",) + UNSIGNED, id="uint"),
          OpCase("invert", np.invert, _small_ints, dtypes=UNSIGNED, id="uint"),
          OpCase("reciprocal", _int_reciprocal, _small_ints,
                 dtypes=("int8", "int16", "int32", "int64", "uint8") + UNSIGNED, id="int")]
