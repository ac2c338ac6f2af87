"""A global mean (or sum) over small planes and its gradient's broadcast back
(kernels/cpu/reduce.cc's short runs, ops/shape.cc's repeat_broadcast): ResNet-18's final 4x4
pooling of (32, 512) planes. Runs under 32 elements are added in order into one float
accumulator, several outputs at a time: equal bit for bit to the in-order float32 sum divided by
the count (numpy, one add at a time), for float32 and bfloat16 (the float result rounded once),
and exactly numpy's for integers; an (N, C, 1, 1) tensor broadcast to (N, C, H, W) equals numpy's
broadcast_to for every item size, and the mean's gradient in graph mode is 1 / (H * W)."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, ops
from bf16_reference import bf16_round

RNG = np.random.default_rng(43)


def in_order_mean(x, hw):
    """float32 sums of the last axis one add at a time, divided in float32."""
    s = np.zeros(x.shape[:-1], np.float32)
    for p in range(x.shape[-1]):
        s = (s + x[..., p]).astype(np.float32)
    return (s / np.float32(hw)).astype(np.float32)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", [(32, 512, 4, 4), (3, 17, 1, 1), (2, 5, 3, 7), (1, 40, 5, 6),
                                   (4, 9, 8, 8)])
def test_small_plane_mean_is_the_in_order_sum(shape, dtype, threads):
    before = mycel.get_context("num_threads")
    mycel.set_context(num_threads=threads)
    try:
        n, c, h, w = shape
        x = (RNG.standard_normal(shape) * 3 + 1).astype(np.float32)
        if dtype == "bfloat16":
            x = bf16_round(x)
        t = Tensor(x, dtype=mycel.bfloat16 if dtype == "bfloat16" else mycel.float32)
        for keep in (False, True):
            got = ops.mean(t, (2, 3), keep).asnumpy().astype(np.float32)
            flat = x.reshape(n, c, h * w)
            if h * w < 32:  # the short-run path: in order, bit for bit
                want = in_order_mean(flat, h * w)
                if dtype == "bfloat16":
                    want = bf16_round(want)
                np.testing.assert_array_equal(got.reshape(n, c), want)
            ref = flat.astype(np.float64).mean(-1)
            tol = 2.0 ** -8 if dtype == "bfloat16" else 1e-6
            np.testing.assert_allclose(got.reshape(n, c), ref, rtol=tol, atol=tol)
    finally:
        mycel.set_context(num_threads=before)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_small_plane_sum_of_other_dtypes_equals_numpy(dtype):
    x = RNG.integers(-50, 50, (6, 7, 3, 5)).astype(dtype)
    np.testing.assert_array_equal(ops.sum(Tensor(x), (2, 3)).asnumpy(), x.sum((2, 3)))
    np.testing.assert_allclose(ops.mean(Tensor(x), (2, 3)).asnumpy(), x.mean((2, 3)), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float16, np.float32, np.int64,
                                   np.complex128])
@pytest.mark.parametrize("src,shape", [((4, 6, 1, 1), (4, 6, 3, 5)), ((3, 1), (3, 7)),
                                       ((2, 3, 1), (2, 3, 9)), ((1, 6, 1, 1), (4, 6, 2, 2)),
                                       ((2, 1, 3), (2, 5, 3))])
def test_trailing_ones_broadcast_equals_numpy(dtype, src, shape):
    x = (RNG.standard_normal(src) * 10).astype(dtype)
    got = ops.broadcast_to(Tensor(x), shape).asnumpy()
    np.testing.assert_array_equal(got, np.broadcast_to(x, shape))
    like = Tensor(np.zeros(shape, np.float32))
    np.testing.assert_array_equal(ops.broadcast_like(Tensor(x), like).asnumpy(),
                                  np.broadcast_to(x, shape))


def test_mean_gradient_in_graph_mode():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        x = Tensor(RNG.standard_normal((8, 16, 4, 4)).astype(np.float32))
        wgt = RNG.standard_normal((8, 16)).astype(np.float32)
        g = mycel.grad(lambda t: (ops.mean(t, (2, 3)) * Tensor(wgt)).sum())(x).asnumpy()
        np.testing.assert_allclose(g, np.broadcast_to((wgt / 16)[:, :, None, None], g.shape),
                                   rtol=1e-6)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
