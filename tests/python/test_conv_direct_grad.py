"""The few-channel conv2d gradients (kernels/cpu/conv_direct.h: direct loops where the CPU
has AVX2 or AVX-512, oneDNN with MYCEL_CONV_DIRECT=0; on AVX-512 the data gradient of a batch
with narrow rows runs with images in the vector lanes, conv_batch_lanes.h) against numpy, on LeNet5's shapes and on odd sizes
with padding; and LeNet5's weight gradients in graph mode against central finite differences."""
import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops

# (batch, in channels, height, width, out channels, kernel h, kernel w, padding t, b, l, r)
CASES = [
    (16, 1, 32, 32, 6, 5, 5, 0, 0, 0, 0),   # LeNet5 conv1
    (16, 6, 14, 14, 16, 5, 5, 0, 0, 0, 0),  # LeNet5 conv2
    (3, 3, 17, 21, 16, 3, 3, 1, 1, 1, 1),   # same padding, odd sizes: by output channels
    (2, 5, 9, 20, 11, 5, 5, 2, 2, 2, 2),    # by output columns
    (2, 4, 12, 13, 7, 4, 4, 1, 2, 1, 2),    # even kernel, asymmetric padding
    (40, 6, 12, 12, 16, 5, 5, 2, 1, 0, 2),  # data gradient with images in the lanes (AVX-512)
]


def padded(x, pt, pb, pl, pr):
    return np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))


def grads_numpy(x, w, dy, pads):
    """dx and dw of y = conv2d(x, w) (stride 1) for the sensitivity dy, in float64."""
    pt, pb, pl, pr = pads
    xp = padded(x.astype(np.float64), *pads)
    kh, kw = w.shape[2:]
    oh, ow = dy.shape[2:]
    dw = np.zeros(w.shape)
    dxp = np.zeros(xp.shape)
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i:i + oh, j:j + ow]  # (n, c, oh, ow)
            dw[:, :, i, j] = np.einsum("nohw,nchw->oc", dy, win)
            dxp[:, :, i:i + oh, j:j + ow] += np.einsum("nohw,oc->nchw", dy, w[:, :, i, j])
    return dxp[:, :, pt:pt + x.shape[2], pl:pl + x.shape[3]], dw


@pytest.mark.parametrize("case", CASES)
def test_conv2d_gradients_match_numpy(case):
    n, c, h, wd, oc, kh, kw, pt, pb, pl, pr = case
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
    w = rng.standard_normal((oc, c, kh, kw)).astype(np.float32)
    oh, ow = h + pt + pb - kh + 1, wd + pl + pr - kw + 1
    dy = rng.standard_normal((n, oc, oh, ow)).astype(np.float32)
    want_dx, want_dw = grads_numpy(x, w, dy.astype(np.float64), (pt, pb, pl, pr))
    pad = (pt, pb, pl, pr)
    dw = ops.conv2d_backprop_filter(Tensor(dy), Tensor(x), filter_size=w.shape, pad_mode="pad",
                                    pad=pad).asnumpy()
    dx = ops.conv2d_backprop_input(Tensor(dy), Tensor(w), input_size=x.shape, pad_mode="pad",
                                   pad=pad).asnumpy()
    np.testing.assert_allclose(dw, want_dw, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-4, atol=1e-4)


def test_lenet5_weight_gradients_match_finite_differences():
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from lenet5 import LeNet5
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        mycel.set_seed(3)
        net = LeNet5()
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="sum")
        wl = nn.WithLossCell(net, loss)
        rng = np.random.default_rng(7)
        x = Tensor(rng.standard_normal((16, 1, 32, 32)).astype(np.float32))
        y = Tensor(rng.integers(0, 10, 16).astype(np.int32))
        params = net.trainable_params()
        _, grads = mycel.value_and_grad(wl, None, params)(x, y)
        for k in (0, 1):  # conv1.weight, conv2.weight (the convolutions have no bias)
            p, g = params[k], grads[k].asnumpy()
            base = p.asnumpy().copy()
            for flat in np.argsort(-np.abs(g).ravel())[:3]:  # large entries: float32 FD resolves them
                def at(v):
                    arr = base.copy()
                    arr.flat[flat] = v
                    p.set_data(Tensor(arr))
                    return float(wl(x, y).asnumpy())
                eps = 1e-2
                fd = (at(base.flat[flat] + eps) - at(base.flat[flat] - eps)) / (2 * eps)
                p.set_data(Tensor(base))
                assert abs(fd - g.flat[flat]) < 2e-3 + 0.05 * abs(fd), (k, flat, fd, g.flat[flat])
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


@pytest.mark.parametrize("case", CASES)
def test_conv2d_forward_with_relu_matches_numpy(case):
    """The forward the few-channel kernels take (on AVX-512 at a batch, LeNet5's conv2 runs with
    images in the vector lanes): conv2d then relu, eager and in graph mode (fused conv2d+relu)."""
    n, c, h, wd, oc, kh, kw, pt, pb, pl, pr = case
    rng = np.random.default_rng(sum(case) + 1)
    x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
    w = rng.standard_normal((oc, c, kh, kw)).astype(np.float32)
    xp = padded(x.astype(np.float64), pt, pb, pl, pr)
    oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    want = np.zeros((n, oc, oh, ow))
    for i in range(kh):
        for j in range(kw):
            want += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    pad = (pt, pb, pl, pr)
    got = ops.conv2d(Tensor(x), Tensor(w), pad_mode="pad", padding=pad).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    f = mycel.jit(lambda a, b: ops.relu(ops.conv2d(a, b, pad_mode="pad", padding=pad)))
    np.testing.assert_allclose(f(Tensor(x), Tensor(w)).asnumpy(), np.maximum(want, 0),
                               rtol=1e-4, atol=1e-4)
