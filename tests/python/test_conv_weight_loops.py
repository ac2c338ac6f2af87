"""The bf16 convolution weights' own loops (kernels/cpu/conv_weight_reorder.h: the weights into
the forward layout, the split weight gradient's partials added and rounded into plain bf16 in one
pass) against oneDNN's reorders (MYCEL_CONV_WEIGHT_LOOPS=0): ResNet-18's bf16 O2 training steps
leave the same weights, bit for bit, on 1, 2 and 3 threads; with the loops on, oneDNN runs none
of the reorders they replace (ONEDNN_VERBOSE; on CPUs with AVX512-BF16). Single PyNative launches
(each prepared anew, so each reads the switch) on odd shapes: channels off the blocks of 16, 1x1,
5x5, groups, batches the split divides unevenly."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor, ops

STEPS = r"""
import os, sys, numpy as np
root, out, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, os.path.join(root, "examples"))
import mycel
from mycel import Tensor, nn, amp
from models import resnet18_cifar
mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=threads)
mycel.set_seed(3)
net = resnet18_cifar()
opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
step = amp.build_train_network(net, opt, loss, level="O2")
step.set_train(True)
rng = np.random.default_rng(1)
x = Tensor(rng.standard_normal((6, 3, 32, 32)).astype(np.float32))
y = Tensor(rng.integers(0, 10, 6).astype(np.int32))
losses = [float(step(x, y).asnumpy()) for _ in range(2)]
np.savez(out, losses=np.array(losses), *[p.asnumpy() for p in net.trainable_params()])
"""


def _cpu_has(flag):
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return flag in line.split()
    except OSError:
        pass
    return False


def _run(tmp_path, threads, loops):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    path = str(tmp_path / f"w{threads}{loops}.npz")
    env = dict(os.environ, MYCEL_CONV_WEIGHT_LOOPS=loops, ONEDNN_VERBOSE="1")
    out = subprocess.run([sys.executable, "-c", STEPS, root, path, str(threads)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    reorders = [ln.split(",") for ln in out.stdout.splitlines()
                if ln.startswith("onednn_verbose,exec,cpu,reorder")]
    return np.load(path), reorders


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_resnet18_o2_steps_same_bits_with_and_without_the_loops(tmp_path, threads):
    on, r_on = _run(tmp_path, threads, "1")
    off, r_off = _run(tmp_path, threads, "0")
    assert on.files == off.files
    for k in off.files:  # the weights after two steps (each step's gradients fed the update)
        np.testing.assert_array_equal(on[k], off[k], err_msg=k)
    # The reorders the loops replace: float32 partials -> bf16 (the split's tail) and plain bf16
    # weights -> the forward's AcdB*a2b layouts.
    def tails(r):
        return [f for f in r if f[6].startswith("src_f32:") and "dst_bf16::blocked:abcd" in f[6]]

    def fwd(r):
        return [f for f in r if f[6].startswith("src_bf16::blocked:abcd") and "AcdB" in f[6]]

    assert tails(r_off) and fwd(r_off)  # the same steps take them with the loops off
    # (our kernels need AVX512-BF16, uncapped by MYCEL_MAX_CPU_ISA / ONEDNN_MAX_CPU_ISA)
    if _cpu_has("avx512_bf16") and not any(os.environ.get(v) for v in ("MYCEL_MAX_CPU_ISA",
                                                                       "ONEDNN_MAX_CPU_ISA")):
        # the forward's padded layouts (the stem's 3 channels, 512x256x1x1 into AcdB48a2b) stay
        # oneDNN's: no register tiles there
        assert not tails(r_on) and all(":p:" in f[6] for f in fwd(r_on))
        assert len(fwd(r_on)) < len(fwd(r_off))


# (batch, in channels, out channels, size, groups, kernel)
ODD = [(8, 32, 64, 8, 2, 3), (6, 48, 48, 7, 3, 3), (4, 17, 33, 9, 1, 3), (8, 64, 32, 6, 1, 1),
       (4, 20, 30, 10, 1, 5), (5, 64, 64, 4, 1, 3), (6, 3, 64, 12, 1, 3)]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_odd_shapes_same_bits_with_and_without_the_loops(threads, monkeypatch):
    mycel.set_context(mode=mycel.PYNATIVE_MODE, num_threads=threads)
    rng = np.random.default_rng(threads)
    for n, c, o, h, g, k in ODD:
        pad = k // 2
        x = Tensor(rng.standard_normal((n, c, h, h)).astype(np.float32)).astype(mycel.bfloat16)
        dy = Tensor(rng.standard_normal((n, o, h, h)).astype(np.float32)).astype(mycel.bfloat16)
        w = Tensor(rng.standard_normal((o, c // g, k, k)).astype(np.float32)).astype(mycel.bfloat16)
        got = {}
        for flag in ("0", "1"):
            monkeypatch.setenv("MYCEL_CONV_WEIGHT_LOOPS", flag)
            dw = ops.conv2d_backprop_filter(dy, x, filter_size=(o, c // g, k, k), pad_mode="pad",
                                            pad=(pad,) * 4, groups=g)
            y = ops.conv2d(x, w, pad_mode="pad", padding=pad, groups=g)
            got[flag] = [t.astype(mycel.float32).asnumpy() for t in (dw, y)]
        for a, b in zip(got["0"], got["1"]):
            np.testing.assert_array_equal(a, b, err_msg=str((n, c, o, h, g, k)))
