"""The bfloat16 conv2d weight gradient (its own path: each thread runs a one-thread oneDNN
primitive on its share of the batch into a float32 partial, added and rounded once, see
dnnl_conv.cc ConvBwdSplitPrepared) against a float64 numpy reference on the same bf16-rounded
inputs, and against the float32 gradient, on one and two threads, graph mode and PyNative."""
import numpy as np
import pytest

import mycel
from mycel import ops, Tensor
from bf16_reference import bf16_round
from conv_reference import filter_grad_ref as _filter_grad_ref


class _Conv(mycel.nn.Cell):
    def __init__(self, stride, pad):
        super().__init__()
        self.stride, self.pad = stride, pad

    def construct(self, x, w, dy):
        y = ops.conv2d(x, w, stride=self.stride, pad_mode="pad", padding=self.pad)
        return (y * dy).sum()


# (batch, in channels, out channels, size, stride): ResNet-18's layers at batch 32 and odd batches
SHAPES = [(32, 64, 128, 16, 2), (8, 32, 32, 8, 1), (6, 16, 48, 9, 1), (7, 24, 32, 10, 2), (1, 32, 64, 8, 1)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mode", [mycel.GRAPH_MODE, mycel.PYNATIVE_MODE], ids=["graph", "pynative"])
@pytest.mark.parametrize("n,c,o,h,stride", SHAPES)
def test_bf16_filter_grad_matches_float64(n, c, o, h, stride, mode, threads):
    mycel.set_context(mode=mode, num_threads=threads)
    rng = np.random.default_rng(n * 100 + c)
    x = bf16_round(rng.standard_normal((n, c, h, h)).astype(np.float32))
    w = bf16_round(rng.standard_normal((o, c, 3, 3)).astype(np.float32) * 0.1)
    oh = (h + 2 - 3) // stride + 1
    dy = bf16_round(rng.standard_normal((n, o, oh, oh)).astype(np.float32))
    ref = _filter_grad_ref(x, dy, 3, stride, 1)
    net = _Conv(stride, 1)
    grad = mycel.grad(net, grad_position=1)
    for dtype, tol in ((mycel.bfloat16, 1e-2), (mycel.float32, 1e-5)):
        got = grad(*(Tensor(a).astype(dtype) for a in (x, w, dy)))
        assert got.dtype == dtype and tuple(got.shape) == ref.shape
        err = np.abs(got.astype(mycel.float32).asnumpy() - ref).max() / np.abs(ref).max()
        assert err < tol, (dtype, err)
    # the bf16 gradient is the float32 one rounded once (partials added in float32): within one
    # bf16 rounding of each element, plus float32 summation-order differences
    g16 = grad(*(Tensor(a).astype(mycel.bfloat16) for a in (x, w, dy))).astype(mycel.float32).asnumpy()
    g32 = grad(*(Tensor(a) for a in (x, w, dy))).asnumpy()
    assert np.all(np.abs(g16 - g32) <= 2 ** -8 * np.abs(g32) + 1e-4 * np.abs(g32).max())


_UNSPLIT = r"""
import numpy as np, mycel
from mycel import Tensor
import test_conv_bf16_filter_grad as t
from bf16_reference import bf16_round
mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=2)
worst = 0.0
for n, c, o, h, stride in t.SHAPES[:3]:
    rng = np.random.default_rng(n)
    x = bf16_round(rng.standard_normal((n, c, h, h)).astype(np.float32))
    w = bf16_round(rng.standard_normal((o, c, 3, 3)).astype(np.float32) * 0.1)
    oh = (h + 2 - 3) // stride + 1
    dy = bf16_round(rng.standard_normal((n, o, oh, oh)).astype(np.float32))
    ref = t._filter_grad_ref(x, dy, 3, stride, 1)
    got = mycel.grad(t._Conv(stride, 1), grad_position=1)(*(Tensor(a).astype(mycel.bfloat16) for a in (x, w, dy)))
    worst = max(worst, float(np.abs(got.astype(mycel.float32).asnumpy() - ref).max() / np.abs(ref).max()))
print(worst)
"""


def test_bf16_filter_grad_without_the_split_matches_float64():
    """MYCEL_CONV_BWD_SPLIT=0 (read once per process): oneDNN's own threading computes the bf16
    weight gradient; the same float64 reference holds."""
    import os
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, MYCEL_CONV_BWD_SPLIT="0", PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _UNSPLIT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert float(out.stdout.strip().splitlines()[-1]) < 1e-2
