"""Matmul thread policies (kernels/cpu/dnnl_matmul.cc). A^T B with a long reduction is split
along K across the threads, each part a one-thread oneDNN call and the partial products summed
(kSplitMinK): equal to numpy in float64 and to the one-thread path, on odd sizes, padded
operands (rows of 2 KiB), both b layouts, the weight gradient of a Dense layer in graph mode,
and sizes that must not split. Small-dimension matmuls (the MLP's classifier) on two threads."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops


def operands(m, k, n, tb, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m)).astype(np.float32)  # stored transposed
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    return a, b


def reference(a, b, tb):
    return a.astype(np.float64).T @ (b.T if tb else b).astype(np.float64)


# (m, k, n, transpose_b): split shapes (K >= 1024, even), 2 KiB rows (m or n = 512: padded
# copies), and K odd or short (no split).
SHAPES = [(13, 1026, 7, False), (128, 2048, 128, False), (512, 1024, 33, False),
          (31, 2048, 512, False), (17, 1030, 9, True), (64, 1025, 40, False),
          (40, 1000, 24, False)]


@pytest.mark.parametrize("m,k,n,tb", SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_equals_numpy(m, k, n, tb, threads):
    mycel.set_context(num_threads=threads)
    a, b = operands(m, k, n, tb)
    got = ops.MatMul(transpose_a=True, transpose_b=tb)(Tensor(a), Tensor(b)).asnumpy()
    want = reference(a, b, tb)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * np.sqrt(k))


def test_two_threads_equal_one_thread():
    a, b = operands(96, 2048, 80, False, seed=1)
    out = {}
    for threads in (1, 2):
        mycel.set_context(num_threads=threads)
        mm = ops.MatMul(transpose_a=True)
        out[threads] = [mm(Tensor(a), Tensor(b)).asnumpy() for _ in range(3)]
    for r in out[2]:  # repeated calls reuse the partial buffers: nothing left over
        np.testing.assert_array_equal(r, out[2][0])
    np.testing.assert_allclose(out[2][0], out[1][0], rtol=1e-5, atol=1e-4)


class Head(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(24, 10)

    def construct(self, x):
        return self.fc(x)


def test_dense_weight_gradient_in_graph_mode():
    # dW = dy^T x over 2048 rows: the split path inside a compiled gradient, against numpy.
    mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=2)
    mycel.set_seed(0)
    net = Head()
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2048, 24)).astype(np.float32)
    dy = rng.standard_normal((2048, 10)).astype(np.float32)

    class Loss(nn.Cell):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def construct(self, x, dy):
            return (self.net(x) * dy).sum()

    grads = mycel.grad(Loss(net), grad_position=None, weights=net.trainable_params())(
        Tensor(x), Tensor(dy))
    dw, db = grads[0].asnumpy(), grads[1].asnumpy()
    np.testing.assert_allclose(dw, dy.astype(np.float64).T @ x.astype(np.float64), rtol=2e-4,
                               atol=2e-3)
    np.testing.assert_allclose(db, dy.astype(np.float64).sum(0), rtol=2e-4, atol=2e-3)


@pytest.mark.parametrize("m,k,n,ta,tb", [(128, 10, 512, False, False), (10, 128, 512, True, False),
                                         (128, 512, 10, False, True), (16, 300, 17, False, False),
                                         (17, 2000, 16, True, False)])
def test_small_dimension_matmuls_equal_numpy(m, k, n, ta, tb):
    # A dimension of at most 16: split by oneDNN like any other (no one-thread rule).
    mycel.set_context(num_threads=2)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    got = ops.MatMul(transpose_a=ta, transpose_b=tb)(Tensor(a), Tensor(b)).asnumpy()
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * np.sqrt(k))
