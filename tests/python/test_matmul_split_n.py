"""Matmul split along N (kernels/cpu/dnnl_matmul.cc, MYCEL_MATMUL_SPLIT_N): a float32 2-d
matmul with b not transposed and a small a runs as one one-thread oneDNN call per thread on its
columns of b and c. Against numpy in float64 at 1, 2 and 3 threads (3 threads: 768 columns split
in three, 512 not split), with the post-ops graph mode fuses into it (relu on the split; a row
add, which oneDNN would run on its reference kernel split, on the unsplit primitive), a Dense
layer's dx in a compiled gradient (the MLP's dx2), repeated calls, and the switch off."""
import os

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops


def operands(m, k, n, ta=False, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return a, b


def reference(a, b, ta=False):
    return (a.T if ta else a).astype(np.float64) @ b.astype(np.float64)


# (m, k, n, transpose_a): the MLP's dx2; 3-way splits of 768 and 1536 columns; a transposed; 2 KiB
# rows of b; shapes that stay on oneDNN's own split (n not a multiple of 16 per thread, k short,
# a too large for the split).
SHAPES = [(128, 512, 512, False), (64, 300, 768, False), (96, 256, 1536, True),
          (33, 784, 512, False), (128, 512, 520, False), (128, 100, 512, False),
          (512, 512, 512, False)]


@pytest.mark.parametrize("m,k,n,ta", SHAPES)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_equals_numpy(m, k, n, ta, threads):
    mycel.set_context(num_threads=threads)
    a, b = operands(m, k, n, ta)
    mm = ops.MatMul(transpose_a=ta)
    got = [mm(Tensor(a), Tensor(b)).asnumpy() for _ in range(2)]
    np.testing.assert_allclose(got[0], reference(a, b, ta), rtol=2e-4, atol=2e-4 * np.sqrt(k))
    np.testing.assert_array_equal(got[1], got[0])  # the prepared calls run again alike


def test_switch_off_gives_the_same_values():
    mycel.set_context(num_threads=2)
    a, b = operands(128, 512, 512, seed=3)
    on = ops.matmul(Tensor(a), Tensor(b)).asnumpy()
    os.environ["MYCEL_MATMUL_SPLIT_N"] = "0"  # read when a launch is first prepared
    off = ops.matmul(Tensor(a), Tensor(b)).asnumpy()
    np.testing.assert_allclose(on, off, rtol=1e-5, atol=1e-4)


class ReluHead(nn.Cell):
    """relu(x @ w (+ bias)): graph mode fuses relu (and the row add) into the matmul's post-ops."""

    def __init__(self, w, bias):
        super().__init__()
        self.w = mycel.Parameter(Tensor(w), name="w")
        self.bias = None if bias is None else mycel.Parameter(Tensor(bias), name="bias")

    def construct(self, x):
        y = ops.matmul(x, self.w)
        if self.bias is not None:
            y = y + self.bias
        return ops.relu(y)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("with_bias", [False, True])
def test_relu_and_row_add_post_ops_in_graph_mode(threads, with_bias):
    mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=threads)
    a, b = operands(128, 512, 768, seed=4)
    bias = np.random.default_rng(5).standard_normal(768).astype(np.float32) if with_bias else None
    net = ReluHead(b, bias)
    want = np.maximum(reference(a, b) + (bias if with_bias else 0), 0)
    for _ in range(2):
        got = net(Tensor(a)).asnumpy()
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * np.sqrt(512))


class Layer(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(512, 512)

    def construct(self, x):
        return self.fc(x)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_dense_input_gradient_in_graph_mode(threads):
    # dx = dy W (W stored out x in: b not transposed), the MLP's dx2, inside a compiled gradient.
    mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=threads)
    mycel.set_seed(0)
    net = Layer()
    rng = np.random.default_rng(6)
    x = rng.standard_normal((128, 512)).astype(np.float32)
    dy = rng.standard_normal((128, 512)).astype(np.float32)

    class Loss(nn.Cell):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def construct(self, x, dy):
            return (self.net(x) * dy).sum()

    dx = mycel.grad(Loss(net))(Tensor(x), Tensor(dy)).asnumpy()
    w = net.fc.weight.asnumpy().astype(np.float64)
    np.testing.assert_allclose(dx, dy.astype(np.float64) @ w, rtol=2e-4, atol=2e-3)
