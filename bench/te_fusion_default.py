"""TE fusion by default: for LeNet5, the MLP and the transformer of bench_train.py, a graph-mode
training step compiled with the fused-elementwise interpreter only (MYCEL_TE_FUSION=0, the
default before), with MYCEL_TE_FUSION=1 (chains and the reductions they feed compiled by mycel.te
before the first step: cold cache, then cached) and with the default (MYCEL_TE_FUSION unset =
async: the interpreter until each chain's kernel is built in the background; cold, then cached).
Prints the first step (compile included), the median step while background builds run, and the
median step after them; and the TE kernels and their compile time.
Not a test.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/te_fusion_default.py [lenet5 mlp transformer]

`--steps NAME N` only runs N steps of one workload under the environment's MYCEL_TE_FUSION and
MYCEL_TE_CACHE (for A/B runs of whole processes timed from outside, a warm cache for TE).
"""
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import WORKLOADS, mycel_step  # noqa: E402

import mycel  # noqa: E402
from mycel._mycel import te as _te  # noqa: E402

STEPS = 10


def run(name, mode, cache):
    make, _, shape, batch, _ = WORKLOADS[name]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch,) + shape).astype(np.float32)
    y = rng.integers(0, 10, batch)
    mycel.set_seed(1)
    init = [p.asnumpy() for p in make().trainable_params()]
    os.environ["MYCEL_TE_CACHE"] = cache
    if mode:
        os.environ["MYCEL_TE_FUSION"] = mode
    try:
        t0 = time.perf_counter()
        step = mycel_step(make, init, x, y, mycel.GRAPH_MODE)
        losses = [step()]
        first = time.perf_counter() - t0
        during = []
        for _ in range(STEPS):
            t0 = time.perf_counter()
            losses.append(step())
            during.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        built = _te.wait_background_builds()
        waited = time.perf_counter() - t0
        after = []
        for _ in range(STEPS):
            t0 = time.perf_counter()
            losses.append(step())
            after.append(time.perf_counter() - t0)
    finally:
        os.environ.pop("MYCEL_TE_FUSION", None)
    kernels = len([f for f in os.listdir(cache) if f.endswith(".so")])
    return first, statistics.median(during), statistics.median(after), built, waited, kernels, losses


def steps_only(name, n):
    make, _, shape, batch, _ = WORKLOADS[name]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch,) + shape).astype(np.float32)
    y = rng.integers(0, 10, batch)
    mycel.set_seed(1)
    step = mycel_step(make, [p.asnumpy() for p in make().trainable_params()], x, y, mycel.GRAPH_MODE)
    for _ in range(n):
        step()


def main():
    if sys.argv[1:2] == ["--steps"]:
        return steps_only(sys.argv[2], int(sys.argv[3]))
    names = sys.argv[1:] or ["lenet5", "mlp", "transformer"]
    print("workload     mode                     first step s  step ms (first 10)  step ms (after)  "
          "TE kernels  bg wait s")
    for name in names:
        cold = tempfile.mkdtemp(prefix="te_cold_")
        cold_async = tempfile.mkdtemp(prefix="te_async_")
        rows = [("interpreter (=0)", "0", tempfile.mkdtemp(prefix="te_none_")),
                ("TE=1, cold cache", "1", cold), ("TE=1, cached", "1", cold),
                ("default (async), cold", "", cold_async),
                ("default (async), cached", "", cold_async)]
        ref = None
        for label, mode, cache in rows:
            first, during, after, built, waited, kernels, losses = run(name, mode, cache)
            ref = ref or losses
            gap = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, ref))
            print(f"{name:12s} {label:24s} {first:12.2f} {during * 1e3:19.2f} {after * 1e3:16.2f}  "
                  f"{kernels:10d} {waited:10.2f}   (loss gap {gap:.1e})")


if __name__ == "__main__":
    main()
