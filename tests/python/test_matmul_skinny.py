"""float32 matmuls with a dimension of at most 16 run as plain loops (kernels/cpu/matmul_skinny.cc):
rows of b along N (M or K small) and dot products (b transposed, N small). Equal to numpy in
float64 and to oneDNN (the same product with the small dimension padded with zeros to 17, which
the loops do not take; over 8M multiply-adds they do not either), on odd sizes, at 1 and 2
threads, with a bias (dense), through NaN, and the gradients of a Dense classifier in graph
mode."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops


def operands(m, k, n, ta, tb, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    return a, b


def reference(a, b, ta, tb):
    return (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)


CASES = [
    # rows of b, few rows of the output (a weight gradient through 10 classes; 5-row blocks of
    # 16 columns, with 1-4 rows left over and a last block under 16 columns)
    (10, 128, 512, True, False), (16, 33, 31, False, False), (3, 200, 33, True, False),
    (1, 1, 1, False, False), (16, 5, 100, True, False), (14, 40, 72, False, False),
    # rows of b, short reduction (dx through 10 classes)
    (128, 10, 512, False, False), (129, 16, 47, False, False), (7, 1, 9, False, False),
    (300, 3, 65, True, False),
    # dot products (a dense layer's 10 outputs)
    (128, 512, 10, False, True), (33, 70, 7, False, True), (5, 1, 16, False, True),
    (1000, 3, 2, False, True),
    # not taken by the loops: oneDNN
    (10, 128, 512, True, True), (17, 17, 17, False, False), (8, 2048, 1024, True, False)]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("m,k,n,ta,tb", CASES)
def test_skinny_matmul_equals_numpy(m, k, n, ta, tb, threads):
    mycel.set_context(num_threads=threads)
    a, b = operands(m, k, n, ta, tb, m * 1000 + k + n)
    got = ops.MatMul(transpose_a=ta, transpose_b=tb)(Tensor(a), Tensor(b)).asnumpy()
    np.testing.assert_allclose(got, reference(a, b, ta, tb), rtol=1e-4, atol=1e-5 * np.sqrt(k))


@pytest.mark.parametrize("m,k,n,ta,tb", CASES[:-3])
def test_skinny_bits_do_not_depend_on_the_thread_count(m, k, n, ta, tb):
    """Each output is summed over k in one order whichever thread computes it and however the
    rows or column blocks are split: 1, 2 and 3 threads give the same bits."""
    a, b = operands(m, k, n, ta, tb, 5)
    op = ops.MatMul(transpose_a=ta, transpose_b=tb)
    outs = []
    for threads in (1, 2, 3):
        mycel.set_context(num_threads=threads)
        outs.append(op(Tensor(a), Tensor(b)).asnumpy())
    for o in outs[1:]:
        np.testing.assert_array_equal(o.view(np.uint32), outs[0].view(np.uint32))


def pad_small(a, b, m, k, n, ta, tb):
    """The same product with its small dimension padded with zeros to 17 (oneDNN's path)."""
    P = 17
    if k <= 16:  # pad K: a gains zero columns, b zero rows
        a = np.concatenate([a, np.zeros((P - k, m) if ta else (m, P - k), np.float32)], 0 if ta else 1)
        b = np.concatenate([b, np.zeros((n, P - k) if tb else (P - k, n), np.float32)], 1 if tb else 0)
        return a, b, slice(None), slice(None)
    if m <= 16:  # pad M: extra output rows, dropped
        a = np.concatenate([a, np.zeros((k, P - m) if ta else (P - m, k), np.float32)], 1 if ta else 0)
        return a, b, slice(0, m), slice(None)
    b = np.concatenate([b, np.zeros((P - n, k) if tb else (k, P - n), np.float32)], 0 if tb else 1)
    return a, b, slice(None), slice(0, n)


@pytest.mark.parametrize("m,k,n,ta,tb", [c for c in CASES if min(c[:3]) <= 16 and c[2] != 1])
def test_skinny_matmul_equals_onednn(m, k, n, ta, tb):
    mycel.set_context(num_threads=2)
    a, b = operands(m, k, n, ta, tb, 11)
    op = ops.MatMul(transpose_a=ta, transpose_b=tb)
    got = op(Tensor(a), Tensor(b)).asnumpy()
    pa, pb, rows, cols = pad_small(a, b, m, k, n, ta, tb)
    plain = op(Tensor(pa), Tensor(pb)).asnumpy()[rows, cols]
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-5 * np.sqrt(k))


@pytest.mark.parametrize("threads", [1, 2])
def test_dense_with_bias_and_ten_outputs(threads):
    mycel.set_context(num_threads=threads)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((129, 512)).astype(np.float32)
    net = nn.Dense(512, 10)
    got = net(Tensor(x)).asnumpy()
    w, bias = net.weight.asnumpy().astype(np.float64), net.bias.asnumpy().astype(np.float64)
    np.testing.assert_allclose(got, x.astype(np.float64) @ w.T + bias, rtol=1e-4, atol=1e-4)


def test_nan_stays_in_its_rows():
    mycel.set_context(num_threads=2)
    a, b = operands(128, 10, 512, False, False, 3)
    a[7, 4] = np.nan
    got = ops.matmul(Tensor(a), Tensor(b)).asnumpy()
    assert np.isnan(got[7]).all() and not np.isnan(np.delete(got, 7, 0)).any()


def test_classifier_gradients_in_graph_mode():
    # The MLP's last layer: forward 128x512x10 (dots), dx 128x10x512 and dW 10x128x512 (rows of b).
    mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=2)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((128, 512)).astype(np.float32)
    dy = rng.standard_normal((128, 10)).astype(np.float32)
    net = nn.Dense(512, 10)

    class Loss(nn.Cell):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def construct(self, a, d):
            return (self.inner(a) * d).sum()

    grads = mycel.grad(Loss(net), grad_position=0, weights=net.trainable_params())(
        Tensor(x), Tensor(dy))
    dx, (dw, db) = grads[0].asnumpy(), (grads[1][0].asnumpy(), grads[1][1].asnumpy())
    w = net.weight.asnumpy().astype(np.float64)
    np.testing.assert_allclose(dx, dy.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, dy.astype(np.float64).T @ x, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(db, dy.astype(np.float64).sum(0), rtol=1e-4, atol=1e-4)
