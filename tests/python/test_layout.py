"""The graph backend's layout step (src/mycel/backend/assign_layouts.cc): conv2d outputs stay in
oneDNN's preferred activation layout through pooling, relu, following convolutions and sums, and
one reorder to NCHW runs where a plain reader (dense, flatten, outputs, gradients) needs it.
Results must equal eager mode, the program without the step (MYCEL_LAYOUT=0) and numpy, up to
float32 summation order."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor, nn, ops
from mycel._mycel import graph as G
from mycel.common.parameter import Parameter
from train_helpers import LeNet5, WithLoss


def arr(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def compiled(obj, *args, layout="all"):
    """Result and listing of obj compiled with the layout step: "all" (wherever it can, without
    the cost check), "1" (where it pays: the default) or "0" (off)."""
    os.environ["MYCEL_LAYOUT"] = layout
    try:
        g = G.compile(obj)
        out = g(*args)
        return out, g.program_text(*args)
    finally:
        os.environ.pop("MYCEL_LAYOUT", None)


def layout_marker(text):
    return "{nhwc}" in text or "{nChw16c}" in text or "{nChw8c}" in text


# numpy references (float64), NCHW
def np_conv(x, w, b=None, stride=1, pad=0):
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    y = np.zeros((n, oc, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.float64))
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def np_pool(x, k, s, avg=False):
    n, c, h, w = x.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    win = np.stack([x[:, :, i:i + s * oh:s, j:j + s * ow:s] for i in range(k) for j in range(k)])
    return win.mean(0) if avg else win.max(0)


def relu(x):
    return np.maximum(x, 0)


def test_lenet5_forward_equals_eager_and_plain_program():
    mycel.set_seed(1)
    net = LeNet5()
    x = Tensor(arr(16, 1, 32, 32, seed=3))
    eager = net(x).asnumpy()
    out, text = compiled(net, x, layout="1")  # pays: the default keeps it
    plain, plain_text = compiled(net, x, layout="0")
    np.testing.assert_allclose(out.asnumpy(), eager, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.asnumpy(), plain.asnumpy(), rtol=1e-5, atol=1e-6)
    # conv -> pool -> conv -> pool in the blocked layout, one reorder before flatten.
    assert layout_marker(text) and text.count("to_nchw(") == 1, text
    assert text.index("to_nchw(") < text.index("view flatten"), text
    assert "to_nchw" not in plain_text and not layout_marker(plain_text), plain_text


def test_lenet5_training_step_equals_eager():
    x = Tensor(arr(8, 1, 32, 32, seed=4))
    y = Tensor(np.random.default_rng(5).integers(0, 10, 8).astype(np.int32))
    results = {}
    for name in ("eager", "layout", "plain", "auto"):
        mycel.set_seed(2)
        net = LeNet5()
        step = nn.TrainOneStepCell(WithLoss(net), nn.SGD(net.trainable_params(), learning_rate=0.1))
        if name == "eager":
            losses = [float(step(x, y).asnumpy()) for _ in range(2)]
        else:
            mycel.set_context(mode=mycel.GRAPH_MODE)
            os.environ["MYCEL_LAYOUT"] = {"layout": "all", "plain": "0", "auto": "1"}[name]
            losses = [float(step(x, y).asnumpy()) for _ in range(2)]
            # The gradient reads most activations in NCHW: by default the step stays plain.
            assert layout_marker(step._compiled.graph.program_text(x, y)) == (name == "layout")
            os.environ.pop("MYCEL_LAYOUT")
            mycel.set_context(mode=mycel.PYNATIVE_MODE)
        results[name] = (losses, [p.asnumpy().copy() for p in net.trainable_params()])
    for other in ("eager", "plain", "auto"):
        np.testing.assert_allclose(results["layout"][0], results[other][0], rtol=1e-5)
        for a, b in zip(results["layout"][1], results[other][1]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_lenet5_gradients_equal_plain_program():
    mycel.set_context(mode=mycel.GRAPH_MODE)
    mycel.set_seed(3)
    net = LeNet5()
    wl = WithLoss(net)
    params = net.trainable_params()
    x = Tensor(arr(4, 1, 32, 32, seed=6))
    y = Tensor(np.random.default_rng(7).integers(0, 10, 4).astype(np.int32))
    res = {}
    for layout in ("all", "0"):
        os.environ["MYCEL_LAYOUT"] = layout
        loss, grads = mycel.value_and_grad(wl, None, params)(x, y)
        res[layout] = [loss.asnumpy()] + [g.asnumpy() for g in grads]
    for a, b in zip(res["all"], res["0"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


class OddChannels(nn.Cell):
    """3 -> 5 -> 7 channels (none a multiple of a block), bias, stride, padding, both pools."""

    def __init__(self, w1, b1, w2, b2):
        super().__init__()
        self.w1, self.b1 = Parameter(Tensor(w1)), Parameter(Tensor(b1))
        self.w2, self.b2 = Parameter(Tensor(w2)), Parameter(Tensor(b2))

    def construct(self, x):
        y = ops.relu(ops.conv2d(x, self.w1, self.b1, pad_mode="pad", padding=1))
        y = ops.avg_pool2d(y, kernel_size=2, strides=2)
        y = ops.conv2d(y, self.w2, self.b2, stride=2, pad_mode="valid")
        return ops.max_pool2d(y, kernel_size=3, strides=1)


def test_odd_channel_counts_against_numpy():
    x, w1, b1 = arr(3, 3, 21, 21, seed=1), arr(5, 3, 3, 3, seed=2), arr(5, seed=3)
    w2, b2 = arr(7, 5, 3, 3, seed=4), arr(7, seed=5)
    net = OddChannels(w1, b1, w2, b2)
    out, text = compiled(net, Tensor(x))
    ref = np_pool(np_conv(np_pool(relu(np_conv(x, w1, b1, pad=1)), 2, 2, avg=True), w2, b2,
                          stride=2), 3, 1)
    assert out.shape == ref.shape == (3, 7, 2, 2)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-4)
    assert layout_marker(text) and text.count("to_nchw(") == 1, text  # only before the output


def test_pool_after_conv_and_conv_output_returned_too():
    x, w = arr(2, 4, 12, 12, seed=8), arr(6, 4, 3, 3, seed=9)
    mycel.set_context(mode=mycel.GRAPH_MODE)

    def f(x, w):
        y = ops.conv2d(x, w, pad_mode="valid")
        return y, ops.max_pool2d(y, kernel_size=2, strides=2)

    (y, p), text = compiled(f, Tensor(x), Tensor(w))
    conv = np_conv(x, w)
    np.testing.assert_allclose(y.asnumpy(), conv, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(p.asnumpy(), np_pool(conv, 2, 2), rtol=1e-4, atol=1e-4)
    assert layout_marker(text) and text.count("to_nchw(") == 2, text  # both outputs plain
    # By default it stays plain: the two reorders would move more than the conv's own one.
    (y1, p1), text1 = compiled(f, Tensor(x), Tensor(w), layout="1")
    assert not layout_marker(text1), text1
    np.testing.assert_allclose(p1.asnumpy(), p.asnumpy(), rtol=1e-5, atol=1e-6)


class Residual(nn.Cell):
    def __init__(self, w1, w2):
        super().__init__()
        self.w1, self.w2 = Parameter(Tensor(w1)), Parameter(Tensor(w2))

    def construct(self, x):
        a = ops.relu(ops.conv2d(x, self.w1, pad_mode="valid"))
        b = ops.conv2d(a, self.w2, pad_mode="same")
        return ops.max_pool2d(ops.relu(a + b), kernel_size=2, strides=2)


def test_residual_add_stays_blocked():
    x, w1, w2 = arr(2, 3, 10, 10, seed=10), arr(8, 3, 3, 3, seed=11), arr(8, 8, 3, 3, seed=12)
    out, text = compiled(Residual(w1, w2), Tensor(x))
    a = relu(np_conv(x, w1))
    ref = np_pool(relu(a + np_conv(a, w2, pad=1)), 2, 2)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-4)
    # The sum (fused with its relu or not, or into the conv as its residual post-op,
    # fuse_post_ops.cc) reads and writes the blocked layout.
    assert "}fused_elementwise{" in text or "}add(" in text or "}conv2d+add+relu(" in text, text
    assert text.count("to_nchw(") == 1, text


class ConvMean(nn.Cell):
    def __init__(self, w, keep_dims):
        super().__init__()
        self.w = Parameter(Tensor(w))
        self.keep_dims = keep_dims

    def construct(self, x):
        return ops.mean(ops.relu(ops.conv2d(x, self.w, pad_mode="same")), axis=(2, -1),
                        keep_dims=self.keep_dims)


@pytest.mark.parametrize("keep_dims", [False, True])
def test_global_average_pool_reads_the_blocked_layout(keep_dims):
    """A mean over H and W (ResNet's and MobileNetV2's global average pooling) reads the conv's
    blocked output (20 channels: padded blocks) and writes (N, C) plain: no to_nchw at all, with
    the default cost check too."""
    x, w = arr(2, 3, 9, 7, seed=20), arr(20, 3, 3, 3, seed=21)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    ref = relu(np_conv(x, w, pad=1)).mean(axis=(2, 3), keepdims=keep_dims)
    for layout in ("all", "1"):
        out, text = compiled(ConvMean(w, keep_dims), Tensor(x), layout=layout)
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)
        assert out.shape == ref.shape
        assert "}mean(" in text and "to_nchw(" not in text, text


def test_op_that_does_not_keep_zeros_gets_plain_input():
    x, w = arr(2, 3, 8, 8, seed=13), arr(4, 3, 3, 3, seed=14)
    mycel.set_context(mode=mycel.GRAPH_MODE)

    def f(x, w):
        y = ops.conv2d(x, w, pad_mode="valid")
        return ops.max_pool2d(y, kernel_size=2, strides=2), ops.max_pool2d(ops.exp(y), kernel_size=2,
                                                                           strides=2)

    (a, b), text = compiled(f, Tensor(x), Tensor(w))
    conv = np_conv(x, w)
    np.testing.assert_allclose(a.asnumpy(), np_pool(conv, 2, 2), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b.asnumpy(), np_pool(np.exp(conv), 2, 2), rtol=1e-4)
    # exp(0) = 1 would fill the channel padding: it reads NCHW, and the pool after it too.
    assert text.index("to_nchw(") < text.index(" exp("), text
    assert text.count("}max_pool2d(") == 1 and text.count(" max_pool2d(") == 1, text


def test_conv_read_only_by_plain_ops_stays_plain():
    x, w = arr(2, 3, 8, 8, seed=15), arr(4, 3, 3, 3, seed=16)
    mycel.set_context(mode=mycel.GRAPH_MODE)

    def f(x, w):
        return ops.exp(ops.conv2d(x, w, pad_mode="valid"))

    out, text = compiled(f, Tensor(x), Tensor(w), layout="all")
    np.testing.assert_allclose(out.asnumpy(), np.exp(np_conv(x, w)), rtol=1e-4)
    # Its own reorder moves as much as a to_nchw would: the conv keeps writing NCHW.
    assert not layout_marker(text) and "to_nchw" not in text, text


@pytest.mark.parametrize("tag", ["nChw16c", "nChw8c", "nhwc"])
def test_every_layout_tag_passes_this_file(tag):
    """The CPU picks one layout per process; MYCEL_LAYOUT_TAG forces the others, so the padded
    blocked layouts (channels rounded up to 16 or 8) run the tests above too."""
    env = dict(os.environ, MYCEL_LAYOUT_TAG=tag)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                        __file__, "-k", "not every_layout_tag"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "passed" in r.stdout and "skipped" not in r.stdout, r.stdout[-3000:]


def test_forced_tag_is_the_one_used():
    tag = os.environ.get("MYCEL_LAYOUT_TAG")
    if tag is None:
        return  # the CPU's own choice: checked by the markers of the tests above
    _, text = compiled(Residual(arr(8, 3, 3, 3), arr(8, 8, 3, 3)), Tensor(arr(1, 3, 10, 10)))
    assert "{" + tag + "}" in text, text


def cpu_info():
    """(vendor_id, cpu family, flags) of the first CPU in /proc/cpuinfo."""
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if ":" in line:
                k, v = (s.strip() for s in line.split(":", 1))
                info.setdefault(k, v)
            if not line.strip() and info:
                break
    return info.get("vendor_id"), int(info.get("cpu family", -1)), info.get("flags", "").split()


def test_zen4_takes_nchw8c_and_its_convolutions_equal_numpy():
    """On AMD Zen 4 (family 25 with AVX-512: 512-bit FMAs run as two 256-bit halves) the layout
    is nChw8c, where Mycel's AVX2 inference kernels run and oneDNN's AVX2 convolutions read it
    without reorders (src/mycel/kernels/cpu/dnnl_layout.cc); elsewhere oneDNN's choice stands.
    Either way a residual conv net equals numpy."""
    vendor, family, flags = cpu_info()
    x, w1, w2 = arr(1, 3, 10, 10), arr(8, 3, 3, 3, seed=1), arr(8, 8, 3, 3, seed=2)
    out, text = compiled(Residual(w1, w2), Tensor(x))
    forced = os.environ.get("MYCEL_LAYOUT_TAG")  # a forced tag wins (MYCEL_LAYOUT_TAG)
    if forced or (vendor == "AuthenticAMD" and family == 25 and "avx512f" in flags):
        assert "{" + (forced or "nChw8c") + "}" in text, text
    assert layout_marker(text), text
    a = relu(np_conv(x, w1))
    ref = np_pool(relu(a + np_conv(a, w2, pad=1)), 2, 2)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-4)


class FewChannels(nn.Cell):
    """conv 1 -> 6 channels, then conv 6 -> 16: LeNet5's shape of chain."""

    def __init__(self, w1, w2):
        super().__init__()
        self.w1, self.w2 = Parameter(Tensor(w1)), Parameter(Tensor(w2))

    def construct(self, x):
        a = ops.relu(ops.conv2d(x, self.w1, pad_mode="valid"))
        b = ops.relu(ops.conv2d(a, self.w2, pad_mode="valid"))
        return ops.max_pool2d(b, kernel_size=2, strides=2)


def test_conv_input_with_padded_channels_stays_plain():
    """6 channels in nChw8c/nChw16c are padded: no oneDNN kernel reads them natively, so the
    first conv writes NCHW and the second reads it (the few-channel direct kernel) instead of
    reordering a blocked input per launch; with NHWC (no padding) both stay in the layout."""
    import re
    x, w1, w2 = arr(1, 1, 14, 14), arr(6, 1, 3, 3, seed=1), arr(16, 6, 3, 3, seed=2)
    out, text = compiled(FewChannels(w1, w2), Tensor(x), layout="1")
    tags = set(re.findall(r"\{nchw>(\w+)\}", text))
    assert len(tags) == 1 and text.count("{nchw>") == 1, text
    if tags == {"nhwc"}:
        assert "{nchw>nhwc}conv2d+relu" in text and "{nhwc}conv2d+relu" in text, text
    else:  # the first conv plain, the second reads NCHW and writes the blocked layout
        assert text.count("conv2d+relu") == 2 and "{" + tags.pop() + "}conv2d" not in text, text
    ref = np_pool(relu(np_conv(relu(np_conv(x, w1)), w2)), 2, 2)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)
