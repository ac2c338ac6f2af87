"""conv2d weight gradients of ResNet-18's later stages at 32x32 input, batch 32 (planes of 4x4
run as one GEMM over the batch, kernels/cpu/conv_gemm_filter.cc; 8x8 and larger on oneDNN):
CPU time of the calling thread per call, best of the runs (what a loaded machine still shows),
one thread by default.

    .venv/bin/python bench/bench_conv_small_planes.py [--threads 1] [--reps 6]
"""
import argparse
import time

import numpy as np

import mycel
from mycel import Tensor, ops

# (in channels, out channels, input size, stride, kernel)
LAYERS = [(128, 256, 16, 2, 3), (256, 256, 8, 1, 3), (256, 512, 8, 2, 3), (512, 512, 4, 1, 3)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=6)
    args = ap.parse_args()
    mycel.set_context(num_threads=args.threads)
    print(f"threads: {mycel.get_context('num_threads')}")
    rng = np.random.default_rng(0)
    n = 32
    for ci, co, hw, s, k in LAYERS:
        pad = k // 2
        oh = (hw + 2 * pad - k) // s + 1
        x = Tensor(rng.standard_normal((n, ci, hw, hw)).astype(np.float32))
        dy = Tensor(rng.standard_normal((n, co, oh, oh)).astype(np.float32))
        op = ops.Conv2DBackpropFilter(filter_size=(co, ci, k, k), pad_mode="pad", pad=(pad,) * 4,
                                      stride=(s, s))
        op(dy, x)
        best = float("inf")
        for _ in range(args.reps):
            t = time.thread_time()
            op(dy, x)
            best = min(best, time.thread_time() - t)
        flops = 2 * n * co * ci * k * k * oh * oh
        print(f"{ci}->{co} {hw}x{hw} stride {s} (plane {oh}x{oh}): {best * 1e3:7.2f} ms, "
              f"{flops / best / 1e9:5.1f} GFLOP/s")


if __name__ == "__main__":
    main()
