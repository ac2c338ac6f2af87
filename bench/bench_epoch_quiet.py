"""The epoch-to-step ratio of LeNet5 on Fashion-MNIST (issue 19 item 2) measured in the quiet
moments of a shared machine: one process alternates sinks with the pipeline on its own threads
(MYCEL_DATA_ON_CONSUMER=0), sinks with the pipeline on the training loop's thread (the default)
and fixed-batch steps, in chunks of --steps steps, and notes for each chunk how much CPU the
other processes of the machine took meanwhile (/proc/stat's busy time less this process's).
Only rounds in which every chunk had the machine to itself (others below --max-others cores)
count; their medians are printed.

    .venv/bin/python bench/bench_epoch_quiet.py [--rounds 12] [--steps 100] [--max-others 0.1]
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/bench_epoch_quiet.py

/proc/stat counts in ticks of 10 ms, so a chunk should last a few tenths of a second.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))

import mycel  # noqa: E402
from mycel import Tensor, nn  # noqa: E402
from mycel.train import Model  # noqa: E402
from mycel.train.callback import Callback  # noqa: E402
from lenet5 import LeNet5  # noqa: E402
from worker_mycel import fashion_dataset  # noqa: E402

BATCH = 64
TICK = os.sysconf("SC_CLK_TCK")


def machine_busy():
    """Busy CPU seconds of the whole machine (every core; steal counts as busy)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]  # idle + iowait
    return (sum(v[:8]) - idle) / TICK


def own_cpu():
    with open("/proc/self/stat") as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Window:
    """Wall time of a chunk and the CPU the rest of the machine used during it (cores)."""

    def __enter__(self):
        self.t, self.m, self.o = time.perf_counter(), machine_busy(), own_cpu()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t
        others = (machine_busy() - self.m) - (own_cpu() - self.o)
        self.others = max(others, 0.0) / self.wall


class TimeSecond(Callback):
    """Times the second sink of a train call (the first one includes the pipeline's start)."""

    def on_train_epoch_begin(self, run_context):
        if run_context.original_args().cur_epoch_num == 2:
            self.w = Window().__enter__()

    def on_train_epoch_end(self, run_context):
        if run_context.original_args().cur_epoch_num == 2:
            run_context.original_args().net_outputs.asnumpy()
            self.w.__exit__()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=12, help="quiet rounds wanted")
    ap.add_argument("--steps", type=int, default=100, help="steps per chunk")
    ap.add_argument("--max-others", type=float, default=0.1, help="cores the others may use")
    ap.add_argument("--timeout", type=float, default=300, help="seconds to look for quiet rounds")
    args = ap.parse_args()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    mycel.set_seed(0)
    net = LeNet5()
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                  nn.Momentum(net.trainable_params(), 0.01, 0.9))
    data = fashion_dataset(BATCH)
    model.train(1, data.take(20))
    step = model.train_network
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((BATCH, 1, 32, 32)).astype(np.float32))
    y = Tensor(np.zeros(BATCH, np.int32))
    for _ in range(10):
        step(x, y)

    def sink(flag):
        os.environ["MYCEL_DATA_ON_CONSUMER"] = flag
        cb = TimeSecond()
        model.train(2, data, callbacks=[cb], dataset_sink_mode=True, sink_size=args.steps)
        return cb.w

    def fixed():
        with Window() as w:
            for _ in range(args.steps):
                out = step(x, y)
            out.asnumpy()
        return w

    quiet, tried, start = [], 0, time.perf_counter()
    while len(quiet) < args.rounds and time.perf_counter() - start < args.timeout:
        tried += 1
        ws = {"fixed": fixed(), "threads": sink("0"), "consumer": sink("1")}
        if max(w.others for w in ws.values()) <= args.max_others:
            quiet.append({k: w.wall / args.steps for k, w in ws.items()})
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, GOMP_SPINCOUNT="
          f"{os.environ.get('GOMP_SPINCOUNT', '(unset)')}, threads {mycel.get_context('num_threads')}, "
          f"chunks of {args.steps} steps: {len(quiet)} quiet rounds of {tried} "
          f"(others <= {args.max_others} cores)")
    if not quiet:
        return
    med = {k: statistics.median(r[k] for r in quiet) for k in quiet[0]}
    for k in ("fixed", "threads", "consumer"):
        ratio = statistics.median(r["fixed"] / r[k] for r in quiet)
        print(f"  {k:9s} {med[k] * 1e3:.3f} ms/step  {BATCH / med[k]:8.0f} img/s  "
              f"step / this {ratio * 100:.0f}% (median per round)")


if __name__ == "__main__":
    main()
