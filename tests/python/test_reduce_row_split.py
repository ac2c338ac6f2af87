"""Reductions of at least 64 rows into at most 4096 outputs (a bias gradient: sum over the batch
of a (rows, features) tensor) are split by rows across the threads, each thread summing the rows
an elementwise kernel's same thread wrote, and the partials merged (kernels/cpu/reduce.cc,
kRowSplitMaxOut): equal to numpy for sum, mean, max, min and prod on odd sizes, at 1 and 2
threads, with NaN in either thread's rows, and the bias gradient of a Dense layer in graph mode."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops


# (shape, axis): row split; at the bounds (64 rows, 4096 outputs); just past them (column split);
# an outer dim (column split).
SHAPES = [((128, 512), 0), ((129, 257), 0), ((64, 600), 0), ((300, 4096), 0), ((63, 700), 0),
          ((65, 4097), 0), ((3, 128, 200), 1), ((1000, 33), 0)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,axis", SHAPES)
def test_row_split_reductions_equal_numpy(shape, axis, threads):
    mycel.set_context(num_threads=threads)
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    t = Tensor(x)
    xd = x.astype(np.float64)
    rows = shape[axis]
    np.testing.assert_allclose(ops.sum(t, axis).asnumpy(), xd.sum(axis), rtol=1e-5,
                               atol=1e-6 * rows)
    np.testing.assert_allclose(ops.mean(t, axis).asnumpy(), xd.mean(axis), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ops.max(t, axis).asnumpy(), x.max(axis))
    np.testing.assert_array_equal(ops.min(t, axis).asnumpy(), x.min(axis))
    near_one = (1.0 + x * 1e-3).astype(np.float32)
    np.testing.assert_allclose(ops.prod(Tensor(near_one), axis).asnumpy(),
                               near_one.astype(np.float64).prod(axis), rtol=1e-4)


def test_row_split_equals_one_thread():
    # The split changes only the order of the additions: within float32 rounding of one thread.
    rng = np.random.default_rng(3)
    x = Tensor(rng.standard_normal((256, 1000)).astype(np.float32) * 100)
    mycel.set_context(num_threads=1)
    one = ops.sum(x, 0).asnumpy()
    mycel.set_context(num_threads=2)
    two = ops.sum(x, 0).asnumpy()
    np.testing.assert_allclose(two, one, rtol=1e-5, atol=1e-3)


def test_nan_propagates_from_either_thread_rows():
    mycel.set_context(num_threads=2)
    x = np.ones((128, 512), np.float32)
    x[100, 3] = np.nan  # in the second thread's rows
    x[10, 5] = np.nan   # in the first's
    for op in (ops.sum, ops.max, ops.min):
        out = op(Tensor(x), 0).asnumpy()
        assert np.isnan(out[3]) and np.isnan(out[5]) and not np.isnan(out[0])


def test_dense_bias_gradient_after_relu_in_graph_mode():
    # The MLP's case: relu's gradient (an elementwise kernel over both threads' rows) then the
    # bias gradient's row sum.
    mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=2)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((128, 96)).astype(np.float32)
    dy = rng.standard_normal((128, 300)).astype(np.float32)
    net = nn.Dense(96, 300)

    class Loss(nn.Cell):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def construct(self, a, d):
            return (ops.relu(self.inner(a)) * d).sum()

    grads = mycel.grad(Loss(net), grad_position=None, weights=net.trainable_params())(
        Tensor(x), Tensor(dy))
    w, b = net.weight.asnumpy().astype(np.float64), net.bias.asnumpy().astype(np.float64)
    z = x.astype(np.float64) @ w.T + b
    dz = dy * (z > 0)
    np.testing.assert_allclose(grads[1].asnumpy(), dz.sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grads[0].asnumpy(), dz.T @ x, rtol=1e-4, atol=1e-3)
