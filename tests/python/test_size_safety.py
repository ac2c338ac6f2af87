"""The safety net for sizes and integer arithmetic (issue 21): every inferred shape is checked in
one place before anything is allocated (eager, graph and plan time), window arithmetic with huge
padding or dilation is checked, a huge tril/triu diagonal acts as the matrix edge, and Python int
arithmetic in compiled code is exact or a located error, never wrapped around."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, ops

BIG = 2 ** 62


@pytest.fixture(params=[mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def mode(request):
    mycel.set_context(mode=request.param)
    yield request.param
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def run(fn, *args):
    """fn eagerly, or compiled when the mode is GRAPH_MODE."""
    if mycel.get_context("mode") == mycel.GRAPH_MODE:
        return mycel.jit(fn)(*args)
    return fn(*args)


def zeros_huge(x):
    return ops.zeros((2 ** 40, 2 ** 40), mycel.float32) + x


def test_huge_output_is_refused_before_allocation(mode):
    with pytest.raises(ValueError, match=r"\[zeros\] (output 0 would have shape .*more than 2\*\*56 elements|result shape .* has too many elements)"):
        run(zeros_huge, Tensor(np.ones((1,), np.float32)))


def tile_huge(x):
    return ops.tile(x, (2 ** 31, 2 ** 31))


def test_overflowing_product_of_dims_is_refused(mode):
    with pytest.raises(ValueError, match=r"\[tile\].*(more than 2\*\*56 elements|too many elements)"):
        run(tile_huge, Tensor(np.ones((4, 4), np.float32)))


@pytest.mark.parametrize("attrs", [dict(pad_mode="pad", pad=BIG), dict(dilation=BIG),
                                   dict(pad_mode="pad", pad=2 ** 63 - 1)])
def test_conv_window_arithmetic_overflow_is_an_error(attrs):
    x = Tensor(np.ones((1, 1, 5, 5), np.float32))
    w = Tensor(np.ones((1, 1, 3, 3), np.float32))
    with pytest.raises(ValueError, match=r"\[conv2d\]"):
        ops.conv2d(x, w, **attrs)


@pytest.mark.parametrize("diagonal", [BIG, -BIG, 2 ** 63 - 1, -(2 ** 63)])
def test_tril_triu_huge_diagonal_acts_as_the_edge(diagonal):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = Tensor(a)
    np.testing.assert_array_equal(ops.tril(x, diagonal).asnumpy(), np.tril(a, np.clip(diagonal, -10, 10)))
    np.testing.assert_array_equal(ops.triu(x, diagonal).asnumpy(), np.triu(a, np.clip(diagonal, -10, 10)))


def shape_product(x):
    return x * (x.shape[0] * BIG * 4)


def test_compile_time_int_overflow_is_a_located_error():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        with pytest.raises(ValueError, match=r"integer overflow"):
            mycel.jit(shape_product)(Tensor(np.ones((3,), np.float32)))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def grow_counter(x):
    i = 1
    while x.sum() > 0:
        i = i * 3037000499
        x = x - 1.0
    return x, i


def pow_counter(x):
    i = 3
    k = 0
    while x.sum() > 0:
        k = k + 19
        x = x - 1.0
    return x, i ** k


def test_run_time_int_arithmetic_is_exact_or_an_error():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        f = mycel.jit(grow_counter)
        _, i = f(Tensor(np.full((1,), 1.5, np.float32)))  # two steps: 3037000499**2 fits
        assert int(i) == 3037000499 ** 2
        with pytest.raises(ValueError, match=r"\[scalar_mul\] integer overflow"):
            f(Tensor(np.full((1,), 2.5, np.float32)))  # three steps do not
        g = mycel.jit(pow_counter)
        _, p = g(Tensor(np.full((1,), 1.5, np.float32)))  # 3 ** 38: exact, not through a double
        assert int(p) == 3 ** 38
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_tile_to_an_empty_output_allocates_nothing():
    """Found by the op fuzzer under ASan: an empty output with a huge axis built a 2**32-entry
    offset table (32 GB) before copying nothing. The result matches numpy's shape."""
    x = np.zeros((0, 2), np.float32)
    out = ops.tile(Tensor(x), (2, 3, 2**31))
    assert tuple(out.shape) == np.tile(x, (2, 3, 2**31)).shape == (2, 0, 2**32)
    assert out.asnumpy().size == 0
