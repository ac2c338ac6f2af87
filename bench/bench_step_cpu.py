"""CPU time of a harness workload's training step (bench/harness: same nets, weights, batch and
optimizer), best and median of the runs, at one thread by default. The process's CPU time moves
far less than wall time when other processes share the cores, so two builds can be compared on a
loaded machine (run each with its own checkout's python, alternating).

    .venv/bin/python bench/bench_step_cpu.py mlp|lenet5|resnet18|transformer [--steps 40] [--threads 1]
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness"))
import worker_mycel as W  # noqa: E402

import mycel  # noqa: E402
from mycel import Tensor  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=["lenet5", "mlp", "resnet18", "transformer"])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=args.threads)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "init.npz")
        W.init(args.workload, path)
        x, y, params = W.load(path)
    step = W.train_step(W.make_net(args.workload), params)
    xt, yt = Tensor(x), Tensor(y.astype(np.int32))
    losses = [float(step(xt, yt).asnumpy()) for _ in range(2)]  # compiles, warms
    cpu, wall = [], []
    for _ in range(args.steps):
        t, w = time.process_time(), time.perf_counter()
        step(xt, yt).asnumpy()
        cpu.append(time.process_time() - t)
        wall.append(time.perf_counter() - w)
    cpu.sort()
    print(f"{args.workload} threads {mycel.get_context('num_threads')}: CPU per step best "
          f"{cpu[0] * 1e3:.2f} ms, median {cpu[len(cpu) // 2] * 1e3:.2f} ms; wall best "
          f"{min(wall) * 1e3:.2f} ms, median {sorted(wall)[len(wall) // 2] * 1e3:.2f} ms; "
          f"first losses {losses}")


if __name__ == "__main__":
    main()
