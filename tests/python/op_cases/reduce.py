"""Table rows for reductions (sum, mean, max, var, argmax, ...) and cumsum.

References are numpy, translated to MindSpore's conventions: axis=() means every axis, keep_dims,
and integer sums/products are int64 (numpy gives uint64 for uint8: the references cast). Float
results are computed in float64 and cast to the output dtype, so the reference itself is exact.
"""
import dataclasses
import warnings

import numpy as np

from op_cases import OpCase

FLOAT = ("float16", "float32", "float64")
INT = ("int8", "uint8", "int16", "int32", "int64")
ALL = FLOAT + INT + ("bool",)


def _axis(axis):
    return None if axis is None or (isinstance(axis, (tuple, list)) and len(axis) == 0) else axis


def _float_out(dtype):
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _int64_out(dtype):
    return dtype if dtype.kind == "f" else np.dtype(np.int64)


def _reduction(fn, out_dtype, exact=False):
    """ref(x, axis, keep_dims, **kw): fn on float64 (or int64 for integer results) cast to out."""
    def ref(x, axis=(), keep_dims=False, keepdims=None, **kw):
        keep = keep_dims if keepdims is None else keepdims
        out = np.dtype(out_dtype(x.dtype))
        work = x if exact else x.astype(np.float64 if out.kind == "f" else np.int64)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # mean of an empty slice
            r = fn(work, axis=_axis(axis), keepdims=keep, **kw)
        return np.asarray(r).astype(out)
    return ref


def _logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0)
    r = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


def _var(x, axis=None, keepdims=False, ddof=0, correction=None):
    return np.var(x, axis=axis, keepdims=keepdims, ddof=ddof if correction is None else correction)


def _std(x, axis=None, keepdims=False, ddof=0, correction=None):
    return np.sqrt(_var(x, axis, keepdims, ddof, correction))


sum_ref = _reduction(np.sum, _int64_out)
mean_ref = _reduction(np.mean, _float_out)
prod_ref = _reduction(np.prod, _int64_out)
max_ref = _reduction(np.max, lambda d: d, exact=True)
min_ref = _reduction(np.min, lambda d: d, exact=True)
all_ref = _reduction(np.all, lambda d: np.bool_, exact=True)
any_ref = _reduction(np.any, lambda d: np.bool_, exact=True)
logsumexp_ref = _reduction(_logsumexp, _float_out)
var_ref = _reduction(_var, _float_out)
std_ref = _reduction(_std, _float_out)


def _arg(fn):
    def ref(x, axis=-1, keep_dims=False):
        if x.ndim == 0:
            return np.array(0, dtype=np.int64)
        return fn(x, axis=axis, keepdims=keep_dims).astype(np.int64)
    return ref


argmax_ref = _arg(np.argmax)
argmin_ref = _arg(np.argmin)


def _scan_ref(fn, identity):
    """numpy's scan fn (np.cumsum, np.cumprod) with MindSpore's exclusive/reverse, in float64 or
    int64 and cast to the numpy result dtype (integers: int64, the wider unsigned ones: uint64)."""
    def ref(x, axis, exclusive=False, reverse=False):
        out = fn(np.zeros((1,), x.dtype)).dtype
        out = np.dtype(np.int64) if out.kind == "u" and x.dtype.itemsize == 1 else out
        work = np.float64 if out.kind == "f" else (out if out.kind in "cu" else np.int64)
        a = (x.reshape(1) if x.ndim == 0 else x).astype(work)
        a = np.moveaxis(a, axis, -1)
        if reverse:
            a = a[..., ::-1]
        cs = fn(a, axis=-1)
        if exclusive and cs.shape[-1] > 0:
            cs = np.concatenate([np.full_like(cs[..., :1], identity), cs[..., :-1]], axis=-1)
        if reverse:
            cs = cs[..., ::-1]
        return np.moveaxis(cs, -1, axis).reshape(x.shape).astype(out)
    return ref


cumsum_ref = _scan_ref(np.cumsum, 0)
cumprod_ref = _scan_ref(np.cumprod, 1)


