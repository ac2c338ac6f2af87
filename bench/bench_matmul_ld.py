"""matmul shapes whose operand rows are a multiple of 2 KiB (padded before oneDNN reads them,
kernels/cpu/dnnl_matmul.cc) next to their unpadded neighbours: GFLOP/s of the best of the runs
(the best is what a loaded machine still shows) and the median.

    .venv/bin/python bench/bench_matmul_ld.py [--threads 1] [--reps 60] [m,k,n,ta,tb ...]
"""
import argparse
import statistics
import time

import numpy as np

import mycel
from mycel import Tensor, ops

SHAPES = ["128,784,512,0,1", "128,512,512,0,1", "128,512,512,0,0", "128,512,520,0,0",
          "512,128,512,1,0", "512,128,784,1,0", "128,512,2048,0,0", "512,2048,128,1,0",
          "2048,512,128,0,0"]


def bench(m, k, n, ta, tb, reps, rng):
    a = Tensor(rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32))
    b = Tensor(rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32))
    mm = ops.MatMul(transpose_a=ta, transpose_b=tb)
    for _ in range(3):
        mm(a, b)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        mm(a, b)
        times.append(time.perf_counter() - t)
    flops = 2 * m * k * n
    print(f"{m}x{k}x{n} ta={ta:d} tb={tb:d}: best {min(times) * 1e6:8.1f} us "
          f"{flops / min(times) / 1e9:6.1f} GFLOP/s, median {statistics.median(times) * 1e6:8.1f} us")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=60)
    ap.add_argument("shapes", nargs="*", default=SHAPES, help="m,k,n,transpose_a,transpose_b")
    args = ap.parse_args()
    mycel.set_context(num_threads=args.threads)
    print(f"threads: {mycel.get_context('num_threads')}")
    rng = np.random.default_rng(0)
    for s in args.shapes:
        m, k, n, ta, tb = (int(v) for v in s.split(","))
        bench(m, k, n, bool(ta), bool(tb), args.reps, rng)


if __name__ == "__main__":
    main()
