"""nn family behaviour the op table cannot check: batch_norm's in-place running statistics,
primitive-class forms, and repeated calls reusing cached oneDNN primitives."""
import numpy as np
import pytest

import mycel
from mycel import ops


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 3, 5, 2), (6, 3)])
def test_batch_norm_training_updates_running_stats(dtype, shape):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype) * 2 + 1
    c = shape[1]
    scale, bias = rng.standard_normal(c).astype(dtype), rng.standard_normal(c).astype(dtype)
    rmean, rvar = rng.standard_normal(c).astype(dtype), rng.uniform(0.5, 2, c).astype(dtype)
    mean_t, var_t = mycel.Tensor(rmean), mycel.Tensor(rvar)
    y, saved_mean, saved_invstd = ops.batch_norm(mycel.Tensor(x), mycel.Tensor(scale), mycel.Tensor(bias),
                                                 mean_t, var_t, is_training=True, epsilon=1e-5, momentum=0.2)
    axes = (0,) + tuple(range(2, x.ndim))
    xd = x.astype(np.float64)
    bm, bv = xd.mean(axis=axes), xd.var(axis=axes)
    n = x.size // c
    bshape = (1, c) + (1,) * (x.ndim - 2)
    ref_y = (xd - bm.reshape(bshape)) / np.sqrt(bv.reshape(bshape) + 1e-5) * scale.reshape(bshape) + bias.reshape(bshape)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y.asnumpy(), ref_y, **tol)
    np.testing.assert_allclose(saved_mean.asnumpy(), bm, **tol)
    np.testing.assert_allclose(saved_invstd.asnumpy(), 1 / np.sqrt(bv + 1e-5), **tol)
    # Running statistics: updated in place, with the unbiased batch variance.
    np.testing.assert_allclose(mean_t.asnumpy(), 0.8 * rmean + 0.2 * bm, **tol)
    np.testing.assert_allclose(var_t.asnumpy(), 0.8 * rvar + 0.2 * bv * n / (n - 1), **tol)


def test_batch_norm_inference_leaves_stats_alone():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    rmean, rvar = np.zeros(3, np.float32), np.ones(3, np.float32)
    mean_t, var_t = mycel.Tensor(rmean), mycel.Tensor(rvar)
    y, _, _ = ops.batch_norm(mycel.Tensor(x), mycel.Tensor(np.ones(3, np.float32)),
                             mycel.Tensor(np.zeros(3, np.float32)), mean_t, var_t)
    np.testing.assert_allclose(y.asnumpy(), x / np.sqrt(1 + 1e-5), rtol=1e-6)
    np.testing.assert_array_equal(mean_t.asnumpy(), rmean)
    np.testing.assert_array_equal(var_t.asnumpy(), rvar)


def test_primitive_classes():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
    out = ops.MatMul(transpose_b=True)(mycel.Tensor(a), mycel.Tensor(b))
    np.testing.assert_allclose(out.asnumpy(), a @ b.T, rtol=1e-5, atol=1e-5)
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    out = ops.MaxPool(kernel_size=2, strides=2)(mycel.Tensor(x))
    np.testing.assert_array_equal(out.asnumpy(), x.reshape(1, 2, 3, 2, 3, 2).max(axis=(3, 5)))


def test_repeated_calls_are_consistent():
    """The second call of the same shapes runs the cached primitive; results must not change."""
    rng = np.random.default_rng(4)
    x = mycel.Tensor(rng.standard_normal((2, 4, 9, 9)).astype(np.float32))
    w = mycel.Tensor(rng.standard_normal((8, 4, 3, 3)).astype(np.float32))
    first = ops.conv2d(x, w, pad_mode="same").asnumpy()
    for _ in range(3):
        np.testing.assert_array_equal(ops.conv2d(x, w, pad_mode="same").asnumpy(), first)
