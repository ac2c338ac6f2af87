"""batch_norm (training forward + backward) and layer_norm backward, float32: CPU time of the
thread per call (best of the runs: what a loaded machine still shows) at one thread by default.

    .venv/bin/python bench/bench_norm.py [--threads 1] [--reps 20]
"""
import argparse
import time

import numpy as np

import mycel
from mycel import Tensor, nn, ops


def best_cpu_ms(fn, reps):
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t)
    return best * 1e3


class Sum(nn.Cell):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def construct(self, x):
        return self.f(x).sum()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    mycel.set_context(num_threads=args.threads)
    print(f"threads: {mycel.get_context('num_threads')}")
    rng = np.random.default_rng(0)
    for shape in [(32, 64, 32, 32), (32, 256, 8, 8), (32, 512, 4, 4)]:
        x = Tensor(rng.standard_normal(shape).astype(np.float32))
        bn = nn.BatchNorm2d(shape[1])
        bn.set_train(True)
        fwd = best_cpu_ms(lambda: bn(x), args.reps)
        grad = ops.GradOperation()(Sum(bn))
        both = best_cpu_ms(lambda: grad(x), args.reps)
        print(f"batch_norm {shape}: forward {fwd:.2f} ms, forward+backward+sum {both:.2f} ms")
    for shape in [(16, 128, 128), (16, 128, 512)]:
        x = Tensor(rng.standard_normal(shape).astype(np.float32))
        ln = nn.LayerNorm((shape[-1],), begin_norm_axis=-1, begin_params_axis=-1)
        fwd = best_cpu_ms(lambda: ln(x), args.reps)
        grad = ops.GradOperation()(Sum(ln))
        both = best_cpu_ms(lambda: grad(x), args.reps)
        print(f"layer_norm {shape}: forward {fwd:.2f} ms, forward+backward+sum {both:.2f} ms")


if __name__ == "__main__":
    main()
