"""Where the time of a LeNet5 Fashion-MNIST epoch goes (issue 19 item 2): the pipeline alone,
the fixed-batch step alone, a hand-written loop (time waiting for the next batch vs time in the
step), Model.train without callbacks, with a do-nothing callback, and with
dataset_sink_mode=True. Graph mode, batch 64, one process; run it once per OMP_WAIT_POLICY:

    .venv/bin/python bench/bench_loop.py [--steps 400] [--rounds 3] [--workers N] [--prefetch N]
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/bench_loop.py
    MYCEL_DATA_FUSE=0 ...      # without fused transforms and map-and-batch

Besides wall time it prints the process's CPU time per image (all threads): on a loaded machine
the wall figures measure the scheduler, the CPU figures much less so. The difference between an
epoch's and the fixed-batch step's CPU per image is what the pipeline and the loop cost.
"""
import argparse
import os
import resource
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


def cpu_s():
    """This process's CPU time (every thread), for core-us per image: on a loaded machine the
    wall figures measure the scheduler, the CPU figures much less so."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Nothing(Callback):
    """A callback that overrides nothing: it must cost nothing."""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=400, help="batches per measurement")
    ap.add_argument("--sink-size", type=int, default=100)
    ap.add_argument("--workers", type=int, default=0, help="ds.config num_parallel_workers (0: default)")
    ap.add_argument("--prefetch", type=int, default=0, help="ds.config prefetch_size (0: default)")
    ap.add_argument("--rounds", type=int, default=1, help="alternating rounds (medians printed)")
    args = ap.parse_args()
    import mycel.dataset as ds
    if args.workers:
        ds.config.set_num_parallel_workers(args.workers)
    if args.prefetch:
        ds.config.set_prefetch_size(args.prefetch)
    n = args.steps
    mycel.set_context(mode=mycel.GRAPH_MODE)
    mycel.set_seed(0)
    net = LeNet5()
    opt = nn.Momentum(net.trainable_params(), 0.01, 0.9)
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), opt)
    step = model.train_network
    data = fashion_dataset(BATCH).take(n)
    model.train(1, data.take(10))  # compile
    print(f"threads {mycel.get_context('num_threads')}, OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY', '(unset)')}, {n} batches of {BATCH}, pipeline workers "
          f"{ds.config.get_num_parallel_workers()}, prefetch {ds.config.get_prefetch_size()}, "
          f"MYCEL_DATA_FUSE={os.environ.get('MYCEL_DATA_FUSE', '(unset)')}")
    rows, cpu = {}, {}

    def record(name, dt, dc):
        rows.setdefault(name, []).append(dt)
        cpu.setdefault(name, []).append(dc)

    def pipeline_alone():
        it = data.create_tuple_iterator(num_epochs=1)
        c, t = cpu_s(), time.perf_counter()
        for _ in it:
            pass
        record("pipeline alone", time.perf_counter() - t, cpu_s() - c)

    x = Tensor(np.random.default_rng(0).standard_normal((BATCH, 1, 32, 32)).astype(np.float32))
    y = Tensor(np.zeros(BATCH, np.int32))
    for _ in range(10):
        step(x, y)

    def fixed_step():
        c, t = cpu_s(), time.perf_counter()
        for _ in range(n):
            step(x, y)
        step(x, y).asnumpy()
        record("fixed-batch step", time.perf_counter() - t, cpu_s() - c)

    waits, steps = [], []

    def hand_loop():
        it = data.create_tuple_iterator(num_epochs=1)
        c, t = cpu_s(), time.perf_counter()
        while True:
            t0 = time.perf_counter()
            try:
                row = next(it)
            except StopIteration:
                break
            t1 = time.perf_counter()
            step(*row)
            t2 = time.perf_counter()
            waits.append(t1 - t0)
            steps.append(t2 - t1)
        record("hand loop", time.perf_counter() - t, cpu_s() - c)

    def trains():
        for name, kw in [("Model.train", {}), ("Model.train + empty callback", {"callbacks": [Nothing()]}),
                         (f"Model.train sink_size={args.sink_size}",
                          {"dataset_sink_mode": True, "sink_size": args.sink_size})]:
            epochs = 1
            if kw.get("dataset_sink_mode"):
                epochs = max(n // args.sink_size, 1)
            c, t = cpu_s(), time.perf_counter()
            model.train(epochs, data, **kw)
            record(name, time.perf_counter() - t, cpu_s() - c)

    for _ in range(args.rounds):  # alternating, so a change of load hits every measurement
        pipeline_alone()
        fixed_step()
        hand_loop()
        trains()
    rows = {k: statistics.median(v) for k, v in rows.items()}
    cpu = {k: statistics.median(v) for k, v in cpu.items()}

    base = rows["fixed-batch step"]
    print(f"{'measurement':36s} {'ms/batch':>9s} {'img/s':>8s} {'vs step':>8s} {'core-us/img':>12s}")
    for name, dt in rows.items():
        print(f"{name:36s} {dt / n * 1e3:9.3f} {n * BATCH / dt:8.0f} {base / dt * 100:7.0f}% "
              f"{cpu[name] / (n * BATCH) * 1e6:12.2f}")
    print(f"hand loop: median wait for next batch {statistics.median(waits) * 1e3:.3f} ms "
          f"(mean {statistics.mean(waits) * 1e3:.3f}), median step call {statistics.median(steps) * 1e3:.3f} ms "
          f"(mean {statistics.mean(steps) * 1e3:.3f})")


if __name__ == "__main__":
    main()
