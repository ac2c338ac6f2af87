"""Where the Fashion-MNIST input pipeline's time goes (issue 19 item 2), without training:
MnistDataset -> Resize(32, 32) -> Rescale -> Rescale (the normalization) -> HWC2CHW -> batch(64),
iterated to the end of one epoch. Each row adds one transform to the previous row's chain, so the
difference between two rows is that transform's cost. Printed per row: images/s (wall), and the
process's CPU time per image in microseconds (all threads: the pipeline's workers, its dispatchers
and the iterator), which is what the pipeline takes away from the training step's two cores.

    .venv/bin/python bench/bench_epoch_pipeline.py [--workers 1 2] [--prefetch 16] [--rounds 3]
    MYCEL_DATA_FUSE=0 .venv/bin/python bench/bench_epoch_pipeline.py   # the unfused path

A figure is the best (the fastest, the least CPU) of --rounds runs: on a loaded machine the other
processes only ever add time, so the best run is the closest to a quiet machine's.
"""
import argparse
import os
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))

import mycel.dataset as ds  # noqa: E402
from mycel.dataset import vision  # noqa: E402
from common import FASHION_DIR  # noqa: E402

BATCH = 64


def chain():
    return [("Resize(32,32)", vision.Resize((32, 32))), ("Rescale(1/255)", vision.Rescale(1.0 / 255.0, 0.0)),
            ("Rescale(normalize)", vision.Rescale(1 / 0.3530, -0.2860 / 0.3530)), ("HWC2CHW", vision.HWC2CHW())]


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(n_ops, workers, limit):
    data = ds.MnistDataset(FASHION_DIR, usage="train", shuffle=True, num_parallel_workers=workers)
    ops = [op for _, op in chain()[:n_ops]]
    if ops:
        data = data.map(ops, input_columns="image", num_parallel_workers=workers)
    data = data.batch(BATCH, drop_remainder=True, num_parallel_workers=workers)
    if limit:
        data = data.take(limit)
    it = data.create_tuple_iterator(num_epochs=1)
    c0, t0 = cpu_s(), time.perf_counter()
    n = 0
    for _ in it:
        n += 1
    dt, dc = time.perf_counter() - t0, cpu_s() - c0
    return n * BATCH / dt, dc / (n * BATCH) * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--prefetch", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batches", type=int, default=0, help="only the first N batches (0: the epoch)")
    args = ap.parse_args()
    if args.prefetch:
        ds.config.set_prefetch_size(args.prefetch)
    print(f"MYCEL_DATA_FUSE={os.environ.get('MYCEL_DATA_FUSE', '(unset)')}, prefetch "
          f"{ds.config.get_prefetch_size()}, batch {BATCH}, best of {args.rounds} rounds")
    names = ["source + batch"] + ["+ " + n for n, _ in chain()]
    for w in args.workers:
        print(f"\nnum_parallel_workers={w}")
        print(f"{'chain':24s} {'img/s':>9s} {'core-us/img':>12s} {'added core-us':>14s}")
        prev = None
        for k, name in enumerate(names):
            runs = [run(k, w, args.batches) for _ in range(args.rounds)]
            ips = max(r[0] for r in runs)
            cus = min(r[1] for r in runs)
            added = "" if prev is None else f"{cus - prev:14.2f}"
            print(f"{name:24s} {ips:9.0f} {cus:12.2f} {added}", flush=True)
            prev = cus


if __name__ == "__main__":
    main()
