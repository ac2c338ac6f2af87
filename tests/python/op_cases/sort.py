"""Table rows for sort, argsort and top_k. References are numpy's stable sorts; a stable
descending order (ties keep index order, NaN first) is numpy's stable ascending sort of the
reversed array, reversed back."""
import numpy as np

from op_cases import OpCase

FLOAT = ("float16", "float32", "float64")
INT = ("int8", "uint8", "int16", "int32", "int64")
ALL = FLOAT + INT + ("bool",)


def argsort_ref(x, axis=-1, descending=False):
    if x.ndim == 0:
        return np.array(0, dtype=np.int64)
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int64)
    r = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    return (x.shape[axis] - 1 - r).astype(np.int64)


def sort_ref(x, axis=-1, descending=False):
    i = argsort_ref(x, axis, descending)
    return (x.copy() if x.ndim == 0 else np.take_along_axis(x, i, axis)), i


def top_k_ref(x, k, sorted=True):
    if x.ndim == 0:
        return x.copy(), np.array(0, dtype=np.int64)
    i = argsort_ref(x, -1, True)[..., :k]
    return np.take_along_axis(x, i, -1), i


def _ties(shape):
    def gen(rng, dtype):
        return [rng.integers(-2, 3, size=shape).astype(dtype)]
    return gen


def _with_nans(shape):
    def gen(rng, dtype):
        a = rng.integers(-3, 4, size=shape).astype(dtype)
        a.flat[rng.choice(a.size, size=a.size // 4, replace=False)] = np.nan
        return [a]
    return gen


CASES = []
for _op, _ref in (("sort", sort_ref), ("argsort", argsort_ref)):
    CASES += [
        OpCase(_op, _ref, [(3, 4, 5)], dtypes=ALL, id="default"),
        OpCase(_op, _ref, [(3, 4, 5)], dict(axis=0), id="axis0"),
        OpCase(_op, _ref, [(3, 4, 5)], dict(axis=-2, descending=True), id="desc"),
        OpCase(_op, _ref, _ties((5, 30)), dict(axis=1), dtypes=ALL, id="ties"),
        OpCase(_op, _ref, _ties((30, 5)), dict(axis=0, descending=True), dtypes=ALL, id="ties_desc"),
        OpCase(_op, _ref, _with_nans((6, 20)), dict(axis=1), dtypes=FLOAT, id="nan"),
        OpCase(_op, _ref, _with_nans((20, 6)), dict(axis=0, descending=True), dtypes=FLOAT,
               id="nan_desc"),
        OpCase(_op, _ref, [()], id="0d"),
        OpCase(_op, _ref, [(0, 3)], dict(axis=0), id="empty"),
        OpCase(_op, _ref, [(3, 0)], dict(axis=0), id="empty_axis"),
        OpCase(_op, _ref, [(300, 301)], dict(axis=1), id="large"),
        OpCase(_op, _ref, _ties((300, 301)), dict(axis=0, descending=True), dtypes=("float32", "int32"),
               id="large_ties"),
    ]

CASES += [
    OpCase("top_k", top_k_ref, [(3, 4, 10)], dict(k=3), dtypes=ALL),
    OpCase("top_k", top_k_ref, [(10,)], dict(k=10), id="k_eq_n"),
    OpCase("top_k", top_k_ref, [(4, 6)], dict(k=0), id="k0"),
    OpCase("top_k", top_k_ref, [(4, 6)], dict(k=2, sorted=True), id="sorted"),
    OpCase("top_k", top_k_ref, _ties((6, 30)), dict(k=7), dtypes=ALL, id="ties"),
    OpCase("top_k", top_k_ref, _with_nans((6, 20)), dict(k=8), dtypes=FLOAT, id="nan"),
    OpCase("top_k", top_k_ref, [()], dict(k=1), id="0d"),
    OpCase("top_k", top_k_ref, [(0, 5)], dict(k=2), id="empty"),
    OpCase("top_k", top_k_ref, [(3, 0)], dict(k=0), id="empty_axis"),
    OpCase("top_k", top_k_ref, [(300, 301)], dict(k=5), id="large"),
]
