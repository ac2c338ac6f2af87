"""What building one batch costs when the pipeline runs on its consumer's thread (issue 19 item 2,
"one pool"): the Fashion-MNIST LeNet5 chain grown one stage at a time (MnistDataset + batch(64);
+ Rescale, Rescale, HWC2CHW; + Resize(32, 32)), each batch timed alone, on 1 and 2 OpenMP
threads, beside the fixed-batch training step timed the same way. In Model.train's loop the
epoch pays step + build per batch, so step / (step + build) is the epoch's fraction of the step.

    .venv/bin/python bench/bench_epoch_consumer.py [--batches 600] [--threads 1 2]

Printed: min, 5th and 25th percentile and median per batch. On a loaded machine the low
percentiles are the runs the scheduler left alone, the closest to a quiet machine's figures.
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))

import mycel  # noqa: E402
import mycel.dataset as ds  # noqa: E402
from mycel import Tensor, nn  # noqa: E402
from mycel.dataset import vision  # noqa: E402
from mycel.train import Model  # noqa: E402
from common import FASHION_DIR  # noqa: E402
from lenet5 import LeNet5  # noqa: E402

BATCH = 64


def chains():
    src = lambda: ds.MnistDataset(FASHION_DIR, usage="train", shuffle=True)  # noqa: E731
    norm = lambda: [vision.Rescale(1.0 / 255.0, 0.0), vision.Rescale(1 / 0.3530, -0.2860 / 0.3530),  # noqa: E731
                    vision.HWC2CHW()]
    return {
        "MnistDataset + batch(64)": lambda: src().batch(BATCH, drop_remainder=True),
        "+ Rescale, Rescale, HWC2CHW": lambda: src().map(norm(), input_columns="image").batch(
            BATCH, drop_remainder=True),
        "+ Resize(32, 32)": lambda: src().map([vision.Resize((32, 32))] + norm(), input_columns="image").batch(
            BATCH, drop_remainder=True),
    }


def spread(times):
    v = np.sort(np.asarray(times)) * 1e3
    return (f"min {v[0]:.3f}  p5 {np.percentile(v, 5):.3f}  p25 {np.percentile(v, 25):.3f}  "
            f"median {np.median(v):.3f} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=600)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    mycel.set_seed(0)
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, {args.batches} batches of "
          f"{BATCH}, load {os.getloadavg()[0]:.1f}")
    for nt in args.threads:
        mycel.set_context(num_threads=nt)
        for name, make in chains().items():
            it = make()._create_sink_iterator(num_epochs=1)  # keep it: dropping it stops the pipeline
            pipe = it._pipe
            if not pipe.on_consumer:
                raise SystemExit(f"{name}: the pipeline did not run on the consumer")
            times = []
            for _ in range(args.batches):
                t = time.perf_counter()
                pipe.next(False)
                times.append(time.perf_counter() - t)
            print(f"{nt} thread(s)  build  {name:30s} {spread(times)}")
        net = LeNet5()
        step = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                     nn.Momentum(net.trainable_params(), 0.01, 0.9)).train_network
        rng = np.random.default_rng(0)
        x = Tensor(rng.standard_normal((BATCH, 1, 32, 32)).astype(np.float32))
        y = Tensor(np.zeros(BATCH, np.int32))
        times = []
        for i in range(args.batches + 10):
            t = time.perf_counter()
            step(x, y).asnumpy()
            if i >= 10:
                times.append(time.perf_counter() - t)
        print(f"{nt} thread(s)  fixed-batch training step            {spread(times)}")


if __name__ == "__main__":
    main()
