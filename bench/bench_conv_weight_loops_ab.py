"""bf16 convolution launches with MYCEL_CONV_WEIGHT_LOOPS=0 (A: oneDNN's weight reorders) and 1
(B: kernels/cpu/conv_weight_reorder.h's loops), alternated launch by launch in one process
(PyNative prepares each launch, so each reads the switch): ResNet-18's (CIFAR, batch 32) 3x3
forward convolutions (the weights into AcdB*a2b) and weight gradients (the split's tail), per
shape the wall minimum and median and the process CPU time median (all threads), in ms.

    .venv/bin/python bench/bench_conv_weight_loops_ab.py [--threads 2] [--reps 20]
"""
import argparse
import os
import statistics
import time

import numpy as np

import mycel
from mycel import Tensor, ops

# (batch, channels in = out, size): each stage's 3x3 stride-1 convolution
SHAPES = [(32, 64, 32), (32, 128, 16), (32, 256, 8), (32, 512, 4)]


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    fn().asnumpy()
    return time.perf_counter() - w, time.process_time() - c


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    mycel.set_context(mode=mycel.PYNATIVE_MODE, num_threads=args.threads)
    rng = np.random.default_rng(0)
    print(f"threads {args.threads}, load {os.getloadavg()[0]:.2f}; ms: wall min / median, cpu median")
    for n, c, h in SHAPES:
        x = Tensor(rng.standard_normal((n, c, h, h)).astype(np.float32)).astype(mycel.bfloat16)
        w = Tensor(rng.standard_normal((c, c, 3, 3)).astype(np.float32)).astype(mycel.bfloat16)
        dy = Tensor(rng.standard_normal((n, c, h, h)).astype(np.float32)).astype(mycel.bfloat16)
        cases = {
            "conv2d": lambda: ops.conv2d(x, w, pad_mode="pad", padding=1),
            "backprop_filter": lambda: ops.conv2d_backprop_filter(
                dy, x, filter_size=(c, c, 3, 3), pad_mode="pad", pad=(1, 1, 1, 1)),
        }
        for name, fn in cases.items():
            res = {"0": [], "1": []}
            for r in range(args.reps + 2):
                for flag in ("0", "1"):
                    os.environ["MYCEL_CONV_WEIGHT_LOOPS"] = flag
                    t = timed(fn)
                    if r >= 2:
                        res[flag].append(t)
            row = []
            for flag in ("0", "1"):
                wall = [t[0] * 1e3 for t in res[flag]]
                cpu = [t[1] * 1e3 for t in res[flag]]
                row.append(f"{min(wall):7.2f} {statistics.median(wall):7.2f} {statistics.median(cpu):7.2f}")
            print(f"{name:16s} {c:3d}ch {h:2d}x{h:<2d}  A {row[0]}  |  B {row[1]}")
    os.environ.pop("MYCEL_CONV_WEIGHT_LOOPS")


if __name__ == "__main__":
    main()
