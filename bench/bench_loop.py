"""Where the time of a LeNet5 Fashion-MNIST epoch goes (issue 19 item 2): the pipeline alone,
the fixed-batch step alone, a hand-written loop (time waiting for the next batch vs time in the
step), Model.train without callbacks, with a do-nothing callback, and with
dataset_sink_mode=True. Graph mode, batch 64, one process; run it once per OMP_WAIT_POLICY:

    .venv/bin/python bench/bench_loop.py [--steps 400]
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/bench_loop.py
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


class Nothing(Callback):
    """A callback that overrides nothing: it must cost nothing."""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=400, help="batches per measurement")
    ap.add_argument("--sink-size", type=int, default=100)
    args = ap.parse_args()
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
          f"{os.environ.get('OMP_WAIT_POLICY', '(unset)')}, {n} batches of {BATCH}")
    rows = {}

    it = data.create_tuple_iterator(num_epochs=1)
    t = time.perf_counter()
    for _ in it:
        pass
    rows["pipeline alone"] = time.perf_counter() - t

    x = Tensor(np.random.default_rng(0).standard_normal((BATCH, 1, 32, 32)).astype(np.float32))
    y = Tensor(np.zeros(BATCH, np.int32))
    for _ in range(10):
        step(x, y)
    t = time.perf_counter()
    for _ in range(n):
        step(x, y)
    step(x, y).asnumpy()
    rows["fixed-batch step"] = time.perf_counter() - t

    waits, steps = [], []
    it = data.create_tuple_iterator(num_epochs=1)
    t = time.perf_counter()
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
    rows["hand loop"] = time.perf_counter() - t

    for name, kw in [("Model.train", {}), ("Model.train + empty callback", {"callbacks": [Nothing()]}),
                     (f"Model.train sink_size={args.sink_size}",
                      {"dataset_sink_mode": True, "sink_size": args.sink_size})]:
        epochs = 1
        if kw.get("dataset_sink_mode"):
            epochs = max(n // args.sink_size, 1)
        t = time.perf_counter()
        model.train(epochs, data, **kw)
        rows[name] = time.perf_counter() - t

    base = rows["fixed-batch step"]
    print(f"{'measurement':36s} {'ms/batch':>9s} {'img/s':>8s} {'vs step':>8s}")
    for name, dt in rows.items():
        print(f"{name:36s} {dt / n * 1e3:9.3f} {n * BATCH / dt:8.0f} {base / dt * 100:7.0f}%")
    print(f"hand loop: median wait for next batch {statistics.median(waits) * 1e3:.3f} ms "
          f"(mean {statistics.mean(waits) * 1e3:.3f}), median step call {statistics.median(steps) * 1e3:.3f} ms "
          f"(mean {statistics.mean(steps) * 1e3:.3f})")


if __name__ == "__main__":
    main()
