"""The Fashion-MNIST epoch's batch build alone (issue 19 item 2): the harness's exact pipeline
(bench/harness/worker_mycel.py fashion_dataset: MnistDataset -> Resize(32, 32) -> Rescale ->
Rescale -> HWC2CHW -> batch(64)), built on the consumer's thread as Model.train's loop builds it
(the sink iterator's pipe.next, no Python conversion), without a training step, A B A B in one
process:
the row pass (MYCEL_DATA_ROWPASS=0: off) and the source's row prefetch (MYCEL_DATA_PREFETCH_ROWS=0:
off) each on and off, and fusion off
(MYCEL_DATA_FUSE=0; that tree runs on its own threads, so its CPU column is the wait). Printed per variant, in microseconds per batch, the median over rounds of:
the wall time, the loop thread's CPU time, and the best round's wall time.

    env -u OMP_WAIT_POLICY .venv/bin/python bench/bench_batch_build.py [--rounds 7] [--batches 300]
"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))

import mycel  # noqa: E402
from worker_mycel import fashion_dataset  # noqa: E402

VARIANTS = {"default": {}, "no row prefetch": {"MYCEL_DATA_PREFETCH_ROWS": "0"},
            "no row pass": {"MYCEL_DATA_ROWPASS": "0"},
            "neither": {"MYCEL_DATA_ROWPASS": "0", "MYCEL_DATA_PREFETCH_ROWS": "0"},
            "unfused": {"MYCEL_DATA_FUSE": "0"}}
KEYS = ("MYCEL_DATA_ROWPASS", "MYCEL_DATA_FUSE", "MYCEL_DATA_PREFETCH_ROWS")


def run(env, batches):
    for k in KEYS:
        os.environ.pop(k, None)
    os.environ.update(env)
    it = fashion_dataset(64)._create_sink_iterator(num_epochs=1)  # keep it: dropping it stops it
    pipe = it._pipe
    if not pipe.on_consumer and "MYCEL_DATA_FUSE" not in env:  # unfused: on its threads
        raise SystemExit(f"the pipeline did not run on the consumer ({env})")
    for _ in range(5):  # warm-up: the source's first reads, the tap tables
        pipe.next(False)
    c0, t0 = time.thread_time(), time.perf_counter()
    for _ in range(batches):
        pipe.next(False)
    dt, dc = time.perf_counter() - t0, time.thread_time() - c0
    return dt / batches * 1e6, dc / batches * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--batches", type=int, default=300)
    ap.add_argument("--no-unfused", action="store_true")
    a = ap.parse_args()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    names = [n for n in VARIANTS if not (a.no_unfused and n == "unfused")]
    res = {n: [] for n in names}
    for _ in range(a.rounds):
        for n in names:
            res[n].append(run(VARIANTS[n], a.batches))
    print(f"load: {os.getloadavg()[0]:.2f}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(default)')}")
    print(f"{'variant':<22} {'wall us':>8} {'CPU us':>8} {'best us':>8} {'batches/s':>10}")
    for n in names:
        w = statistics.median(r[0] for r in res[n])
        cu = statistics.median(r[1] for r in res[n])
        best = min(r[0] for r in res[n])
        print(f"{n:<22} {w:>8.1f} {cu:>8.1f} {best:>8.1f} {1e6 / w:>10.0f}")


if __name__ == "__main__":
    main()
