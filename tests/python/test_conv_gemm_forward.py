"""The float32 forward convolution of small output planes (at most 16 positions) as one GEMM over
the batch (kernels/cpu/conv_gemm_forward.h: training's NCHW convolutions with changing weights,
on AVX-512 CPUs other than Zen 4), and the geometries beside it that keep oneDNN, against a
float64 numpy reference, with a bias and relu after it; the same results with
MYCEL_CONV_GEMM_FWD=0 in a process of its own (the switch is read once); and a graph-mode
training step's gradients through it against that process's."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mycel
from conv_reference import forward_ref
from mycel import Tensor, nn, ops

# (batch, in channels, height, width, out channels, kernel, stride, padding, dilation)
CASES = [
    (32, 64, 4, 4, 64, 3, 1, 1, 1),    # taken: ResNet-18 CIFAR's last stage, fewer channels
    (8, 24, 8, 8, 40, 3, 2, 1, 1),     # taken: stride 2 into 4x4
    (6, 20, 6, 5, 17, 3, 1, 0, 1),     # taken: 4x3 plane, odd channels, no padding
    (16, 16, 6, 6, 16, 3, 1, 1, 2),    # taken: dilation 2 (4x4 output)
    (4, 16, 4, 4, 16, 3, 1, 1, 1),     # 64 rows: the smallest batch the rule admits
    (2, 16, 4, 4, 16, 3, 1, 1, 1),     # 32 rows: oneDNN's
    (8, 32, 8, 8, 32, 3, 1, 1, 1),     # 8x8 output: oneDNN's
    (8, 32, 4, 4, 32, 1, 1, 0, 1),     # 1x1: oneDNN's
]


def run_case(case, bias):
    n, c, h, w, oc, k, s, p, d = case
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = (rng.standard_normal((oc, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32)
    y = ops.conv2d(Tensor(x), Tensor(wt), stride=s, pad_mode="pad", pad=p, dilation=d)
    if bias:
        y = ops.relu(ops.bias_add(y, Tensor(b)))
    want = forward_ref(x, wt, s, p, d)
    if bias:
        want = np.maximum(want + b[None, :, None, None], 0)
    return y.asnumpy(), want


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_forward_matches_numpy(case, bias):
    got, want = run_case(case, bias)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


STEP = """
import sys
import numpy as np
import mycel
from mycel import Tensor, nn
mycel.set_context(mode=mycel.GRAPH_MODE)
mycel.set_seed(3)
net = nn.SequentialCell(nn.Conv2d(16, 32, 3, stride=2, pad_mode="pad", padding=1, has_bias=True),
                        nn.ReLU(), nn.Conv2d(32, 32, 3, pad_mode="pad", padding=1), nn.BatchNorm2d(32),
                        nn.ReLU(), nn.Flatten(), nn.Dense(32 * 16, 10))
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
rng = np.random.default_rng(0)
x = Tensor(rng.standard_normal((16, 16, 8, 8)).astype(np.float32))
y = Tensor(rng.integers(0, 10, 16).astype(np.int32))
losses = [float(step(x, y).asnumpy()) for _ in range(3)]
np.savez(sys.argv[1], losses=np.array(losses), *[p.asnumpy() for p in net.trainable_params()])
"""


def test_same_results_with_the_switch_off_and_in_training(tmp_path):
    """Forward results and three graph-mode training steps (the stride-2 conv into 4x4 and the
    4x4 conv run the GEMM where it is on) equal oneDNN's within float32 rounding."""
    out = {}
    for name, extra in (("gemm", {}), ("onednn", {"MYCEL_CONV_GEMM_FWD": "0"})):
        path = str(tmp_path / f"{name}.npz")
        subprocess.run([sys.executable, "-c", STEP, path], env=dict(os.environ, **extra), check=True)
        out[name] = np.load(path)
    for key in out["gemm"].files:
        a, b = out["gemm"][key], out["onednn"][key]
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * max(np.abs(b).max(), 1), err_msg=key)
