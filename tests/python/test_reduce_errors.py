"""Reductions, scans and sorts reject bad axes, attributes and empty inputs with errors that name
the op, and handle the edge cases numpy handles (NaN, inf, ddof >= count) without crashing."""
import warnings

import numpy as np
import pytest

import mycel
from mycel import ops

AXIS_OPS = ["sum", "mean", "prod", "max", "min", "all", "any", "logsumexp", "var", "std"]
SINGLE_AXIS_OPS = ["argmax", "argmin", "cumsum", "sort", "argsort"]


def t(shape=(2, 3), dtype=np.float32):
    return mycel.Tensor(np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape))


@pytest.mark.parametrize("op", AXIS_OPS)
def test_axis_out_of_range(op):
    with pytest.raises(ValueError, match=rf"\[{op}\] axis 2 is out of range .*rank 2"):
        getattr(ops, op)(t(), axis=2)
    with pytest.raises(ValueError, match=rf"\[{op}\] axis -3 .*rank 2"):
        getattr(ops, op)(t(), axis=(0, -3))


@pytest.mark.parametrize("op", AXIS_OPS)
def test_duplicate_axis(op):
    with pytest.raises(ValueError, match=rf"\[{op}\] axis contains axis -1 more than once"):
        getattr(ops, op)(t(), axis=(1, -1))


@pytest.mark.parametrize("op", AXIS_OPS + SINGLE_AXIS_OPS)
def test_axis_wrong_type(op):
    with pytest.raises(TypeError, match=rf"\[{op}\] attribute 'axis'"):
        getattr(ops, op)(t(), axis="a")
    with pytest.raises(TypeError, match=rf"\[{op}\] attribute 'axis'"):
        getattr(ops, op)(t(), axis=1.5)


@pytest.mark.parametrize("op", ["argmax", "argmin", "cumsum", "sort", "argsort"])
def test_single_axis_out_of_range(op):
    with pytest.raises(ValueError, match=rf"\[{op}\] axis 2 is out of range .*rank 2"):
        getattr(ops, op)(t(), axis=2)
    with pytest.raises(ValueError, match=rf"\[{op}\] axis 1 .*rank 0"):
        getattr(ops, op)(mycel.Tensor(np.float32(1)), axis=1)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_single_axis_ops_take_one_int(op):
    with pytest.raises(TypeError, match=rf"\[{op}\] attribute 'axis'"):
        getattr(ops, op)(t(), axis=(0, 1))


def test_cumsum_needs_axis():
    with pytest.raises(TypeError, match=r"\[cumsum\] missing required attribute 'axis'"):
        mycel._mycel.ops.cumsum(t())  # the registry op
    with pytest.raises(TypeError, match=r"cumsum\(\) missing 1 required positional argument: 'axis'"):
        ops.cumsum(t())  # MindSpore's signature (ops/scans.py)


@pytest.mark.parametrize("op", ["keep_dims", "descending"])
def test_bool_attrs_reject_ints(op):
    name = "sum" if op == "keep_dims" else "sort"
    with pytest.raises(TypeError, match=rf"\[{name}\] attribute '{op}'"):
        getattr(ops, name)(t(), **{op: 2})


def test_var_ddof_type():
    with pytest.raises(TypeError, match=r"\[var\] attribute 'ddof'"):
        ops.var(t(), ddof=0.5)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_of_empty(op):
    x = mycel.Tensor(np.zeros((0, 3), np.float32))
    with pytest.raises(ValueError, match=rf"\[{op}\] .*empty axis.*\(0, 3\)"):
        getattr(ops, op)(x)
    with pytest.raises(ValueError, match=rf"\[{op}\]"):
        getattr(ops, op)(x, axis=0)
    assert getattr(ops, op)(x, axis=1).shape == (0,)  # nothing reduced over an empty axis


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_of_empty(op):
    with pytest.raises(ValueError, match=rf"\[{op}\] .*empty axis"):
        getattr(ops, op)(mycel.Tensor(np.zeros((3, 0), np.float32)))
    with pytest.raises(ValueError, match=rf"\[{op}\]"):
        getattr(ops, op)(mycel.Tensor(np.zeros((0,), np.int32)), axis=0)


def test_top_k_k_too_large():
    with pytest.raises(ValueError, match=r"\[top_k\] k \(4\) must be in \[0, 3\].*\(2, 3\)"):
        ops.top_k(t(), k=4)
    with pytest.raises(ValueError, match=r"\[top_k\] k \(-1\)"):
        ops.top_k(t(), k=-1)
    with pytest.raises(ValueError, match=r"\[top_k\] k \(2\) must be 1 for a 0-d"):
        ops.top_k(mycel.Tensor(np.float32(1)), k=2)
    with pytest.raises(TypeError, match=r"\[top_k\] missing required attribute 'k'"):
        ops.top_k(t())


def test_ddof_at_least_count_gives_inf_or_nan():
    x = mycel.Tensor(np.array([[1.0, 2.0], [3.0, 3.0]], np.float32))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = np.var(np.array([[1.0, 2.0], [3.0, 3.0]]), axis=1, ddof=2)
    np.testing.assert_array_equal(ops.var(x, axis=1, ddof=2).asnumpy(), ref.astype(np.float32))
    assert np.isinf(ops.std(x, axis=1, ddof=7).asnumpy()[0])


def test_aliases_and_single_int_axis():
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    got = ops.sum(mycel.Tensor(x), dim=1, keepdim=True).asnumpy()
    np.testing.assert_allclose(got, x.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(ops.ReduceSum(axis=0)(mycel.Tensor(x)).asnumpy(), x.sum(0), rtol=1e-6)


def test_sum_of_huge_float32_is_accurate():
    """Pairwise summation: 2**24 ones sum exactly, where a naive float32 loop stops at 2**24."""
    x = mycel.Tensor(np.ones(2**24 + 1000, np.float32))
    assert ops.sum(x).asnumpy() == np.float32(2**24 + 1000)
    assert ops.mean(x).asnumpy() == np.float32(1.0)


def test_integer_sums_wrap_like_numpy():
    a = np.full(10, 2**62, np.int64)
    assert ops.sum(mycel.Tensor(a)).asnumpy() == a.sum()
    b = np.full(100, 3, np.int64)
    assert ops.prod(mycel.Tensor(b)).asnumpy() == b.prod()
