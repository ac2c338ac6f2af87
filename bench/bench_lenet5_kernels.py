"""LeNet5's training kernels at batch 64 (not a test): the eager conv2d backward (data and filter
gradients), max pooling and its gradient, on LeNet5's shapes (conv1 1->6 at 32x32, conv2 6->16
at 14x14, 5x5 kernels), each timed alone; prints the median and the minimum in microseconds.
Run it under two builds (or checkouts) to compare them; --threads 1 gives figures that a
loaded machine disturbs least.

    .venv/bin/python bench/bench_lenet5_kernels.py [--reps 200] [--threads N]
"""
import argparse
import statistics
import time

import numpy as np

import mycel
from mycel import Tensor, ops


def timed(fn, reps):
    for _ in range(10):  # warm-up: prepared state, caches
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6, min(times) * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--threads", type=int, default=0, help="Mycel's thread count (0: its default)")
    args = ap.parse_args()
    if args.threads:
        mycel.set_context(num_threads=args.threads)
    rng = np.random.default_rng(0)

    def t(*shape):
        return Tensor(rng.standard_normal(shape).astype(np.float32))
    x1, dy1 = t(64, 1, 32, 32), t(64, 6, 28, 28)
    x2, dy2, w2 = t(64, 6, 14, 14), t(64, 16, 10, 10), t(16, 6, 5, 5)
    p1, dp1 = t(64, 6, 28, 28), t(64, 6, 14, 14)
    p2, dp2 = t(64, 16, 10, 10), t(64, 16, 5, 5)
    cases = {
        "conv1 filter gradient (64, 1->6, 32x32, 5x5)":
            lambda: ops.conv2d_backprop_filter(dy1, x1, filter_size=(6, 1, 5, 5)),
        "conv2 filter gradient (64, 6->16, 14x14, 5x5)":
            lambda: ops.conv2d_backprop_filter(dy2, x2, filter_size=(16, 6, 5, 5)),
        "conv2 data gradient (64, 6->16, 14x14, 5x5)":
            lambda: ops.conv2d_backprop_input(dy2, w2, input_size=(64, 6, 14, 14)),
        "max_pool2d 2x2 of (64, 6, 28, 28)": lambda: ops.max_pool2d(p1, 2, 2),
        "max_pool2d 2x2 of (64, 16, 10, 10)": lambda: ops.max_pool2d(p2, 2, 2),
        "max_pool2d_grad of (64, 6, 28, 28)":
            lambda: ops.max_pool2d_grad(p1, dp1, kernel_size=(2, 2), strides=(2, 2)),
        "max_pool2d_grad of (64, 16, 10, 10)":
            lambda: ops.max_pool2d_grad(p2, dp2, kernel_size=(2, 2), strides=(2, 2)),
    }
    print(f"threads {mycel.get_context('num_threads')}, {args.reps} reps; microseconds")
    print(f"{'kernel':48s} {'median':>9s} {'min':>9s}")
    for name, fn in cases.items():
        med, low = timed(fn, args.reps)
        print(f"{name:48s} {med:9.1f} {low:9.1f}", flush=True)


if __name__ == "__main__":
    main()
