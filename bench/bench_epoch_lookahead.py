"""The epoch with and without a batch built ahead (issue 19 item 2): LeNet5 on Fashion-MNIST,
batch 64, graph mode, the harness's pipeline (bench/harness/worker_mycel.py). One process
alternates, --rounds times, in this order:

  fixed        the harness's reference: step(x, y).asnumpy() from Python on one batch, as a
               throughput (n steps / their total time, the epoch's statistic)
  train  L=0   Model.train(1, data): each batch built on the loop's thread between two steps
  train  L=k   the same with MYCEL_DATA_LOOKAHEAD=k: one builder thread k batches ahead
  sink   L=0   Model.train(sinks, data, dataset_sink_mode=True, sink_size=--sink)
  sink   L=k   the same with the builder thread

Both wait policies: run it once plain and once with OMP_WAIT_POLICY=PASSIVE.

    .venv/bin/python bench/bench_epoch_lookahead.py [--rounds 5] [--batches 300] [--sink 100] [--ahead 1]
    .venv/bin/python bench/bench_epoch_lookahead.py --build-ab   # L=0 vs the build before the row
                      pass and row prefetch (rows "L=old": MYCEL_DATA_ROWPASS=0 MYCEL_DATA_PREFETCH_ROWS=0)
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/bench_epoch_lookahead.py

Printed: medians over the rounds, per step: wall ms, the process's CPU ms (all threads), its
voluntary context switches (sleeps); the C++ loop's own split (CompiledGraph.sink_stats): the
wait for the pipeline's next batch (its build, when it runs on the loop's thread), the step's
run, the loop's rest, and the time outside the loop (Model.train's Python: iterator, callbacks);
and the fixed step's wall over the row's (the harness's "epoch / step throughput"); then the median of the per-round ratios L=k over L=0 (A/B in the
same round, so a loaded machine's slow phases fall on both).
"""
import argparse
import os
import resource
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))

import mycel  # noqa: E402
from mycel import Tensor, nn  # noqa: E402
from mycel.train import Model  # noqa: E402
from lenet5 import LeNet5  # noqa: E402
from worker_mycel import fashion_dataset  # noqa: E402

BATCH = 64


