"""Profiler overhead on LeNet5 training (batch 32, Momentum), profiler off against on, in rounds
that alternate the two in one process (the machine's drift hits both alike):
  - GRAPH_MODE, the compiled train step called from Python (the executor's hook per launch);
  - GRAPH_MODE Model.train over a dataset pipeline (per-launch hook, step and data-wait spans,
    the pipeline's counters and their sampler thread);
  - PYNATIVE_MODE, the eager train step (eager dispatch's hook, Cell scopes pushed per call).
Reported: median us/step of each, and the overhead in percent. The analysis (analyse()) runs
after the steps and is timed apart.

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
    """run_steps(n) runs n steps; returns (off, on) medians in us/step."""
    run_steps(10)  # compile, warm up
    off, on = [], []
    analyse = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run_steps(steps)
        off.append((time.perf_counter() - t0) / steps * 1e6)
        prof = mycel.Profiler(tempfile.mkdtemp(prefix="bench_profiler_"))
        t0 = time.perf_counter()
        run_steps(steps)
        on.append((time.perf_counter() - t0) / steps * 1e6)
        t0 = time.perf_counter()
        prof.analyse()
        analyse.append(time.perf_counter() - t0)
    a, b = statistics.median(off), statistics.median(on)
    print(f"  {label:52s} off {a:9.1f} us/step   on {b:9.1f} us/step   {(b / a - 1) * 100:+6.2f}%"
          f"   (analyse() {statistics.median(analyse):.2f} s for {steps} steps)")
    return a, b


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
