"""Pooling with MindSpore's ceil_mode, divisor_override and count_include_pad, against a numpy
loop with PyTorch's/MindSpore's window rules; kernel_size and stride read back as given."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn

X = np.random.default_rng(2).normal(size=(2, 3, 7, 8)).astype(np.float32)


def _ref(x, k, s, p, ceil_mode, mode, count_include_pad=True, divisor=None):
    n, c, h, w = x.shape

    def out_len(size):
        span = size + 2 * p - k
        o = -(-span // s) + 1 if ceil_mode else span // s + 1
        if ceil_mode and (o - 1) * s >= size + p:
            o -= 1
        return o
    oh, ow = out_len(h), out_len(w)
    out = np.zeros((n, c, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s - p, j * s - p
            h1, w1 = min(h0 + k, h + p), min(w0 + k, w + p)
            win = x[:, :, max(h0, 0):min(h1, h), max(w0, 0):min(w1, w)]
            if mode == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                d = divisor or ((h1 - h0) * (w1 - w0) if count_include_pad else win.shape[2] * win.shape[3])
                out[:, :, i, j] = win.sum(axis=(2, 3)) / d
    return out


CASES = [(3, 2, 0, True, True, None), (3, 2, 1, True, True, None), (3, 2, 1, True, False, None),
         (2, 2, 0, False, True, 3), (3, 2, 1, False, True, 5), (3, 3, 0, True, True, 4), (2, 3, 1, True, True, None)]


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
@pytest.mark.parametrize("k,s,p,ceil,include,divisor", CASES)
def test_pooling_options_vs_numpy(mode, k, s, p, ceil, include, divisor):
    mycel.set_context(mode=mode)
    try:
        pad_mode = "pad" if p else "valid"
        avg = nn.AvgPool2d(k, s, pad_mode, p, ceil_mode=ceil, count_include_pad=include, divisor_override=divisor)
        np.testing.assert_allclose(avg(Tensor(X)).asnumpy(), _ref(X, k, s, p, ceil, "avg", include, divisor),
                                   rtol=1e-5, atol=1e-6)
        mx = nn.MaxPool2d(k, s, pad_mode, p, ceil_mode=ceil)
        np.testing.assert_allclose(mx(Tensor(X)).asnumpy(), _ref(X, k, s, p, ceil, "max"), rtol=1e-6)
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_kernel_size_as_given_and_errors():
    assert nn.MaxPool2d(2).kernel_size == 2 and nn.AvgPool2d((2, 3), 1).kernel_size == (2, 3)
    assert nn.MaxPool2d(3, stride=2).stride == 2
    with pytest.raises(ValueError, match="divisor_override must be a positive int"):
        nn.AvgPool2d(2, divisor_override=0)
    with pytest.raises(NotImplementedError, match="return_indices and dilation need pad_mode"):
        nn.MaxPool2d(2, pad_mode="same", return_indices=True)


def _argmax_ref(x, k, s, p, ceil_mode):
    n, c, h, w = x.shape
    vals = _ref(x, k, s, p, ceil_mode, "max")
    idx = np.zeros(vals.shape, np.int64)
    for i in range(vals.shape[2]):
        for j in range(vals.shape[3]):
            h0, w0 = i * s - p, j * s - p
            for a in range(n):
                for b in range(c):
                    best = None
                    for hh in range(max(h0, 0), min(h0 + k, h)):
                        for ww in range(max(w0, 0), min(w0 + k, w)):
                            if best is None or x[a, b, hh, ww] > x[a, b, best // w, best % w]:
                                best = hh * w + ww
                    idx[a, b, i, j] = best
    return vals, idx


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
@pytest.mark.parametrize("k,s,p,ceil", [(2, 2, 0, False), (3, 2, 1, False), (3, 2, 1, True), (2, 1, 0, False)])
def test_max_pool_return_indices_vs_numpy(mode, k, s, p, ceil):
    mycel.set_context(mode=mode)
    try:
        pool = nn.MaxPool2d(k, s, "pad" if p else "valid", p, return_indices=True, ceil_mode=ceil)
        values, index = pool(Tensor(X))
        want_v, want_i = _argmax_ref(X, k, s, p, ceil)
        np.testing.assert_allclose(values.asnumpy(), want_v, rtol=1e-6)
        np.testing.assert_array_equal(index.asnumpy(), want_i)
        # the indices point at the maxima in each (H, W) plane
        flat = X.reshape(2, 3, -1)
        np.testing.assert_array_equal(np.take_along_axis(flat, index.asnumpy().reshape(2, 3, -1), 2),
                                      values.asnumpy().reshape(2, 3, -1))
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
