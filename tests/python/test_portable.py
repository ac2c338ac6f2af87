"""The build targets x86-64-v3 (AVX2, FMA, F16C), and AVX-512 kernels are chosen at run time: a
binary built here runs on an AVX2-only CPU. Checked for real by running Mycel under QEMU's user
mode emulating a Haswell (AVX2, no AVX-512), and against the same script run natively."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from mycel import _mycel

QEMU = shutil.which("qemu-x86_64")

# Convolution (LeNet5's first layer: the shape the AVX-512 direct kernel takes where it can), 2x2
# max pooling, a matmul against numpy, then a few graph-mode training steps whose losses the test
# compares with a native run.
SCRIPT = r"""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
import mycel as ms
from mycel import Tensor, nn, ops, _mycel

rng = np.random.default_rng(0)
x = rng.standard_normal((2, 1, 32, 32)).astype(np.float32)
w = rng.standard_normal((6, 1, 5, 5)).astype(np.float32)
y = ops.conv2d(Tensor(x), Tensor(w)).asnumpy()
ref = np.einsum("nchwij,ocij->nohw", sliding_window_view(x, (5, 5), axis=(2, 3)), w)
assert np.allclose(y, ref, rtol=1e-4, atol=1e-4), "conv2d"
p = ops.max_pool2d(Tensor(ref.astype(np.float32)), 2, 2).asnumpy()
assert np.array_equal(p, ref.astype(np.float32).reshape(2, 6, 14, 2, 14, 2).max(axis=(3, 5))), "pool"
a = rng.standard_normal((33, 17)).astype(np.float32)
b = rng.standard_normal((17, 9)).astype(np.float32)
assert np.allclose(ops.matmul(Tensor(a), Tensor(b)).asnumpy(), a @ b, rtol=1e-5, atol=1e-5), "matmul"

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_seed(0)
net = nn.SequentialCell([nn.Conv2d(1, 6, 5, pad_mode="valid"), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Flatten(), nn.Dense(6 * 14 * 14, 10)])
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.SGD(net.trainable_params(), 0.05))
labels = Tensor(np.array([1, 7], np.int32))
losses = [float(step(Tensor(x), labels).asnumpy()) for _ in range(3)]
print("avx512", _mycel.cpu_has_avx512())
print("losses", " ".join(repr(v) for v in losses))
"""


def _run(cmd, env_extra=None, timeout=600):
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE", **(env_extra or {}))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd="/tmp")
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
    out = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    return out


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def test_avx512_kernels_follow_the_cpu_and_the_cap():
    has = {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= _cpu_flags()
    assert _mycel.cpu_has_avx512() == has
    code = "from mycel import _mycel; print('avx512', _mycel.cpu_has_avx512())"
    assert _run([sys.executable, "-c", code], {"MYCEL_MAX_CPU_ISA": "avx2"})["avx512"] == "False"
    assert _run([sys.executable, "-c", code], {"MYCEL_MAX_CPU_ISA": "avx512_core"})["avx512"] == str(has)


@pytest.mark.skipif(QEMU is None, reason="qemu-user is not installed (scripts/setup installs it)")
def test_runs_on_an_avx2_only_cpu():
    native = _run([sys.executable, "-c", SCRIPT])
    haswell = _run([QEMU, "-cpu", "Haswell", sys.executable, "-c", SCRIPT])
    assert haswell["avx512"] == "False"
    a = np.array(native["losses"].split(), dtype=np.float64)
    b = np.array(haswell["losses"].split(), dtype=np.float64)
    assert np.all(np.isfinite(b)) and b[-1] < b[0]
    np.testing.assert_allclose(b, a, rtol=1e-5)
