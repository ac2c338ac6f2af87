"""Objects compiled code makes at compile time and then calls with tensors: a primitive configured
from a function's scalar parameters (MindSpore treats a graph's scalar inputs as compile-time
values), a Cell built inside a compiled function; and the errors when that cannot work."""
import numpy as np
import pytest

import mycel
from mycel import nn, ops

from test_median_primitive import lower_median


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


class Scale(nn.Cell):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def construct(self, x):
        return x * self.k


class WithWeight(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = mycel.Parameter(mycel.Tensor(np.ones(3, np.float32)), name="w")

    def construct(self, x):
        return x * self.w


@mycel.jit
def scaled(x, k):
    return Scale(k)(x)


@mycel.jit
def weighted(x):
    return WithWeight()(x)


def test_cell_made_inside_compiled_code(graph_mode):
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(scaled(mycel.Tensor(x), 3).asnumpy(), x * 3)
    np.testing.assert_array_equal(scaled(mycel.Tensor(x), 2.5).asnumpy(), x * 2.5)
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(mycel.vmap(lambda a: Scale(2)(a))(mycel.Tensor(y)).asnumpy(), y * 2)
    with pytest.raises(NotImplementedError, match="the Cell WithWeight reads a Parameter, and it was made inside "
                                                  r"compiled code: create it outside \(in __init__\)"):
        weighted(mycel.Tensor(x))
