"""Softmax and log_softmax over short last-axis rows of a small float32 tensor run as a loop with
vm_exp / vm_log (kernels/cpu/softmax_rows.cc) instead of oneDNN: against numpy in float64, eager
and graph mode, 1, 2 and 3 threads, rows with -inf, inf and NaN, and the sizes around the rule's
edges (len 64 / 65, 4096 / 4097 elements, which go to oneDNN)."""
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


SHAPES = [(128, 10), (3, 64), (5, 1), (7, 3, 5), (64, 64), (1, 65), (4097,), (4096,), (41, 100)]


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
            # oneDNN's log_softmax (rows over 64, or over 4096 elements) is good to ~4e-6
            loop = shape[-1] <= 64 and x.size <= 4096
            atol = (2e-6 if loop else 1e-5) if log else 1e-7
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


def test_float64_and_other_axes_unchanged():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 10))
    np.testing.assert_allclose(ops.softmax(Tensor(x), -1).asnumpy(), _softmax(x, False), rtol=1e-12)
    y = rng.standard_normal((10, 16)).astype(np.float32)
    want = _softmax(y.T, False).T
    np.testing.assert_allclose(ops.softmax(Tensor(y), 0).asnumpy(), want, rtol=2e-6, atol=1e-7)
