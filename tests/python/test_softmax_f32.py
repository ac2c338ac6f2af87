"""float32 softmax, log_softmax and softmax's gradient over the last axis run as row loops with
vm_exp / vm_log in AVX-512 or AVX2 lanes (kernels/cpu/softmax_f32.cc) instead of oneDNN: against
numpy in float64, eager and graph mode, 1, 2 and 3 threads, rows with -inf, inf and NaN (in every
lane position and in a row's tail), rows shorter than a vector, odd and long, and tensors small
enough for one thread and large enough for all."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops


def _softmax(x, log):
    x = x.astype(np.float64)
    m = np.max(x, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x - m)
        s = e.sum(axis=-1, keepdims=True)
        return (x - m - np.log(s)) if log else e / s


class Soft(nn.Cell):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def construct(self, x):
        if self.log:
            return ops.log_softmax(x, -1)
        return ops.softmax(x, -1)


SHAPES = [(128, 10), (3, 64), (5, 1), (7, 3, 5), (64, 64), (1, 65), (4097,), (4096,), (41, 100),
          (64, 8, 128), (300, 37), (9, 1000), (2, 17, 16)]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_matches_numpy(threads, log, mode):
    old = mycel.get_context("num_threads")
    mycel.set_context(mode=mycel.GRAPH_MODE if mode == "graph" else mycel.PYNATIVE_MODE,
                      num_threads=threads)
    try:
        rng = np.random.default_rng(7)
        for shape in SHAPES:
            x = (rng.standard_normal(shape) * 4).astype(np.float32)
            got = Soft(log)(Tensor(x)).asnumpy()
            # log_softmax: x - m - log(s), whose absolute error grows with |x - m| (up to ~30)
            atol = 1e-5 if log else 1e-7
            np.testing.assert_allclose(got, _softmax(x, log), rtol=2e-6, atol=atol,
                                       err_msg=f"shape {shape}")
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE, num_threads=old)


@pytest.mark.parametrize("log", [False, True])
def test_non_finite_rows(log):
    x = np.array([[1.0, 2.0, 3.0],
                  [-np.inf, -np.inf, -np.inf],
                  [-np.inf, 0.0, 1.0],
                  [np.inf, 0.0, 1.0],
                  [np.nan, 0.0, 1.0],
                  [-1e30, 0.0, 1e-30]], np.float32)
    got = Soft(log)(Tensor(x)).asnumpy()
    want = _softmax(x, log)
    np.testing.assert_allclose(got[[0, 2, 5]], want[[0, 2, 5]], rtol=2e-6, atol=1e-7)
    assert np.isnan(got[1]).all() and np.isnan(want[1]).all()  # all -inf: NaN, as numpy
    assert np.isnan(got[3]).all() and np.isnan(want[3]).all()  # +inf: inf - inf
    assert np.isnan(got[4]).all()


@pytest.mark.parametrize("len_", [16, 37, 128])
@pytest.mark.parametrize("log", [False, True])
def test_non_finite_in_every_lane(len_, log):
    """A NaN, an inf or a -inf at each position of a row (vector lanes, the tail past them): the
    vector maximum keeps or drops a NaN by its lane, and either way the row must come out NaN;
    an inf makes the row NaN (inf - inf); a -inf is a weight of 0 (-inf for log_softmax)."""
    rng = np.random.default_rng(len_)
    base = rng.standard_normal((len_, len_)).astype(np.float32)
    for bad in (np.nan, np.inf, -np.inf):
        x = base.copy()
        x[np.arange(len_), np.arange(len_)] = bad  # row i has it at position i
        got = Soft(log)(Tensor(x)).asnumpy()
        if bad == -np.inf:
            np.testing.assert_allclose(got, _softmax(x, log), rtol=2e-6, atol=1e-5 if log else 1e-7)
        else:
            assert np.isnan(got).all(), (bad, np.argwhere(~np.isnan(got))[:5])


class SoftGrad(nn.Cell):
    def __init__(self, w):
        super().__init__()
        self.w = Tensor(w)

    def construct(self, x):
        return (ops.softmax(x, -1) * self.w).sum()


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("mode", ["eager", "graph"])
@pytest.mark.parametrize("shape", [(128, 10), (64, 8, 128), (300, 37), (3, 1000), (5, 1)])
def test_gradient_matches_numpy(threads, mode, shape):
    """dx = y * (dy - sum(y * dy)) over each row (softmax_grad_f32_last_axis)."""
    old = mycel.get_context("num_threads")
    mycel.set_context(mode=mycel.GRAPH_MODE if mode == "graph" else mycel.PYNATIVE_MODE,
                      num_threads=threads)
    try:
        rng = np.random.default_rng(len(shape) + shape[-1])
        x = (rng.standard_normal(shape) * 3).astype(np.float32)
        w = rng.standard_normal(shape).astype(np.float32)
        got = ops.GradOperation()(SoftGrad(w))(Tensor(x)).asnumpy()
        y = _softmax(x, False)
        dy = w.astype(np.float64)
        want = y * (dy - (y * dy).sum(-1, keepdims=True))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.abs(want).max())
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE, num_threads=old)


def test_float64_and_other_axes_unchanged():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 10))
    np.testing.assert_allclose(ops.softmax(Tensor(x), -1).asnumpy(), _softmax(x, False), rtol=1e-12)
    y = rng.standard_normal((10, 16)).astype(np.float32)
    want = _softmax(y.T, False).T
    np.testing.assert_allclose(ops.softmax(Tensor(y), 0).asnumpy(), want, rtol=2e-6, atol=1e-7)
