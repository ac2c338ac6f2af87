"""ops.Median (MindSpore's math_ops.Median) against numpy (compiled, configured from a function's
parameters: test_graph_made_objects.py)."""
import numpy as np
import pytest

import mycel
from mycel import ops


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
