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

    def __init__(self, chans=(16, 20, 36)):
        super().__init__()
        c0, c1, c2 = chans
        self.stem = _conv_bn(3, c0, 1)
        self.a = _conv_bn(c0, c1, 2)
        self.b = _conv_bn(c1, c2, 2)
        self.c = _conv_bn(c2, c2, 1)

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


def _zen4_avx512():
    """AMD Zen 4 (family 25 with AVX-512, not capped by MYCEL_MAX_CPU_ISA): the streamed kernel is
    off by default there (oneDNN's AVX-512 brgconv is faster, kernels/cpu/conv_stream.cc)."""
    cap = os.environ.get("MYCEL_MAX_CPU_ISA", "").lower()
    if cap and not (cap.startswith(("avx512", "amx")) or cap == "all"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            head = f.read().split("\n\n")[0]
    except OSError:
        return False
    info = dict((k.strip(), v.strip()) for k, v in
                (line.split(":", 1) for line in head.splitlines() if ":" in line))
    return info.get("vendor_id") == "AuthenticAMD" and info.get("cpu family") == "25" \
        and "avx512f" in info.get("flags", "").split()


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
    if _default_rule():  # a and b (stride 2) and c (4x4 plane); on Zen 4 oneDNN's brgconv
        assert s.stats()["num_stream"] == (0 if _zen4_avx512() else 3), s.stats()
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


_PATHS_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np, mycel
from mycel import Tensor
from edge_helpers import randomize
from test_conv_stream import _Net, _numpy_forward
net = randomize(_Net((16, 24, 40)), seed=5)
x = np.random.default_rng(5).standard_normal((1, 3, 15, 13)).astype(np.float32)
want = _numpy_forward(net, x.astype(np.float64))
mycel.set_context(mode=mycel.GRAPH_MODE)
for threads in (1, 2, 3):
    mycel.set_context(num_threads=threads)
    for _ in range(2):
        got = net(Tensor(x)).asnumpy()
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < 1e-5, (threads, err)
print("ok")
"""


def test_graph_paths_and_threads_match_numpy():
    """Graph-mode inference on 1, 2 and 3 threads, odd planes (15x13), channels that nChw8c does
    not pad (graph mode keeps padded ones NCHW), through each path the strided and small-plane
    convolutions can take: the defaults (on Zen 4 oneDNN's AVX-512
    brgconv with reorders from and to nChw8c, dnnl_conv.cc keep_native), the streamed kernel
    forced on, and both off (oneDNN's jit kernel on the blocked layout)."""
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    paths = ({}, {"MYCEL_CONV_STREAM": "1"}, {"MYCEL_CONV_STREAM": "0", "MYCEL_CONV_NATIVE": "0"})
    for extra in paths:
        env = dict(os.environ, **extra)
        r = subprocess.run([sys.executable, "-c", _PATHS_SCRIPT, here], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and "ok" in r.stdout, (extra, r.stdout, r.stderr[-2000:])
