"""bf16 activations channels-last (NHWC) in graph mode (backend/assign_layouts.cc, the bf16 part):
a bf16 O2 training step of a small ResNet keeps its activations NHWC from the stem to the global
mean pool and back (convolutions and their two gradients, batch norm and its gradient, relu and
its mask, the residual adds), with reorders only at the edges. Its losses, weights and gradients
must equal the NCHW program's (MYCEL_BF16_NHWC=0) within bf16 rounding (oneDNN sums in another
order there), and the NHWC convolution gradients must equal numpy's float64 ones."""
import os
import re
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor, amp, nn, ops

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from models.resnet import BasicBlock, ResNet  # noqa: E402

def with_env(name, value, fn):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        return fn()
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def o2_resnet_run(steps=4, threads=2, widths=(16, 32, 32, 32), batch=8, size=16):
    """(losses, final weights, the step's listing) of a small ResNet trained with O2 momentum."""
    mycel.set_context(num_threads=threads)
    mycel.set_seed(5)
    net = ResNet(BasicBlock, [1, 1, 1, 1], widths=widths)
    opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = amp.build_train_network(net, opt, loss, level="O2")
    step.set_train(True)
    rng = np.random.default_rng(1)
    x = Tensor(rng.standard_normal((batch, 3, size, size)).astype(np.float32))
    y = Tensor(rng.integers(0, 10, batch).astype(np.int32))
    losses = [float(step(x, y).asnumpy()) for _ in range(steps)]
    text = step.__dict__["_compiled"]._graph.program_text(x, y)
    return np.array(losses), [p.asnumpy().copy() for p in net.trainable_params()], text


def test_o2_resnet_step_keeps_activations_nhwc_and_matches_nchw(graph_mode):
    nhwc = with_env("MYCEL_BF16_NHWC", "1", o2_resnet_run)
    if "{nhwc}" not in nhwc[2]:
        pytest.skip("oneDNN takes no NHWC bf16 convolutions on this CPU")
    nchw = with_env("MYCEL_BF16_NHWC", "0", o2_resnet_run)
    assert "{nhwc}" not in nchw[2]
    text = nhwc[2]
    # every convolution and its two gradients read NHWC; the reorders back to NCHW are few
    for op in ("conv2d_backprop_input", "conv2d_backprop_filter"):
        plain = re.findall(r"= (?:\{[^}]*\})?%s\b" % op, text)
        assert plain and all("{nhwc}" in p for p in plain), (op, plain)
    assert text.count("to_nchw") <= 3, text
    np.testing.assert_allclose(nhwc[0], nchw[0], rtol=2e-2, atol=2e-2)
    for a, b in zip(nhwc[1], nchw[1]):
        np.testing.assert_allclose(a, b, rtol=5e-2, atol=5e-3 * max(1.0, np.abs(b).max()))


