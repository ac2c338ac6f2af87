"""The epoch's speed against the fixed-batch step's, measured so that a loaded machine hits both
alike: Model.train in sink mode over the Fashion-MNIST pipeline (LeNet5, batch 64, graph mode),
and after every sink of --chunk steps, --chunk fixed-batch steps of the same train network on one
batch, timed apart. Load that comes and goes then falls on both halves; the figure is
sum(step time) / sum(sink time) over all chunks (with the median of the per-chunk ratios).

    .venv/bin/python bench/bench_epoch_ratio.py [--chunks 20] [--chunk 50] [--workers N]
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/bench_epoch_ratio.py
    MYCEL_DATA_FUSE=0 .venv/bin/python bench/bench_epoch_ratio.py --workers 2   # the old path
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
import mycel.dataset as ds  # noqa: E402
from mycel import Tensor, nn  # noqa: E402
from mycel.train import Model  # noqa: E402
from mycel.train.callback import Callback  # noqa: E402
from lenet5 import LeNet5  # noqa: E402
from worker_mycel import fashion_dataset  # noqa: E402

BATCH = 64


class Interleave(Callback):
    """Times each sink (an "epoch" of sink_size steps), then runs as many fixed-batch steps."""

    def __init__(self, step, chunk):
        self.step, self.chunk = step, chunk
        rng = np.random.default_rng(0)
        self.x = Tensor(rng.standard_normal((BATCH, 1, 32, 32)).astype(np.float32))
        self.y = Tensor(np.zeros(BATCH, np.int32))
        self.sink, self.fixed = [], []

    def on_train_epoch_begin(self, run_context):
        self.t = time.perf_counter()

    def on_train_epoch_end(self, run_context):
        loss = run_context.original_args().net_outputs
        np.asarray(loss.asnumpy())  # the sink's last step has finished
        self.sink.append(time.perf_counter() - self.t)
        t = time.perf_counter()
        for _ in range(self.chunk):
            out = self.step(self.x, self.y)
        out.asnumpy()
        self.fixed.append(time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=20)
    ap.add_argument("--chunk", type=int, default=50, help="steps per sink and per fixed-batch run")
    ap.add_argument("--workers", type=int, default=0, help="ds.config num_parallel_workers (0: default)")
    args = ap.parse_args()
    if args.workers:
        ds.config.set_num_parallel_workers(args.workers)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    mycel.set_seed(0)
    net = LeNet5()
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                  nn.Momentum(net.trainable_params(), 0.01, 0.9))
    data = fashion_dataset(BATCH)
    model.train(1, data.take(10))  # compile
    cb = Interleave(model.train_network, args.chunk)
    for _ in range(5):  # warm the fixed-batch path too
        cb.step(cb.x, cb.y)
    model.train(args.chunks + 1, data, callbacks=[cb], dataset_sink_mode=True, sink_size=args.chunk)
    sink, fixed = cb.sink[1:], cb.fixed[1:]  # the first sink includes the pipeline's start
    ratio = sum(fixed) / sum(sink)
    per = statistics.median(f / s for f, s in zip(fixed, sink))
    n = len(sink) * args.chunk * BATCH
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, MYCEL_DATA_FUSE="
          f"{os.environ.get('MYCEL_DATA_FUSE', '(unset)')}, pipeline workers {ds.config.get_num_parallel_workers()}, "
          f"{len(sink)} chunks of {args.chunk} steps")
    print(f"sink {n / sum(sink):.0f} img/s, fixed-batch step {n / sum(fixed):.0f} img/s, "
          f"epoch / step {ratio * 100:.0f}% (median per chunk {per * 100:.0f}%)")


if __name__ == "__main__":
    main()
