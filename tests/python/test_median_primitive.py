"""ops.Median (MindSpore's math_ops.Median) against numpy, eagerly and compiled, and primitives
configured inside compiled code from a function's scalar parameters (MindSpore treats scalar
inputs of a graph as compile-time values)."""
import numpy as np
import pytest

import mycel
from mycel import nn, ops


def lower_median(a, axis, ignore_nan):
    """numpy reference: (values, a per-slice predicate the index must satisfy)."""
    a = np.moveaxis(a, axis, -1)
    out = np.empty(a.shape[:-1], a.dtype)
    for idx in np.ndindex(*a.shape[:-1]):
        row = a[idx]
        nums = np.sort(row[~np.isnan(row)]) if np.issubdtype(a.dtype, np.floating) else np.sort(row)
        if len(nums) < len(row) and not ignore_nan:
            out[idx] = np.nan
        elif len(nums) == 0:
            out[idx] = np.nan
        else:
            out[idx] = nums[(len(nums) - 1) // 2]
    return out


def check_indices(x, axis, keep, values, indices):
    i = indices.asnumpy()
    if not keep:
        i = np.expand_dims(i, axis)
    picked = np.take_along_axis(x, i, axis)
    np.testing.assert_array_equal(picked, np.expand_dims(values, axis) if not keep else values)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("axis,keep", [(0, False), (1, True), (-1, False)])
def test_median_axis_matches_numpy(dtype, axis, keep):
    rng = np.random.default_rng(0)
    x = rng.permutation(60).reshape(3, 4, 5).astype(dtype)  # distinct values: one right index
    v, i = ops.Median(axis=axis, keep_dims=keep)(mycel.Tensor(x))
    want = lower_median(x, axis, False)
    want = np.expand_dims(want, axis) if keep else want
    assert v.dtype == mycel.Tensor(x).dtype and i.dtype == mycel.int64
    np.testing.assert_array_equal(v.asnumpy(), want)
    check_indices(x, axis, keep, v.asnumpy(), i)


@pytest.mark.parametrize("ignore_nan", [False, True])
def test_median_nan(ignore_nan):
    x = np.array([[3, np.nan, 2, 0, 5, 1], [1, 2, 3, 4, 9, 8], [np.nan] * 6], np.float32)
    v, i = ops.Median(axis=1, ignore_nan=ignore_nan)(mycel.Tensor(x))
    np.testing.assert_array_equal(v.asnumpy(), lower_median(x, 1, ignore_nan))
    check_indices(x, 1, False, v.asnumpy(), i)  # a NaN median points at a NaN


def test_median_global_and_empty():
    x = np.array([[3, np.nan, 2], [0, 5, 1]], np.float32)
    v, _ = ops.Median(global_median=True)(mycel.Tensor(x))
    assert v.shape == () and np.isnan(v.asnumpy())
    v, i = ops.Median(global_median=True, ignore_nan=True)(mycel.Tensor(x))
    assert float(v.asnumpy()) == 2.0 and x.reshape(-1)[int(i.asnumpy())] == 2.0
    v, _ = ops.Median(global_median=True)(mycel.Tensor(np.zeros((2, 0), np.float32)))
    assert np.isnan(v.asnumpy())
    v, _ = ops.Median(global_median=True)(mycel.Tensor(np.zeros((2, 0), np.int32)))
    assert int(v.asnumpy()) == 0
    v, i = ops.Median(axis=1)(mycel.Tensor(np.zeros((1, 1, 1, 0), np.float32)))
    assert v.shape == (1, 1, 0) and i.shape == (1, 1, 0)


def test_median_bad_input():
    with pytest.raises(ValueError, match=r"Median: argument 'axis' must be in \[-2, 2\)"):
        ops.Median(axis=2)(mycel.Tensor(np.zeros((2, 3), np.float32)))
    with pytest.raises(TypeError, match="Median: input 'x' must be"):
        ops.Median()(mycel.Tensor(np.zeros((2,), np.bool_)))
    with pytest.raises(TypeError, match="Median: argument 'keep_dims' must be a bool"):
        ops.Median(keep_dims=1)


@pytest.fixture
def graph_mode():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    yield
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


@mycel.jit
def median_of(x, global_median=False, axis=0, ignore_nan=False):
    op = ops.Median(global_median=global_median, axis=axis, ignore_nan=ignore_nan)
    return op(x)


@mycel.jit
def summed(x, keep):
    return ops.ReduceSum(keep_dims=keep)(x, 1)


class MedianCell(nn.Cell):
    def construct(self, x, axis=0, ignore_nan=False):
        return ops.Median(axis=axis, ignore_nan=ignore_nan)(x)


def test_primitive_configured_from_parameters_in_graph_mode(graph_mode):
    x = np.array([[3, np.nan, 2, 0, 5], [1, 2, 3, 4, 9]], np.float32)
    for kwargs in ({}, {"axis": 1}, {"axis": 1, "ignore_nan": True}, {"global_median": True, "ignore_nan": True}):
        got = median_of(mycel.Tensor(x), **kwargs)
        want = (lower_median(x.reshape(-1), 0, kwargs.get("ignore_nan", False)) if kwargs.get("global_median")
                else lower_median(x, kwargs.get("axis", 0), kwargs.get("ignore_nan", False)))
        np.testing.assert_array_equal(got[0].asnumpy(), want)
    v, _ = MedianCell()(mycel.Tensor(x), 1, True)
    np.testing.assert_array_equal(v.asnumpy(), lower_median(x, 1, True))
    # A registry primitive configured from a parameter: each value compiles its own graph.
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert summed(mycel.Tensor(y), True).shape == (2, 1)
    np.testing.assert_allclose(summed(mycel.Tensor(y), False).asnumpy(), y.sum(1))


@mycel.jit
def median_with_tensor_axis(x, axis):
    return ops.Median(axis=axis)(x)


def test_primitive_attribute_known_only_at_run_time_is_refused(graph_mode):
    x = mycel.Tensor(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match=r"Median\(\.\.\.\): keyword argument 'axis' \(i64\[\]\) is only known at run time"):
        median_with_tensor_axis(x, mycel.Tensor(np.array(1)))
