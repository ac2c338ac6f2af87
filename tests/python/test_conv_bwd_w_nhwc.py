"""The float32 conv2d weight gradient of NCHW activations that Intel AVX-512 CPUs run on NHWC
copies of x and dy (dnnl_conv.cc, f32_bwd_weights_nhwc: stride 1, at least 32 channels each
side, planes of 8x8 or more), and the geometries beside it that keep oneDNN's free layouts,
against a float64 numpy reference; and the same results with MYCEL_CONV_BWD_W_NHWC=0 in a
process of its own (the switch is read once)."""
import os
import subprocess
import sys

import numpy as np
import pytest

from conv_reference import filter_grad_ref
from mycel import Tensor, ops

# (batch, in channels, height, width, out channels, kernel, stride, padding)
CASES = [
    (4, 32, 8, 8, 32, 3, 1, 1),     # taken: the smallest geometry the rule admits
    (2, 64, 12, 10, 48, 3, 1, 1),   # taken: odd plane, oc not a multiple of 16
    (3, 40, 9, 9, 36, 3, 1, 0),     # taken: no padding (7x7 output: not taken)
    (2, 32, 16, 16, 64, 3, 2, 1),   # stride 2: free layouts
    (2, 3, 16, 16, 32, 3, 1, 1),    # 3 input channels (a stem): free layouts
]


def weight_gradient(case):
    n, c, h, w, oc, k, s, p = case
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    dy = rng.standard_normal((n, oc, oh, ow)).astype(np.float32)
    dw = ops.conv2d_backprop_filter(Tensor(dy), Tensor(x), filter_size=(oc, c, k, k),
                                    pad_mode="pad", pad=(p, p, p, p), stride=s).asnumpy()
    return x, dy, dw


@pytest.mark.parametrize("case", CASES)
def test_weight_gradient_matches_numpy(case):
    x, dy, dw = weight_gradient(case)
    want = filter_grad_ref(x, dy, case[5], case[6], case[7])
    np.testing.assert_allclose(dw, want, rtol=1e-4, atol=1e-3 * np.abs(want).max())


def test_the_switch_off_gives_the_same_gradients(tmp_path):
    """MYCEL_CONV_BWD_W_NHWC=0 (oneDNN's nChw16c or the CPU's choice) and the default agree to
    float32 rounding: only the summation order differs."""
    code = ("import sys, numpy as np; sys.path.insert(0, %r); import test_conv_bwd_w_nhwc as t; "
            "np.save(sys.argv[1], t.weight_gradient(t.CASES[1])[2])") % os.path.dirname(__file__)
    out = str(tmp_path / "off.npy")
    env = dict(os.environ, MYCEL_CONV_BWD_W_NHWC="0")
    subprocess.run([sys.executable, "-c", code, out], env=env, check=True, timeout=120)
    off = np.load(out)
    on = weight_gradient(CASES[1])[2]
    np.testing.assert_allclose(on, off, rtol=1e-4, atol=1e-4 * np.abs(off).max())
