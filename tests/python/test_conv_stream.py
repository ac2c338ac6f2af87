"""The streamed batch-1 convolution (kernels/cpu/conv_stream.cc) inside whole networks: the lite
runtime and graph-mode inference (batch norm folded: constant weights) against a float64 numpy
forward pass. The network has the shapes the kernel's rule takes (stride-2 convolutions, a 4x4
plane at stride 1) with channel counts that are not multiples of 8, a residual add, relu and
relu6, and a batch of 2 that must stay on oneDNN. The kernel itself is checked against a direct
loop in tests/cpp/conv_stream_test.cc."""
import os

import numpy as np

import mycel
from mycel import Tensor, _mycel, nn, ops
from edge_helpers import randomize

lite = _mycel.lite


def _conv_bn(cin, cout, stride):
    return nn.SequentialCell(nn.Conv2d(cin, cout, 3, stride=stride, pad_mode="pad", padding=1),
                             nn.BatchNorm2d(cout))


class _Net(nn.Cell):
    """16x16: stem (3 -> 16, too few channels) -> 16 -> 20, stride 2 (8x8) -> 20 -> 36, stride 2
    (4x4, relu6) -> 36 -> 36 at 4x4 (+ shortcut, relu) -> global mean."""

    def __init__(self):
        super().__init__()
        self.stem = _conv_bn(3, 16, 1)
        self.a = _conv_bn(16, 20, 2)
        self.b = _conv_bn(20, 36, 2)
        self.c = _conv_bn(36, 36, 1)

    def construct(self, x):
        h = ops.relu(self.stem(x))
        h = ops.relu(self.a(h))
        h = ops.relu6(self.b(h))
        h = ops.relu(self.c(h) + h)
        return ops.mean(h, axis=(2, 3))


def _numpy_forward(net, x):
    """float64: each conv (padding 1, its stride) then its batch norm with the moving statistics."""
    p = {name: q.asnumpy().astype(np.float64) for name, q in net.parameters_and_names()}

    def conv_bn(name, h, s):
        w = p[f"{name}.0.weight"]
        n, c, hh, ww = h.shape
        oh, ow = (hh - 1) // s + 1, (ww - 1) // s + 1
        hp = np.pad(h, ((0, 0), (0, 0), (1, 1), (1, 1)))
        cols = np.stack([hp[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s]
                         for i in range(3) for j in range(3)], axis=2)
        y = np.einsum("nckhw,ock->nohw", cols, w.reshape(w.shape[0], c, 9))
        g, b = p[f"{name}.1.gamma"], p[f"{name}.1.beta"]
        m, v = p[f"{name}.1.moving_mean"], p[f"{name}.1.moving_variance"]
        scale = g / np.sqrt(v + 1e-5)
        return y * scale[:, None, None] + (b - m * scale)[:, None, None]

    h = np.maximum(conv_bn("stem", x, 1), 0)
    h = np.maximum(conv_bn("a", h, 2), 0)
    h = np.clip(conv_bn("b", h, 2), 0, 6)
    h = np.maximum(conv_bn("c", h, 1) + h, 0)
    return h.mean(axis=(2, 3))


def _default_rule():
    # AVX2 (nChw8c) with the default rules: Winograd's 64 -> 64 at 32x32 is F(4x4) only there
    return not any(k.startswith(("MYCEL_CONV_STREAM", "MYCEL_WINOGRAD")) for k in os.environ) \
        and lite.winograd_tile(64, 64, 32, 32) == 4


def test_lite_and_graph_match_numpy(tmp_path):
    net = randomize(_Net(), seed=3)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    want = _numpy_forward(net, x.astype(np.float64))
    scale = np.abs(want).max()
    path = mycel.export(net, Tensor(x), file_name=str(tmp_path / "net"), file_format="MINDIR")
    s = lite.Session.from_file(path, num_threads=2)
    for _ in range(2):  # the second run reuses the repacked weights
        got = s.run([Tensor(x)])[0].asnumpy()
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * scale)
    if _default_rule():  # a and b (stride 2) and c (4x4 plane)
        assert s.stats()["num_stream"] == 3, s.stats()
    old = mycel.get_context("mode")
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        for _ in range(2):
            g = net(Tensor(x)).asnumpy()
            np.testing.assert_allclose(g, want, rtol=0, atol=1e-5 * scale)
        x2 = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)  # batch 2: oneDNN
        g2 = net(Tensor(x2)).asnumpy()
        np.testing.assert_allclose(g2, _numpy_forward(net, x2.astype(np.float64)), rtol=0,
                                   atol=1e-5 * scale)
    finally:
        mycel.set_context(mode=old)
