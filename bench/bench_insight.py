"""Insight overheads on a LeNet5 GRAPH_MODE training step (batch 32, Momentum), in one process:
  - summaries: the time SummaryRecord.record adds to the step's thread, recording every step the
    loss (scalar) and histograms of all 8 weights (the writer thread encodes and writes them);
  - the same every 10th step (SummaryCollector's default collect_freq);
  - summary ops: the same net with ScalarSummary + HistogramSummary inside construct;
  - profiler: the step with the Profiler off (the baseline: one branch per launch) and on;
  - debugger: the step with every kernel output scanned for NaN/inf.
Reported: median step time of each variant over rounds that alternate the variants.

    .venv/bin/python bench/bench_insight.py [--steps 200] [--rounds 5]
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
from mycel import Tensor, nn, ops  # noqa: E402
from mycel.insight import Debugger  # noqa: E402
from lenet5 import LeNet5  # noqa: E402


class LeNetWithSummaries(nn.Cell):
    """LeNet5 whose construct records its logits' mean and their histogram (summary ops)."""

    def __init__(self):
        super().__init__()
        self.net = LeNet5()
        self.scalar = ops.ScalarSummary()
        self.hist = ops.HistogramSummary()

    def construct(self, x):
        y = self.net(x)
        self.scalar("logit_mean", y.mean())
        self.hist("logits", y)
        return y


def train_step(net):
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    cell = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    cell.set_train(True)
    return cell


def per_launch(calls=50_000, rounds=7):
    """Per-launch cost of the hooks on eager dispatch: ops.add of 4 floats, off / profiler on /
    debugger on, alternating rounds, medians."""
    a = Tensor(np.ones(4, np.float32))

    def run():
        t0 = time.perf_counter()
        for _ in range(calls):
            ops.add(a, a)
        return (time.perf_counter() - t0) / calls * 1e6

    off, on, dbg = [], [], []
    for _ in range(rounds):
        off.append(run())
        p = mycel.Profiler(tempfile.mkdtemp(prefix="bench_insight_"))
        on.append(run())
        p.stop()
        p._events.clear()
        with Debugger():
            dbg.append(run())
    o = statistics.median(off)
    print(f"eager ops.add (4 floats), {rounds} alternating rounds of {calls}: "
          f"hooks off {o:.3f} us/call, "
          f"profiler on {statistics.median(on):.3f} (+{statistics.median(on) - o:.3f}), "
          f"debugger on {statistics.median(dbg):.3f} (+{statistics.median(dbg) - o:.3f})")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((32, 1, 32, 32)).astype(np.float32))
    y = Tensor(rng.integers(0, 10, 32).astype(np.int32))
    net = LeNet5()
    plain, with_ops = train_step(net), train_step(LeNetWithSummaries())
    weights = net.trainable_params()
    log_dir = tempfile.mkdtemp(prefix="bench_insight_")
    rec = mycel.SummaryRecord(log_dir)
    prof = mycel.Profiler(os.path.join(log_dir, "prof"), start_profile=False)
    dbg = Debugger(raise_on_hit=False)

    def baseline():
        plain(x, y).asnumpy()

    in_calls = []  # seconds the step's thread spends inside add_value + record

    def summaries(step=[0]):
        loss = plain(x, y)
        t0 = time.perf_counter()
        rec.add_value("scalar", "loss", loss)
        for p in weights:
            rec.add_value("histogram", p.name, p)
        step[0] += 1
        rec.record(step[0])
        in_calls.append(time.perf_counter() - t0)
        loss.asnumpy()

    def every_tenth(step=[0]):  # SummaryCollector's default collect_freq
        loss = plain(x, y)
        step[0] += 1
        if step[0] % 10 == 0:
            rec.add_value("scalar", "loss", loss)
            for p in weights:
                rec.add_value("histogram", p.name, p)
            rec.record(step[0])
        loss.asnumpy()

    def summary_ops(step=[0]):
        loss = with_ops(x, y)
        step[0] += 1
        rec.record(step[0])
        loss.asnumpy()

    def profiled():
        plain(x, y).asnumpy()

    variants = [("baseline (profiler off)", baseline, None),
                (f"SummaryRecord: loss + {len(weights)} histograms", summaries, None),
                ("  the same every 10th step", every_tenth, None),
                ("summary ops in construct + record", summary_ops, None),
                ("profiler on", profiled, prof),
                ("debugger on (NaN/inf scan of every output)", profiled, dbg)]
    for _, fn, _ in variants:  # compile and warm up
        for _ in range(10):
            fn()
    times = {name: [] for name, _, _ in variants}
    for _ in range(args.rounds):
        for name, fn, p in variants:
            if p is not None:
                p.start()
            t0 = time.perf_counter()
            for _ in range(args.steps):
                fn()
            times[name].append((time.perf_counter() - t0) / args.steps * 1e6)
            if p is not None:
                p.stop()
                if p is prof:
                    p._events.clear()  # keep memory flat across rounds
    rec.flush()
    base = statistics.median(times[variants[0][0]])
    print(f"LeNet5 GRAPH_MODE train step, batch 32, {args.steps} steps x {args.rounds} rounds, "
          f"{os.cpu_count()} CPUs")
    for name, _, _ in variants:
        med = statistics.median(times[name])
        print(f"  {name:44s} {med:9.1f} us/step   {med - base:+8.1f} us "
              f"({(med / base - 1) * 100:+.1f}%)")
    n_weights = sum(int(np.prod(p.shape)) for p in weights)
    print(f"  time inside add_value x{len(weights) + 1} + record (the step thread's share): median "
          f"{statistics.median(in_calls) * 1e6:.1f} us/step ({len(weights)} weights, "
          f"{n_weights} values copied)")
    print(f"  writer: {rec._writer.num_written} events written, record() waited for a full queue "
          f"{rec._writer.num_waits} times")
    print("  (the writer thread's encoding runs on the same cores: on a busy 2-core machine it "
          "shows in the step)")
    rec.close()
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    per_launch()


if __name__ == "__main__":
    main()
