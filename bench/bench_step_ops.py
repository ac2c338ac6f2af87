"""Where a harness workload's training step spends its time, launch by launch: the compiled
step (bench/harness: same nets, weights, batch, optimizer) run under mycel.Profiler, each
launch of the step's program with its median and minimum time over the steps, the time between
launches (the executor's own work: assigns, views) and the step's span. The minimum is what a
loaded machine still shows; on a shared machine run it at a raised priority (e.g. `chrt -f 10`)
or compare minima only.

    .venv/bin/python bench/bench_step_ops.py mlp|lenet5|resnet18|transformer [--threads 2]
        [--steps 30] [--top 40] [--amp O2]

--amp O2 profiles the bf16 O2 step (amp.build_train_network, as the harness's *_bf16 rows).
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
from mycel._mycel import te  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=["lenet5", "mlp", "resnet18", "transformer"])
    ap.add_argument("--threads", type=int, default=0, help="0: Mycel's default")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--top", type=int, default=40, help="launches listed, dearest first")
    ap.add_argument("--amp", default="O0", choices=["O0", "O1", "O2", "O3"],
                    help="amp level of the step (O2: the harness's bf16 rows)")
    args = ap.parse_args()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    if args.threads:
        mycel.set_context(num_threads=args.threads)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "init.npz")
        W.init(args.workload, path)
        x, y, params = W.load(path)
    step = W.train_step(W.make_net(args.workload), params, args.amp)
    xt, yt = Tensor(x), Tensor(y.astype(np.int32))
    for _ in range(3):
        step(xt, yt).asnumpy()
    te.wait_background_builds()  # the default's TE kernels (built in the background) in use
    step(xt, yt).asnumpy()
    wall = []
    for _ in range(args.steps):
        t = time.perf_counter()
        step(xt, yt).asnumpy()
        wall.append(time.perf_counter() - t)
    with tempfile.TemporaryDirectory() as d:
        prof = mycel.Profiler(output_path=d)
        for _ in range(args.steps):
            step(xt, yt).asnumpy()
        prof.analyse()
        events = prof.events()  # (op, start_ns, end_ns, bytes, thread, scope, where), in order
    n = len(events) // args.steps
    if n * args.steps != len(events):
        raise SystemExit(f"{len(events)} launches is not {args.steps} steps of the same program")
    rows, gaps, spans = [], [], []
    for i in range(n):
        d = [(events[s * n + i][2] - events[s * n + i][1]) / 1e3 for s in range(args.steps)]
        g = [(events[s * n + i][1] - events[s * n + i - 1][2]) / 1e3 for s in range(args.steps)
             if i > 0]
        op, _, _, nbytes, _, _, where = events[i]
        rows.append((statistics.median(d), min(d), i, op, nbytes, where,
                     statistics.median(g) if g else 0.0))
    for s in range(args.steps):
        spans.append((events[s * n + n - 1][2] - events[s * n][1]) / 1e3)
    print(f"{args.workload} {args.amp}, threads {mycel.get_context('num_threads')}: step wall median "
          f"{statistics.median(wall) * 1e3:.2f} ms (without the profiler); {n} launches; "
          f"span median {statistics.median(spans) / 1e3:.2f} ms; launches median sum "
          f"{sum(r[0] for r in rows) / 1e3:.2f} ms, min sum {sum(r[1] for r in rows) / 1e3:.2f} ms; "
          f"between launches {sum(r[6] for r in rows) / 1e3:.2f} ms")
    print(f"{'#':>4} {'median us':>10} {'min us':>9} {'gap before':>10}  op  [output bytes]  source")
    for med, mn, i, op, nbytes, where, gap in sorted(rows, key=lambda r: -r[0])[:args.top]:
        print(f"{i:4d} {med:10.1f} {mn:9.1f} {gap:10.1f}  {op[:60]}  [{nbytes}]  {where[-40:]}")


if __name__ == "__main__":
    main()
