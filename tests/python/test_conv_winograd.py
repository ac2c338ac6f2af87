"""Winograd 3x3 convolutions (kernels/cpu/conv_winograd.cc) inside whole networks: the lite runtime
and graph-mode inference (batch norm folded: constant weights) against a float64 numpy forward
pass, at sizes that pick F(4x4,3x3) (13x13), F(2x2,3x3) (7x7) and oneDNN (5x5), with channel
counts that are not multiples of 8, a residual add and relu6. The kernel itself is checked
against a direct loop in tests/cpp/conv_winograd_test.cc."""
import os

import numpy as np
import pytest

import mycel
from mycel import Tensor, _mycel, nn, ops
from edge_helpers import randomize

lite = _mycel.lite


def _conv_bn(cin, cout):
    return nn.SequentialCell(nn.Conv2d(cin, cout, 3, pad_mode="pad", padding=1), nn.BatchNorm2d(cout))


class _Net(nn.Cell):
    """stem (3 -> 16, oneDNN: too few channels) -> 16 -> 20 (relu) -> 20 -> 20 (+ shortcut, relu6)
    -> 20 -> 24 -> global mean."""

    def __init__(self):
        super().__init__()
        self.stem = _conv_bn(3, 16)
        self.a = _conv_bn(16, 20)
        self.b = _conv_bn(20, 20)
        self.c = _conv_bn(20, 24)

    def construct(self, x):
        h = ops.relu(self.stem(x))
        h = ops.relu(self.a(h))
        h = ops.relu6(self.b(h) + h)
        return ops.mean(self.c(h), axis=(2, 3))


def _numpy_forward(net, x):
    """float64: each conv (padding 1) then its batch norm with the moving statistics."""
    p = {name: q.asnumpy().astype(np.float64) for name, q in net.parameters_and_names()}

    def conv_bn(name, h):
        w = p[f"{name}.0.weight"]
        n, c, hh, ww = h.shape
        hp = np.pad(h, ((0, 0), (0, 0), (1, 1), (1, 1)))
        cols = np.stack([hp[:, :, i:i + hh, j:j + ww] for i in range(3) for j in range(3)], axis=2)
        y = np.einsum("nckhw,ock->nohw", cols, w.reshape(w.shape[0], c, 9))
        g, b = p[f"{name}.1.gamma"], p[f"{name}.1.beta"]
        m, v = p[f"{name}.1.moving_mean"], p[f"{name}.1.moving_variance"]
        scale = g / np.sqrt(v + 1e-5)
        return y * scale[:, None, None] + (b - m * scale)[:, None, None]

    h = np.maximum(conv_bn("stem", x), 0)
    h = np.maximum(conv_bn("a", h), 0)
    h = np.clip(conv_bn("b", h) + h, 0, 6)
    return conv_bn("c", h).mean(axis=(2, 3))


@pytest.mark.parametrize("size", [13, 7, 5])
def test_lite_and_graph_match_numpy(size, tmp_path):
    net = randomize(_Net(), seed=size)
    rng = np.random.default_rng(size)
    x = rng.standard_normal((1, 3, size, size)).astype(np.float32)
    want = _numpy_forward(net, x.astype(np.float64))
    path = mycel.export(net, Tensor(x), file_name=str(tmp_path / "net"), file_format="MINDIR")
    s = lite.Session.from_file(path, num_threads=1)
    got = s.run([Tensor(x)])[0].asnumpy()
    # F(4x4)'s transforms lose a few bits more than a direct sum: 1e-4 relative to the output
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * scale)
    # a, b and c (16+ channels, blocked in and out) per the size rule; the stem reads NCHW input
    tiles = [lite.winograd_tile(ci, co, size, size) for ci, co in ((16, 20), (20, 20), (20, 24))]
    assert s.stats()["num_winograd"] == sum(t != 0 for t in tiles), (tiles, s.stats())
    default_rule = not any(k.startswith("MYCEL_WINOGRAD") for k in os.environ)
    if default_rule and lite.winograd_tile(64, 64, 32, 32) == 4:  # AVX2 (nChw8c), default rule
        assert tiles == {13: [4] * 3, 7: [2] * 3, 5: [0] * 3}[size]
    old = mycel.get_context("mode")
    mycel.set_context(mode=mycel.GRAPH_MODE)
    try:
        for _ in range(2):  # the second run reuses the prepared (transformed) weights
            g = net(Tensor(x)).asnumpy()
            np.testing.assert_allclose(g, want, rtol=0, atol=1e-4 * scale)
    finally:
        mycel.set_context(mode=old)
