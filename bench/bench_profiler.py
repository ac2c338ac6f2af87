"""Profiler overhead on LeNet5 training (batch 32, Momentum), profiler off against on, in rounds
that alternate the two in one process (the machine's drift hits both alike):
  - GRAPH_MODE, the compiled train step called from Python (the executor's hook per launch);
  - GRAPH_MODE Model.train over a dataset pipeline (per-launch hook, step and data-wait spans,
    the pipeline's counters and their sampler thread);
  - PYNATIVE_MODE, the eager train step (eager dispatch's hook, Cell scopes pushed per call).
Reported: median us/step of each, wall and process CPU time, and the overhead in percent. The
analysis (analyse()) runs after the steps and is timed apart.

    .venv/bin/python bench/bench_profiler.py [--steps 100] [--rounds 5]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import mycel  # noqa: E402
import mycel.dataset as ds  # noqa: E402
from mycel import Tensor, nn  # noqa: E402
from lenet5 import LeNet5  # noqa: E402


def _parts():
    net = LeNet5()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    return net, loss, opt


def _step_cell():
    net, loss, opt = _parts()
    cell = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    cell.set_train(True)
    return cell


def _alternate(label, run_steps, steps, rounds):
    """run_steps(n) runs n steps; off and on alternate in chunks of `steps`, `rounds` times.
    Returns the medians (us/step) of wall time and of the process's CPU time (all its threads:
    the profiler's cost is CPU work, and CPU time moves less than wall time when other
    processes share the cores)."""
    run_steps(10)  # compile, warm up
    wall = {False: [], True: []}
    cpu = {False: [], True: []}
    analyse = []
    for r in range(rounds):
        for on in ((False, True) if r % 2 == 0 else (True, False)):  # neither always goes first
            prof = mycel.Profiler(tempfile.mkdtemp(prefix="bench_profiler_")) if on else None
            w0, c0 = time.perf_counter(), time.process_time()
            run_steps(steps)
            wall[on].append((time.perf_counter() - w0) / steps * 1e6)
            cpu[on].append((time.process_time() - c0) / steps * 1e6)
            if prof is not None:
                t0 = time.perf_counter()
                prof.analyse()
                analyse.append(time.perf_counter() - t0)
    med = {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in (False, True)}
    (wa, ca), (wb, cb) = med[False], med[True]
    print(f"  {label}")
    print(f"    wall: off {wa:9.1f} us/step, on {wb:9.1f} us/step, {(wb / wa - 1) * 100:+6.2f}%")
    print(f"    CPU:  off {ca:9.1f} us/step, on {cb:9.1f} us/step, {(cb / ca - 1) * 100:+6.2f}%"
          f"   (analyse() {statistics.median(analyse):.2f} s for {steps} steps)")
    return med


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((32, 1, 32, 32)).astype(np.float32)
    ys = rng.integers(0, 10, 32).astype(np.int32)
    x, y = Tensor(xs), Tensor(ys)
    print(f"LeNet5 training, batch 32, {args.steps} steps x {args.rounds} alternating rounds, "
          f"{os.cpu_count()} CPUs")

    mycel.set_context(mode=mycel.GRAPH_MODE)
    cell = _step_cell()

    def graph_steps(n):
        for _ in range(n):
            cell(x, y)
        cell(x, y).asnumpy()

    _alternate("GRAPH_MODE train step (TrainOneStepCell)", graph_steps, args.steps, args.rounds)

    net, loss, opt = _parts()
    model = mycel.Model(net, loss, opt)
    big = rng.standard_normal((32 * args.steps, 1, 32, 32)).astype(np.float32)
    labels = rng.integers(0, 10, 32 * args.steps).astype(np.int32)

    def model_steps(n):
        data = ds.NumpySlicesDataset((big[:32 * n], labels[:32 * n]), column_names=["x", "y"],
                                     shuffle=False).batch(32)
        model.train(1, data)

    _alternate("GRAPH_MODE Model.train over a dataset", model_steps, args.steps, args.rounds)

    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    eager = _step_cell()

    def eager_steps(n):
        for _ in range(n):
            eager(x, y)
        eager(x, y).asnumpy()

    _alternate("PYNATIVE_MODE train step (TrainOneStepCell)", eager_steps,
               max(10, args.steps // 4), args.rounds)


if __name__ == "__main__":
    main()
