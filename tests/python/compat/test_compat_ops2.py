"""MindSpore-style programs for gather_elements in MindSpore's argument order (functional,
Tensor method, P.GatherD) and MaxPool2d with dilation (with ceil_mode, padding and
return_indices), in both modes, against numpy loops."""
import numpy as np
import pytest

import mycel as ms
from mycel import Tensor, nn, ops
from mycel.ops import operations as P

MODES = pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
R = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _gather_forms(x, idx, idx0):
    return ops.gather_elements(x, 1, idx), x.gather_elements(0, idx0), P.GatherD()(x, 1, idx), \
        ops.gather_d(x, 1, idx)


@MODES
def test_gather_elements_mindspore_order_vs_numpy(mode):
    ms.set_context(mode=mode)
    x = R.normal(size=(3, 5)).astype(np.float32)
    idx, idx0 = R.integers(0, 5, size=(3, 4)), R.integers(0, 3, size=(2, 5))
    fn = ms.jit(_gather_forms) if mode == ms.GRAPH_MODE else _gather_forms
    a, b, c, d = fn(Tensor(x), Tensor(idx), Tensor(idx0))
    np.testing.assert_array_equal(a.asnumpy(), np.take_along_axis(x, idx, 1))
    np.testing.assert_array_equal(b.asnumpy(), np.take_along_axis(x, idx0, 0))
    np.testing.assert_array_equal(c.asnumpy(), a.asnumpy())
    np.testing.assert_array_equal(d.asnumpy(), a.asnumpy())


def test_gather_elements_gradient_and_errors():
    x = R.normal(size=(3, 4))
    idx = np.array([[0, 0, 3], [1, 2, 2], [3, 3, 3]])
    g = ops.grad(lambda t: ops.gather_elements(t, 1, Tensor(idx)).sum())(Tensor(x))
    want = np.zeros_like(x)
    np.add.at(want, (np.arange(3)[:, None], idx), 1.0)  # each pick adds one to its source
    np.testing.assert_array_equal(g.asnumpy(), want)
    with pytest.raises(TypeError, match=r"\(input, dim, index\)"):
        ops.gather_elements(Tensor(x), Tensor(idx), 1)
    with pytest.raises(IndexError, match=r"\[gather_elements\].*index 4"):
        ops.gather_elements(Tensor(x), 1, Tensor(idx + 1))


def _dilated_ref(x, k, s, p, d, ceil_mode):
    """Max over the k*k taps d apart, windows s apart over the input padded by p (padding never
    wins), PyTorch's/MindSpore's output size; and the first argmax as h * W + w."""
    n, c, h, w = x.shape
    ext = d * (k - 1) + 1

    def out_len(size):
        span = size + 2 * p - ext
        o = -(-span // s) + 1 if ceil_mode else span // s + 1
        if ceil_mode and (o - 1) * s >= size + p:
            o -= 1
        return o
    oh, ow = out_len(h), out_len(w)
    vals = np.full((n, c, oh, ow), -np.inf)
    idx = np.zeros((n, c, oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            for a in range(k):
                for b in range(k):
                    hh, ww = i * s - p + a * d, j * s - p + b * d
                    if not (0 <= hh < h and 0 <= ww < w):
                        continue
                    v = x[:, :, hh, ww]
                    better = v > vals[:, :, i, j]
                    vals[:, :, i, j] = np.where(better, v, vals[:, :, i, j])
                    idx[:, :, i, j] = np.where(better, hh * w + ww, idx[:, :, i, j])
    return vals, idx


X = R.normal(size=(2, 2, 9, 8)).astype(np.float32)


@MODES
@pytest.mark.parametrize("k,s,p,d,ceil", [(2, 1, 0, 2, False), (3, 2, 1, 2, False), (3, 2, 1, 2, True),
                                          (2, 3, 0, 3, True), (3, 1, 2, (2, 2), False)])
def test_max_pool_dilation_vs_numpy(mode, k, s, p, d, ceil):
    ms.set_context(mode=mode)
    dd = d[0] if isinstance(d, tuple) else d
    pad_mode = "pad" if p else "valid"
    pool = nn.MaxPool2d(k, s, pad_mode, p, dilation=d, ceil_mode=ceil)
    want_v, want_i = _dilated_ref(X, k, s, p, dd, ceil)
    np.testing.assert_allclose(pool(Tensor(X)).asnumpy(), want_v, rtol=1e-6)
    values, index = nn.MaxPool2d(k, s, pad_mode, p, dilation=d, return_indices=True, ceil_mode=ceil)(Tensor(X))
    np.testing.assert_allclose(values.asnumpy(), want_v, rtol=1e-6)
    np.testing.assert_array_equal(index.asnumpy(), want_i)


def test_max_pool_dilation_gradient_and_errors():
    # the gradient goes to each window's maximum (a numpy scatter of ones at the argmax)
    x = R.normal(size=(1, 1, 7, 7))
    pool = nn.MaxPool2d(2, 2, dilation=2)
    g = ops.grad(lambda t: pool(t).sum())(Tensor(x))
    _, idx = _dilated_ref(x, 2, 2, 0, 2, False)
    want = np.zeros(49)
    np.add.at(want, idx.ravel(), 1.0)
    np.testing.assert_array_equal(g.asnumpy().ravel(), want)
    with pytest.raises(NotImplementedError, match="dilation need pad_mode 'valid' or 'pad'"):
        nn.MaxPool2d(2, pad_mode="same", dilation=2)
    with pytest.raises(ValueError, match="'dilation' must be an int or a pair of ints >= 1"):
        nn.MaxPool2d(2, dilation=0)