def np_conv_grads(x, w, dy, stride, pad):
    """float64 dx and dw of y = conv2d(x, w) (NCHW) for the upstream gradient dy."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    dy = dy.astype(np.float64)
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    oh, ow = dy.shape[2], dy.shape[3]
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            dw[:, :, i, j] = np.einsum("nchw,nohw->oc", patch, dy)
            dxp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride] += np.einsum(
                "nohw,oc->nchw", dy, w[:, :, i, j])
    return dxp[:, :, pad:pad + h, pad:pad + wd], dw


class ConvChainBackward(nn.Cell):
    """A chain of three bf16 convolutions with relus and its backward written out: with the step,
    the middle convolutions' gradients take dy and x NHWC and write dx NHWC, the stem's gradient
    reads the plain input and an NHWC dy."""

    def construct(self, x, w1, w2, w3, dy3):
        z1 = ops.conv2d(x, w1, pad_mode="pad", padding=1)
        h1 = ops.relu(z1)
        z2 = ops.conv2d(h1, w2, stride=2, pad_mode="pad", padding=1)
        h2 = ops.relu(z2)
        zero = ops.zeros((), mycel.bfloat16)
        dh2 = ops.conv2d_backprop_input(dy3, w3, input_size=h2.shape, pad_mode="pad", pad=(1, 1, 1, 1))
        dw3 = ops.conv2d_backprop_filter(dy3, h2, filter_size=w3.shape, pad_mode="pad",
                                         pad=(1, 1, 1, 1))
        dz2 = ops.mul(dh2, ops.cast(ops.greater(z2, zero), mycel.bfloat16))
        dh1 = ops.conv2d_backprop_input(dz2, w2, input_size=h1.shape, stride=2, pad_mode="pad",
                                        pad=(1, 1, 1, 1))
        dw2 = ops.conv2d_backprop_filter(dz2, h1, filter_size=w2.shape, stride=2, pad_mode="pad",
                                         pad=(1, 1, 1, 1))
        dz1 = ops.mul(dh1, ops.cast(ops.greater(z1, zero), mycel.bfloat16))
        dw1 = ops.conv2d_backprop_filter(dz1, x, filter_size=w1.shape, pad_mode="pad",
                                         pad=(1, 1, 1, 1))
        return dw1, dw2, dw3, dz1


def np_conv(x, w, stride, pad):
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oc, _, kh, kw = w.shape
    oh, ow = (x.shape[2] - kh) // stride + 1, (x.shape[3] - kw) // stride + 1
    y = np.zeros((x.shape[0], oc, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.float64))
    return y


def bf16_round(a):
    return Tensor(a.astype(np.float32)).astype(mycel.bfloat16).astype(mycel.float32).asnumpy()


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_nhwc_conv_gradients_equal_numpy_and_nchw(graph_mode, threads):
    mycel.set_context(num_threads=threads)
    rng = np.random.default_rng(threads)
    x = bf16_round(rng.standard_normal((6, 3, 10, 10)))
    w1 = bf16_round(rng.standard_normal((16, 3, 3, 3)) * 0.3)
    w2 = bf16_round(rng.standard_normal((32, 16, 3, 3)) * 0.1)
    w3 = bf16_round(rng.standard_normal((17, 32, 3, 3)) * 0.1)
    dy3 = bf16_round(rng.standard_normal((6, 17, 5, 5)))
    args = [Tensor(a).astype(mycel.bfloat16) for a in (x, w1, w2, w3, dy3)]

    def run():
        cell = ConvChainBackward()
        out = [t.astype(mycel.float32).asnumpy() for t in cell(*args)]
        return out, cell.__dict__["_compiled"]._graph.program_text(*args)

    got, text = with_env("MYCEL_BF16_NHWC", "1", run)
    if "{nhwc}" not in text:
        pytest.skip("oneDNN takes no NHWC bf16 convolutions on this CPU")
    ref, ref_text = with_env("MYCEL_BF16_NHWC", "0", run)
    assert "{nhwc}" not in ref_text
    assert text.count("{nhwc}conv2d_backprop_filter") == 3, text
    assert text.count("{nhwc}conv2d_backprop_input") == 2, text
    # numpy float64 from the same bf16 values (the forward rounded to bf16 as the graph does)
    z1 = np_conv(x, w1, 1, 1)
    h1 = bf16_round(np.maximum(z1, 0))
    z2 = np_conv(h1, w2, 2, 1)
    h2 = bf16_round(np.maximum(z2, 0))
    dh2, dw3 = np_conv_grads(h2, w3, dy3, 1, 1)
    dz2 = bf16_round(dh2) * (z2 > 0)
    dh1, dw2 = np_conv_grads(h1, w2, dz2, 2, 1)
    dz1 = bf16_round(dh1) * (z1 > 0)
    _, dw1 = np_conv_grads(x, w1, dz1, 1, 1)
    for g, r, want in zip(got, ref, (dw1, dw2, dw3, dz1)):
        tol = 0.02 * np.abs(want).max()
        np.testing.assert_allclose(g, want, atol=tol)
        np.testing.assert_allclose(g, r, atol=tol)
