"""Where the epoch's time goes against the fixed-batch step (issue 19 item 2), per step: LeNet5 on
Fashion-MNIST, batch 64, graph mode, the harness's pipeline (bench/harness/worker_mycel.py).
One process alternates, --rounds times:

  fixed      the harness's reference: step(x, y).asnumpy() from Python on one batch (the mean per
             step; "fixed median": the median of its per-step times, as the harness takes it)
  no fetch   the same steps with the loss read once at the end
  loop       Model.train's C++ loop (run_sink) over batches already built (an in-memory source of
             pre-batched arrays): the step with the loop's own cost, no image work
  build      the pipeline alone on this thread (the sink iterator's rows, no step)
  epoch      Model.train(1, data) as the harness times it, split into its start (up to the first
             epoch-begin hook), the loop and its end
  sink       Model.train(k, data, dataset_sink_mode=True, sink_size=--sink) split the same way

    .venv/bin/python bench/bench_epoch_breakdown.py [--rounds 3] [--batches 300] [--sink 100]
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/bench_epoch_breakdown.py

Printed: medians over the rounds, per step: wall ms, the process's CPU ms (all threads) and
voluntary context switches (sleeps, all threads). On a loaded machine every figure is inflated;
compare the rows of one run.
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
import mycel.dataset as ds  # noqa: E402
from mycel import Tensor, nn  # noqa: E402
from mycel.train import Model  # noqa: E402
from mycel.train.callback import Callback  # noqa: E402
from lenet5 import LeNet5  # noqa: E402
from worker_mycel import fashion_dataset  # noqa: E402

BATCH = 64


class Marks(Callback):
    """Wall-clock marks at the epoch hooks (which Model.train calls outside its C++ loop)."""

    def __init__(self):
        super().__init__()
        self.t_begin, self.t_end = [], []

    def on_train_epoch_begin(self, run_context):
        self.t_begin.append(clock())

    def on_train_epoch_end(self, run_context):
        run_context.original_args().net_outputs.asnumpy()  # the last step has finished
        self.t_end.append(clock())


def clock():
    """Wall seconds, the process's CPU seconds (every thread) and its voluntary context switches
    (every thread: an OpenMP thread's sleep in a barrier, the loop's waits)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return np.array([time.perf_counter(), r.ru_utime + r.ru_stime, r.ru_nvcsw])


def timed_train(model, epochs, data, **kw):
    """(start, loop, end) of one Model.train call, each (wall, process CPU) seconds; the loop
    sums every epoch's."""
    m = Marks()
    t0 = clock()
    model.train(epochs, data, callbacks=[m], **kw)
    t1 = clock()
    loop = sum(np.array(e) - np.array(b) for b, e in zip(m.t_begin, m.t_end))
    start = np.array(m.t_begin[0]) - t0
    return start, loop, t1 - t0 - loop - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", type=int, default=300, help="batches per epoch (0: all 937)")
    ap.add_argument("--sink", type=int, default=100, help="sink_size of the sink rows")
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
    step = model.train_network
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((BATCH, 1, 32, 32)).astype(np.float32))
    y = Tensor(np.zeros(BATCH, np.int32))
    xs = rng.standard_normal((16, BATCH, 1, 32, 32)).astype(np.float32)
    ys = rng.integers(0, 10, (16, BATCH)).astype(np.int32)
    built = ds.NumpySlicesDataset((xs, ys), column_names=["image", "label"], shuffle=False).repeat(n // 16 + 1).take(n)
    model.train(1, built.take(20))
    sinks = max(n // args.sink, 1)

    def fixed():
        """(mean per step, median of the per-step wall times) of the harness's Python loop."""
        walls = []
        t = clock()
        for _ in range(n):
            s = time.perf_counter()
            step(x, y).asnumpy()
            walls.append(time.perf_counter() - s)
        return (clock() - t) / n, float(np.median(walls))

    def no_fetch():
        t = clock()
        for _ in range(n):
            out = step(x, y)
        out.asnumpy()
        return (clock() - t) / n

    def build():
        it = data._create_sink_iterator(num_epochs=1)
        t = clock()
        k = sum(1 for _ in it)
        dt = clock() - t
        it.stop()
        return dt / k

    rows = {"fixed": [], "fixed median": [], "no fetch": [], "loop": [], "build": [], "epoch start": [], "epoch loop": [], "epoch end": [],
            "sink start": [], "sink loop": [], "sink end": [], "epoch": [], "sink": []}
    for _ in range(args.rounds):
        mean, median = fixed()
        rows["fixed"].append(mean)
        rows["fixed median"].append(np.array([median, np.nan, np.nan]))
        rows["no fetch"].append(no_fetch())
        s, lp, e = timed_train(model, 1, built)
        rows["loop"].append(lp / n)
        rows["build"].append(build())
        s, lp, e = timed_train(model, 1, data)
        rows["epoch start"].append(s / n)
        rows["epoch loop"].append(lp / n)
        rows["epoch end"].append(e / n)
        rows["epoch"].append((s + lp + e) / n)
        s, lp, e = timed_train(model, sinks, data, dataset_sink_mode=True, sink_size=args.sink)
        k = sinks * args.sink
        rows["sink start"].append(s / k)
        rows["sink loop"].append(lp / k)
        rows["sink end"].append(e / k)
        rows["sink"].append((s + lp + e) / k)
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, threads "
          f"{mycel.get_context('num_threads')}, {n} batches, sink_size {args.sink}, {args.rounds} rounds, "
          f"load {os.getloadavg()[0]:.1f}")
    print("  (per step: wall ms, process CPU ms, sleeps; step / this: the fixed step's figure over this row's)")
    fx = np.median(np.array(rows["fixed"]), axis=0)
    for k, v in rows.items():
        med = np.median(np.array(v), axis=0)
        extra = (f"   step / this {fx[0] / med[0] * 100:5.1f}% wall, {fx[1] / med[1] * 100:5.1f}% CPU"
                 if k in ("no fetch", "loop", "epoch", "sink", "epoch loop", "sink loop") else "")
        print(f"  {k:12s} {med[0] * 1e3:7.3f} {med[1] * 1e3:7.3f} {med[2]:6.1f}{extra}")


if __name__ == "__main__":
    main()