def _with_nans(shape):
    def gen(rng, dtype):
        a = rng.standard_normal(shape).astype(dtype)
        a.flat[rng.choice(a.size, size=a.size // 4, replace=False)] = np.nan
        a[0, 0] = np.nan  # every op sees a NaN in the first row
        return [a]
    return gen


def _ties(shape):
    def gen(rng, dtype):
        return [rng.integers(-2, 3, size=shape).astype(dtype)]
    return gen


def _near_one(shape):
    def gen(rng, dtype):
        return [np.asarray(np.exp(rng.uniform(-0.1, 0.1, size=shape)), dtype=dtype)]
    return gen


def _extremes(rng, dtype):
    """Rows of -inf, +inf and ordinary values for logsumexp."""
    a = rng.standard_normal((4, 5)).astype(dtype)
    a[0] = -np.inf
    a[1, 2] = np.inf
    a[2, 1:3] = np.inf
    a[3, 0] = -np.inf
    return [a]


def _axis_rows(op, ref, dtypes=("float32", "float64"), **kw):
    """The standard battery: all axes, one axis, negative, several, keep_dims, 0-d, empty, large."""
    return [
        OpCase(op, ref, [(3, 4, 5)], dict(axis=()), dtypes=dtypes, id="all", **kw),
        OpCase(op, ref, [(3, 4, 5)], dict(axis=1), id="axis1", **kw),
        OpCase(op, ref, [(3, 4, 5)], dict(axis=-1, keep_dims=True), id="neg_keep", **kw),
        OpCase(op, ref, [(3, 4, 5)], dict(axis=(0, 2)), id="axes02", **kw),
        OpCase(op, ref, [(2, 3, 4, 5)], dict(axis=(0, 2), keep_dims=True), id="axes02_keep", **kw),
        OpCase(op, ref, [(2, 3, 4, 5)], dict(axis=(3, 1, 2)), id="axes_unsorted", **kw),
        OpCase(op, ref, [(3, 1, 4)], dict(axis=(0, 1)), id="unit_dim", **kw),
        OpCase(op, ref, [()], dict(axis=()), id="0d", **kw),
        OpCase(op, ref, [(300, 301)], dict(axis=()), id="large_all", **kw),
        OpCase(op, ref, [(300, 301)], dict(axis=0), id="large_axis0", **kw),
        OpCase(op, ref, [(301, 300)], dict(axis=1, keepdims=True), id="large_axis1", **kw),
        OpCase(op, ref, [(40000, 3)], dict(axis=0), id="large_tall", **kw),
        OpCase(op, ref, [(6, 40, 7, 30)], dict(axis=(0, 2)), id="large_strided", **kw),
    ]


_EMPTY = [dict(axis=()), dict(axis=0), dict(axis=1)]

CASES = [
    *_axis_rows("sum", sum_ref, dtypes=ALL),
    *[OpCase("sum", sum_ref, [(0, 3)], a, id=f"empty{i}") for i, a in enumerate(_EMPTY)],
    OpCase("sum", sum_ref, [(70000,)], dict(axis=()), id="large_1d"),
    OpCase("sum", sum_ref, [(4, 5)], dict(axis=0), dtypes=INT + ("bool",), id="int_axis"),

    *_axis_rows("mean", mean_ref, dtypes=ALL),
    *[OpCase("mean", mean_ref, [(0, 3)], a, id=f"empty{i}") for i, a in enumerate(_EMPTY)],

    *[dataclasses.replace(c, shapes=_near_one(c.shapes[0]))
      for c in _axis_rows("prod", prod_ref, dtypes=FLOAT + ("bool",), rtol=1e-4)],
    OpCase("prod", prod_ref, [(3, 4)], dict(axis=1), dtypes=INT, id="int"),
    OpCase("prod", prod_ref, [(40, 12)], dict(axis=()), dtypes=("int64",), id="int_wraps"),
    *[OpCase("prod", prod_ref, [(0, 3)], a, id=f"empty{i}") for i, a in enumerate(_EMPTY)],

    *_axis_rows("max", max_ref, dtypes=ALL),
    OpCase("max", max_ref, [(0, 3)], dict(axis=1), id="empty_out"),
    OpCase("max", max_ref, _with_nans((6, 50)), dict(axis=1), dtypes=FLOAT, id="nan"),
    OpCase("max", max_ref, _with_nans((300, 301)), dict(axis=()), id="nan_large"),
    *_axis_rows("min", min_ref, dtypes=ALL),
    OpCase("min", min_ref, _with_nans((6, 50)), dict(axis=0), dtypes=FLOAT, id="nan"),

    *_axis_rows("all", all_ref, dtypes=ALL, domain="bool"),
    OpCase("all", all_ref, [(3, 4)], dict(axis=1), dtypes=FLOAT + INT, id="values"),
    *[OpCase("all", all_ref, [(0, 3)], a, dtypes=("bool",), id=f"empty{i}") for i, a in enumerate(_EMPTY)],
    *_axis_rows("any", any_ref, dtypes=ALL, domain="bool"),
    OpCase("any", any_ref, [(3, 4)], dict(axis=1), dtypes=FLOAT + INT, id="values"),
    OpCase("any", any_ref, _with_nans((6, 50)), dict(axis=1), id="nan"),
    *[OpCase("any", any_ref, [(0, 3)], a, dtypes=("bool",), id=f"empty{i}") for i, a in enumerate(_EMPTY)],

    *_axis_rows("logsumexp", logsumexp_ref, dtypes=ALL),
    OpCase("logsumexp", logsumexp_ref, _extremes, dict(axis=1), dtypes=FLOAT, id="inf"),
    OpCase("logsumexp", logsumexp_ref, _with_nans((6, 50)), dict(axis=1), id="nan"),
    OpCase("logsumexp", logsumexp_ref, lambda rng, dt: [rng.uniform(80, 700, (4, 60)).astype(dt)],
           dict(axis=1), dtypes=("float64",), id="no_overflow"),
    *[OpCase("logsumexp", logsumexp_ref, [(0, 3)], a, id=f"empty{i}") for i, a in enumerate(_EMPTY)],

    *_axis_rows("var", var_ref, dtypes=ALL),
    OpCase("var", var_ref, [(4, 5)], dict(axis=1, ddof=1), id="ddof1"),
    OpCase("var", var_ref, [(4, 5)], dict(axis=(), correction=1), id="correction"),
    OpCase("var", var_ref, [(4, 3)], dict(axis=1, ddof=3), id="ddof_eq_count"),
    OpCase("var", var_ref, [(4, 3)], dict(axis=1, ddof=5), id="ddof_gt_count"),
    OpCase("var", var_ref, [(4, 3)], dict(axis=0, ddof=-1), id="ddof_neg"),
    OpCase("var", var_ref, lambda rng, dt: [(1e4 + rng.standard_normal((50, 40))).astype(dt)],
           dict(axis=0), dtypes=("float64",), id="offset"),
    *[OpCase("var", var_ref, [(0, 3)], a, id=f"empty{i}") for i, a in enumerate(_EMPTY)],
    *_axis_rows("std", std_ref, dtypes=ALL),
    OpCase("std", std_ref, [(4, 5)], dict(axis=0, ddof=1, keep_dims=True), id="ddof1"),
    OpCase("std", std_ref, [(1, 3)], dict(axis=0, ddof=1), id="ddof_eq_count"),
    *[OpCase("std", std_ref, [(0, 3)], a, id=f"empty{i}") for i, a in enumerate(_EMPTY)],
]

for _op, _ref in (("argmax", argmax_ref), ("argmin", argmin_ref)):
    CASES += [
        OpCase(_op, _ref, [(3, 4, 5)], dtypes=ALL, id="default_axis"),
        OpCase(_op, _ref, [(3, 4, 5)], dict(axis=0), id="axis0"),
        OpCase(_op, _ref, [(3, 4)], dict(axis=1), id="rows"),
        OpCase(_op, _ref, [(3, 4, 5)], dict(axis=-2, keep_dims=True), id="neg_keep"),
        OpCase(_op, _ref, [()], dict(axis=0), id="0d"),
        OpCase(_op, _ref, [(0, 3)], dict(axis=1), id="empty_out"),
        OpCase(_op, _ref, _ties((6, 40)), dict(axis=1), dtypes=ALL, id="ties"),
        OpCase(_op, _ref, _ties((40, 6)), dict(axis=0), dtypes=("float32", "int32"), id="ties_axis0"),
        OpCase(_op, _ref, _with_nans((6, 50)), dict(axis=1), dtypes=FLOAT, id="nan"),
        OpCase(_op, _ref, _with_nans((50, 6)), dict(axis=0), dtypes=FLOAT, id="nan_axis0"),
        OpCase(_op, _ref, [(300, 301)], dict(axis=1), id="large"),
        OpCase(_op, _ref, [(70000,)], dict(axis=0), id="large_1d"),
        OpCase(_op, _ref, _ties((70000,)), dict(axis=0), dtypes=("float32", "int8"), id="large_ties"),
        OpCase(_op, _ref, [(40000, 3)], dict(axis=0), id="large_tall"),
    ]

CASES += [
    OpCase("cumsum", cumsum_ref, [(3, 4, 5)], dict(axis=1), dtypes=ALL),
    OpCase("cumsum", cumsum_ref, [(3, 4, 5)], dict(axis=-1), dtypes=INT + ("bool",), id="last"),
    OpCase("cumsum", cumsum_ref, [(3, 4, 5)], dict(axis=0, exclusive=True), id="exclusive"),
    OpCase("cumsum", cumsum_ref, [(3, 4, 5)], dict(axis=2, reverse=True), id="reverse"),
    OpCase("cumsum", cumsum_ref, [(3, 4, 5)], dict(axis=1, exclusive=True, reverse=True), id="excl_rev"),
    OpCase("cumsum", cumsum_ref, [()], dict(axis=0), id="0d"),
    OpCase("cumsum", cumsum_ref, [(0, 3)], dict(axis=0), id="empty"),
    OpCase("cumsum", cumsum_ref, [(3, 0)], dict(axis=1, exclusive=True), id="empty_axis"),
    OpCase("cumsum", cumsum_ref, [(300, 301)], dict(axis=0), rtol=1e-4, atol=1e-4, id="large_axis0"),
    OpCase("cumsum", cumsum_ref, [(301, 300)], dict(axis=1), rtol=1e-4, atol=1e-4, id="large_axis1"),
]


def _with_zeros(rng, dtype):
    """cumprod rows holding zeros (the product after a zero stays zero)."""
    a = rng.standard_normal((3, 6)).astype(dtype)
    a[0, 2] = a[1, 0] = a[1, 4] = a[2, 5] = 0
    return [a]


CASES += [
    OpCase("cumprod", cumprod_ref, [(3, 4, 5)], dict(axis=1), dtypes=ALL),
    OpCase("cumprod", cumprod_ref, [(3, 4, 5)], dict(axis=0, exclusive=True), id="exclusive"),
    OpCase("cumprod", cumprod_ref, [(3, 4, 5)], dict(axis=2, reverse=True), id="reverse"),
    OpCase("cumprod", cumprod_ref, [(3, 4, 5)], dict(axis=-1, exclusive=True, reverse=True),
           dtypes=("float64", "int32"), id="excl_rev"),
    OpCase("cumprod", cumprod_ref, _with_zeros, dict(axis=1), id="zeros"),
    OpCase("cumprod", cumprod_ref, [()], dict(axis=0), id="0d"),
    OpCase("cumprod", cumprod_ref, [(0, 3)], dict(axis=0), id="empty"),
    OpCase("cumprod", cumprod_ref, _near_one((300, 301)), dict(axis=0), rtol=1e-4, id="large_axis0"),
]


def cumprod_grad_ref(x, dout, axis, exclusive=False, reverse=False):
    """Brute force: dx_k = sum_j dout_j * prod of the terms of y_j other than x_k (0 if x_k is not
    one of them), over the scan order, in float64."""
    a, d = np.moveaxis(x.astype(np.float64), axis, -1), np.moveaxis(dout.astype(np.float64), axis, -1)
    if reverse:
        a, d = a[..., ::-1], d[..., ::-1]
    n, e = a.shape[-1], int(exclusive)
    g = np.zeros_like(a)
    for k in range(n):
        for j in range(k + e, n):
            terms = np.delete(a[..., :j + 1 - e], k, axis=-1)
            g[..., k] += d[..., j] * np.prod(terms, axis=-1)
    if reverse:
        g = g[..., ::-1]
    return np.moveaxis(g, -1, axis).astype(x.dtype)


def _grad_inputs(rng, dtype):
    x = _with_zeros(rng, dtype)[0]
    return [x, rng.standard_normal(x.shape).astype(dtype)]


CASES += [
    OpCase("cumprod_grad", cumprod_grad_ref, [(3, 5), (3, 5)], dict(axis=1)),
    OpCase("cumprod_grad", cumprod_grad_ref, [(3, 5), (3, 5)], dict(axis=0), dtypes=("float16",), rtol=1e-2,
           atol=1e-2, id="f16"),
    OpCase("cumprod_grad", cumprod_grad_ref, _grad_inputs, dict(axis=1, exclusive=True), id="zeros_excl"),
    OpCase("cumprod_grad", cumprod_grad_ref, _grad_inputs, dict(axis=-1, reverse=True), id="zeros_rev"),
    OpCase("cumprod_grad", cumprod_grad_ref, [(2, 3, 4), (2, 3, 4)], dict(axis=1, exclusive=True, reverse=True),
           id="excl_rev"),
]
