"""A harness workload's training step timed as bench/harness times it (float(loss.asnumpy()) per
step; the same nets, weights and batch), in one process over many steps: the median, the p10 and
the lowest median of a window of consecutive steps (the quietest stretch, what a shared machine
still shows). For A/B runs against another build, alternate processes, e.g. with main's package
first on the path:

    for i in 1 2 3; do
      .venv/bin/python bench/bench_step_wall.py mlp
      PYTHONPATH=/path/to/main/python .venv/bin/python bench/bench_step_wall.py mlp
    done
"""
import argparse
import os
import statistics
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
    ap.add_argument("--threads", type=int, default=0, help="0: Mycel's default")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--window", type=int, default=50)
    args = ap.parse_args()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    if args.threads:
        mycel.set_context(num_threads=args.threads)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "init.npz")
        W.init(args.workload, path)
        x, y, params = W.load(path)
    step = W.train_step(W.make_net(args.workload), params)
    xt, yt = Tensor(x), Tensor(y.astype(np.int32))
    for _ in range(20):
        float(step(xt, yt).asnumpy())
    ts = []
    for _ in range(args.steps):
        t = time.perf_counter()
        float(step(xt, yt).asnumpy())
        ts.append(time.perf_counter() - t)
    w = args.window
    windows = [statistics.median(ts[i:i + w]) for i in range(0, len(ts) - w + 1, w)]
    print(f"{args.workload}, threads {mycel.get_context('num_threads')}, {mycel.__file__}: "
          f"median {statistics.median(ts) * 1e3:.3f} ms, p10 {np.percentile(ts, 10) * 1e3:.3f} ms, "
          f"best {w}-step window median {min(windows) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
