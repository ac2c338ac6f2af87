"""Compile cost and memory over many input shapes (issue 21): a graph-mode TrainOneStepCell fed
N different batch sizes. Before the one-module-per-step pipeline and O(1) graph naming, shape #1
compiled in 13 ms, #200 in 287 ms and #500 in 4.7 s, and memory grew without bound.

    .venv/bin/python bench/bench_compile_cache.py --shapes 500
Prints the compile time of selected shapes, the resident memory, and the cache's evictions.
"""
import argparse
import resource
import time

import numpy as np

import mycel
from mycel import Tensor, nn


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", type=int, default=500)
    args = ap.parse_args()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    net = nn.SequentialCell([nn.Dense(16, 32), nn.ReLU(), nn.Dense(32, 4)])
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 0.01))
    marks = {1, 10, 50, 100, 200, 300, 400, 500, args.shapes}
    print(f"{'shape #':>8} {'compile ms':>11} {'RSS MB':>8}")
    for i in range(1, args.shapes + 1):
        x = Tensor(np.random.rand(i, 16).astype(np.float32))
        y = Tensor(np.random.rand(i, 4).astype(np.float32))
        t = time.perf_counter()
        step(x, y)
        ms = (time.perf_counter() - t) * 1e3
        if i in marks:
            print(f"{i:>8} {ms:>11.1f} {rss_mb():>8.0f}", flush=True)
    g = step._compiled.graph
    print(f"programs kept {g.num_programs}, evicted {g.evictions}")


if __name__ == "__main__":
    main()
