"""Where a harness batch-1 inference forward spends its time, launch by launch: the eval-mode
graph of bench/harness (same nets, weights, batch-norm statistics and input) run under
mycel.Profiler, each launch with its median and minimum time over the calls, the time between
launches (the executor's own work) and the call's span, against the wall time of a call without
the profiler. Minima are what a loaded machine still shows; compare minima, or run at a raised
priority (`chrt -f 10`).

    .venv/bin/python bench/bench_infer_ops.py resnet18_b1|resnet18_cifar_b1|mobilenetv2_b1|lenet5_b1
        [--threads N] [--calls 30] [--top 40]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness"))
import worker_mycel as W  # noqa: E402
from common import INFER  # noqa: E402

import mycel  # noqa: E402
from mycel import Tensor  # noqa: E402


def eval_net(workload):
    """The harness's eval-mode net and input (worker_mycel.infer_run's setup)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "init.npz")
        W.init_infer(workload, path)
        x, params, stats = W.load_infer(path)
    net = W.make_net(W.infer_model(workload))
    for group, arrays in ((net.trainable_params(), params), (net.untrainable_params(), stats)):
        for p, a in zip(group, arrays):
            p.set_data(Tensor(a))
    net.set_train(False)
    return net, Tensor(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=sorted(INFER))
    ap.add_argument("--threads", type=int, default=0, help="0: Mycel's default")
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--top", type=int, default=40, help="launches listed, dearest first")
    args = ap.parse_args()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    if args.threads:
        mycel.set_context(num_threads=args.threads)
    net, xt = eval_net(args.workload)
    t = time.perf_counter()
    net(xt).asnumpy()
    compile_s = time.perf_counter() - t
    for _ in range(3):
        net(xt).asnumpy()
    wall = []
    for _ in range(args.calls):
        t = time.perf_counter()
        net(xt).asnumpy()
        wall.append(time.perf_counter() - t)
    with tempfile.TemporaryDirectory() as d:
        prof = mycel.Profiler(output_path=d)
        for _ in range(args.calls):
            net(xt).asnumpy()
        events = prof.events()  # (op, start_ns, end_ns, bytes, thread, scope, where), in order
    n = len(events) // args.calls
    if n * args.calls != len(events):
        raise SystemExit(f"{len(events)} launches is not {args.calls} calls of the same program")
    rows, spans = [], []
    for i in range(n):
        d = [(events[s * n + i][2] - events[s * n + i][1]) / 1e3 for s in range(args.calls)]
        g = [(events[s * n + i][1] - events[s * n + i - 1][2]) / 1e3 for s in range(args.calls)
             if i > 0]
        op, _, _, nbytes, _, _, where = events[i]
        rows.append((statistics.median(d), min(d), i, op, nbytes, where,
                     statistics.median(g) if g else 0.0))
    for s in range(args.calls):
        spans.append((events[s * n + n - 1][2] - events[s * n][1]) / 1e3)
    print(f"{args.workload}, threads {mycel.get_context('num_threads')}: first call "
          f"{compile_s:.3f} s; call wall median {statistics.median(wall) * 1e3:.3f} ms, min "
          f"{min(wall) * 1e3:.3f} ms (without the profiler); {n} launches; span median "
          f"{statistics.median(spans) / 1e3:.3f} ms; launches median sum "
          f"{sum(r[0] for r in rows) / 1e3:.3f} ms, min sum {sum(r[1] for r in rows) / 1e3:.3f} ms; "
          f"between launches {sum(r[6] for r in rows) / 1e3:.3f} ms")
    print(f"{'#':>4} {'median us':>10} {'min us':>9} {'gap before':>10}  op  [output bytes]  source")
    for med, mn, i, op, nbytes, where, gap in sorted(rows, key=lambda r: -r[0])[:args.top]:
        print(f"{i:4d} {med:10.1f} {mn:9.1f} {gap:10.1f}  {op[:60]}  [{nbytes}]  {where[-40:]}")


if __name__ == "__main__":
    main()
