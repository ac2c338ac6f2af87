"""Winograd for NCHW convolutions whose weights change (kernels/cpu/conv_winograd_nchw.h: 3x3,
stride 1, at least 16 channels, batch >= 4, AVX2 builds): conv2d and conv2d_backprop_input
against float64 numpy on ResNet-18 CIFAR's shapes and on odd ones (channels not a multiple of 8,
asymmetric padding, a bias), a second call after the weights changed in place (nothing cached),
and a graph-mode training step's gradients against MYCEL_WINOGRAD=0 (oneDNN) in a subprocess."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor, ops

# (batch, in channels, size, out channels, padding t, b, l, r)
CASES = [
    (4, 64, 32, 64, 1, 1, 1, 1),   # ResNet-18 CIFAR layer1: F(4x4)
    (4, 128, 16, 128, 1, 1, 1, 1),  # layer2: F(4x4)
    (4, 256, 8, 256, 1, 1, 1, 1),  # layer3: F(2x2)
    (5, 20, 13, 27, 0, 2, 1, 0),   # odd channels, asymmetric padding
]


def conv_numpy(x, w, pads):
    pt, pb, pl, pr = pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh, ow = xp.shape[2] - 2, xp.shape[3] - 2
    y = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return y


def conv_input_grad_numpy(dy, w, pads, hw):
    pt, pb, pl, pr = pads
    oh, ow = dy.shape[2:]
    dxp = np.zeros((dy.shape[0], w.shape[1], hw[0] + pt + pb, hw[1] + pl + pr))
    for i in range(3):
        for j in range(3):
            dxp[:, :, i:i + oh, j:j + ow] += np.einsum("nohw,oc->nchw", dy, w[:, :, i, j])
    return dxp[:, :, pt:pt + hw[0], pl:pl + hw[1]]


def close(got, want, tol):
    """Winograd's rounding: errors relative to the largest |value| (docs/edge.md: 6e-6 for F(4x4))."""
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err < tol, f"max error {err:.2e} of the largest value"


@pytest.mark.parametrize("case", CASES)
def test_forward_and_input_gradient_match_numpy(case):
    n, c, s, oc, pt, pb, pl, pr = case
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((n, c, s, s)).astype(np.float32)
    w = rng.standard_normal((oc, c, 3, 3)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32)
    pad = (pt, pb, pl, pr)
    y = ops.conv2d(Tensor(x), Tensor(w), pad_mode="pad", pad=pad).asnumpy()
    want = conv_numpy(x.astype(np.float64), w.astype(np.float64), pad)
    close(y, want, 2e-5)
    yb = ops.bias_add(ops.conv2d(Tensor(x), Tensor(w), pad_mode="pad", pad=pad), Tensor(b))
    close(yb.asnumpy(), want + b[None, :, None, None], 2e-5)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx = ops.conv2d_backprop_input(Tensor(dy), Tensor(w), input_size=x.shape, pad_mode="pad",
                                   pad=pad).asnumpy()
    close(dx, conv_input_grad_numpy(dy.astype(np.float64), w.astype(np.float64), pad, (s, s)),
          2e-5)


def test_weights_changed_in_place_are_transformed_again():
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((4, 32, 12, 12)).astype(np.float32))
    w0 = rng.standard_normal((32, 32, 3, 3)).astype(np.float32)
    w = mycel.Parameter(Tensor(w0), name="w")
    ops.conv2d(x, w, pad_mode="pad", pad=1).asnumpy()
    w.set_data(Tensor(w0 * -2.0))
    y = ops.conv2d(x, w, pad_mode="pad", pad=1).asnumpy()
    close(y, conv_numpy(x.asnumpy().astype(np.float64), w0 * -2.0, (1, 1, 1, 1)), 2e-5)


STEP = r"""
import os, sys, numpy as np
sys.path.insert(0, os.path.join(sys.argv[1], "examples"))
import mycel
from mycel import Tensor, nn
from models import resnet18_cifar
mycel.set_context(mode=mycel.GRAPH_MODE)
mycel.set_seed(5)
net = resnet18_cifar()
loss = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
rng = np.random.default_rng(1)
x = Tensor(rng.standard_normal((4, 3, 32, 32)).astype(np.float32))
y = Tensor(rng.integers(0, 10, 4).astype(np.int32))
params = net.trainable_params()
value, grads = mycel.value_and_grad(loss, None, params)(x, y)
np.savez(sys.argv[2], loss=value.asnumpy(), *[g.asnumpy() for g in grads])
"""


def test_resnet18_gradients_equal_onednn_path(tmp_path):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    out = {}
    for mode in ("", "0"):
        env = dict(os.environ, MYCEL_WINOGRAD=mode)
        path = str(tmp_path / f"g{mode or 'on'}.npz")
        subprocess.run([sys.executable, "-c", STEP, root, path], env=env, check=True)
        out[mode] = np.load(path)
    on, off = out[""], out["0"]
    np.testing.assert_allclose(on["loss"], off["loss"], rtol=1e-4)
    for k in off.files:
        if k == "loss":
            continue
        # Gradients through 17 batch-normed layers: compare against each tensor's largest entry.
        scale = np.abs(off[k]).max()
        assert np.abs(on[k] - off[k]).max() <= 2e-3 * scale + 1e-7, k


QUAD = """
import sys
import numpy as np
from mycel import Tensor, ops
out = {}
for n, c, s, oc in ((4, 24, 12, 40), (4, 40, 9, 56), (4, 64, 16, 64), (4, 32, 6, 72)):
    rng = np.random.default_rng(c + oc)
    x = rng.standard_normal((n, c, s, s)).astype(np.float32)
    w = rng.standard_normal((oc, c, 3, 3)).astype(np.float32)
    dy = rng.standard_normal((n, oc, s, s)).astype(np.float32)
    out[f"y{oc}"] = ops.conv2d(Tensor(x), Tensor(w), pad_mode="pad", pad=1).asnumpy()
    out[f"dx{oc}"] = ops.conv2d_backprop_input(Tensor(dy), Tensor(w), input_size=x.shape,
                                               pad_mode="pad", pad=1).asnumpy()
np.savez(sys.argv[1], **out)
"""


def test_avx512_gemm_bit_identical_to_avx2(tmp_path):
    """The AVX-512 GEMM (conv_winograd_gemm512.h: four output blocks at a time, on AVX-512 CPUs
    other than Zen 4) sums each output's channels in the AVX2 kernel's order: forward and input
    gradients equal MYCEL_WINOGRAD_AVX512=0's bit for bit, on output channels that end in a
    quad, a pair or a single block (40, 56, 64, 72) and on many-tile and few-tile planes; and
    both are Winograd's (not oneDNN's rounding: MYCEL_WINOGRAD=0 differs, within tolerance)."""
    runs = {}
    for name, extra in (("avx512", {}), ("avx2", {"MYCEL_WINOGRAD_AVX512": "0"}),
                        ("onednn", {"MYCEL_WINOGRAD": "0"})):
        path = str(tmp_path / f"{name}.npz")
        subprocess.run([sys.executable, "-c", QUAD, path], env=dict(os.environ, **extra), check=True)
        runs[name] = np.load(path)
    for key in runs["avx2"].files:
        np.testing.assert_array_equal(runs["avx512"][key], runs["avx2"][key], err_msg=key)
        close(runs["avx2"][key], runs["onednn"][key].astype(np.float64), 2e-5)
        assert not np.array_equal(runs["avx2"][key], runs["onednn"][key]), key