def clock():
    """Wall seconds, the process's CPU seconds (every thread), its voluntary context switches."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return np.array([time.perf_counter(), r.ru_utime + r.ru_stime, r.ru_nvcsw])


def with_lookahead(depth, fn):
    """fn() with MYCEL_DATA_LOOKAHEAD=depth (read when the pipeline starts)."""
    old = os.environ.get("MYCEL_DATA_LOOKAHEAD")
    os.environ["MYCEL_DATA_LOOKAHEAD"] = str(depth)
    try:
        return fn()
    finally:
        if old is None:
            del os.environ["MYCEL_DATA_LOOKAHEAD"]
        else:
            os.environ["MYCEL_DATA_LOOKAHEAD"] = old


# --build-ab: the batch build before the row pass and the row prefetch (docs/dataset.md)
OLD_BUILD = {"MYCEL_DATA_ROWPASS": "0", "MYCEL_DATA_PREFETCH_ROWS": "0"}


def with_env(env, fn):
    """fn() with the environment variables env set (read when the pipeline is built)."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return fn()
    finally:
        for k, v in old.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batches", type=int, default=300, help="batches per epoch (0: all 937)")
    ap.add_argument("--sink", type=int, default=100, help="sink_size of the sink rows")
    ap.add_argument("--ahead", type=int, default=1, help="MYCEL_DATA_LOOKAHEAD of the L=k rows")
    ap.add_argument("--build-ab", action="store_true",
                    help="compare, at L=0, today's batch build with the one before the row pass and "
                         "the row prefetch (MYCEL_DATA_ROWPASS=0 MYCEL_DATA_PREFETCH_ROWS=0) instead of "
                         "L=0 with L=k")
    args = ap.parse_args()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    mycel.set_seed(0)
    net = LeNet5()
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                  nn.Momentum(net.trainable_params(), 0.01, 0.9))
    data = fashion_dataset(BATCH)
    if args.batches:
        data = data.take(args.batches)
    n = data.get_dataset_size()
    model.train(1, data.take(20))
    model.train(1, data.take(20), dataset_sink_mode=True, sink_size=10)
    step = model.train_network
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((BATCH, 1, 32, 32)).astype(np.float32))
    y = Tensor(np.zeros(BATCH, np.int32))
    sinks = max(n // args.sink, 1)

    def fixed():
        t = clock()
        for _ in range(n):
            step(x, y).asnumpy()
        dt = (clock() - t) / n
        return np.concatenate([dt, [np.nan] * 4])

    loop = step._graph_program().graph  # run_sink's counters: the breakdown of the loop's time

    def timed(fn, steps):
        loop.sink_stats(reset=True)
        t = clock()
        fn()
        step(x, y).asnumpy()  # the last step has finished (one more step: the same in every row)
        dt = (clock() - t) / (steps + 1)
        st = loop.sink_stats(reset=True)
        k = max(st["steps"], 1)
        parts = np.array([st["wait_s"], st["run_s"], st["total_s"] - st["wait_s"] - st["run_s"]]) / k
        return np.concatenate([dt, parts, [dt[0] - st["total_s"] / (steps + 1)]])

    def train():
        return timed(lambda: model.train(1, data), n)

    def sink():
        return timed(lambda: model.train(sinks, data, dataset_sink_mode=True, sink_size=args.sink),
                     sinks * args.sink)

    k = "old" if args.build_ab else args.ahead  # the B side's label: L=old or L=k

    def side(depth, fn):
        if args.build_ab:
            return with_lookahead(0, lambda: with_env(OLD_BUILD, fn) if depth == k else fn())
        return with_lookahead(depth, fn)

    rows = {"fixed": [], "train L=0": [], f"train L={k}": [], "sink L=0": [], f"sink L={k}": []}
    for r in range(args.rounds):
        rows["fixed"].append(fixed())
        # A B B A order alternating by round, so neither side always runs first
        order = [0, k] if r % 2 == 0 else [k, 0]
        for depth in order:
            rows[f"train L={depth}"].append(side(depth, train))
        for depth in order[::-1]:
            rows[f"sink L={depth}"].append(side(depth, sink))
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, threads "
          f"{mycel.get_context('num_threads')}, {n} batches, sink_size {args.sink}, {args.rounds} rounds, "
          f"load {os.getloadavg()[0]:.1f}")
    print("  per step: wall ms, process CPU ms, sleeps | run_sink's wall: pipeline wait, step run, "
          "loop rest, outside the loop (ms) | fixed step wall / row wall (median of per-round ratios)")
    fx = [v[0] for v in rows["fixed"]]
    for name, v in rows.items():
        med = np.median(np.array(v), axis=0)
        ratio = np.median([f / w[0] for f, w in zip(fx, v)]) * 100
        print(f"  {name:10s} {med[0] * 1e3:7.3f} {med[1] * 1e3:7.3f} {med[2]:6.1f} | "
              f"{med[3] * 1e3:6.3f} {med[4] * 1e3:6.3f} {med[5] * 1e3:6.3f} {med[6] * 1e3:6.3f} | {ratio:5.1f}%")
    for what in ("train", "sink"):
        a, b = rows[f"{what} L=0"], rows[f"{what} L={k}"]
        gain = np.median([x0[0] / xk[0] for x0, xk in zip(a, b)])
        print(f"  {what}: L={k} speed over L=0 (median of per-round ratios) {gain:.3f}x "
              f"(rounds: {', '.join(f'{x0[0] / xk[0]:.3f}' for x0, xk in zip(a, b))})")


if __name__ == "__main__":
    main()
