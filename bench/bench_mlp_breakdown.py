"""The MLP training step (bench/harness: 784-512-512-10, batch 128, momentum SGD, same weights
and batch) launch by launch, against the machine's float32 peak: each launch's median and
minimum time under mycel.Profiler, each matmul's GFLOP/s and share of the two-core FMA peak,
the time outside kernels (the step's wall median minus the sum of the launch medians) and the
OpenMP parallel regions (fork/joins) per step. docs/perf_mlp.md holds its before/after tables.

    .venv/bin/python bench/bench_mlp_breakdown.py [--steps 200] [--peak 181.7] [--forks]

--forks counts parallel regions by re-running itself with a small LD_PRELOAD shim around
libgomp's GOMP_parallel (compiled here with `cc`; skipped if there is no compiler). The peak is
docs/performance.md's (the harness's FMA loop): pass the one measured on your machine.
"""
import argparse
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness"))
import worker_mycel as W  # noqa: E402

import mycel  # noqa: E402
from mycel import Tensor  # noqa: E402

# Counts GOMP_parallel calls that start more than one thread (libgomp is found by name: the
# extension loads it with RTLD_LOCAL, out of RTLD_NEXT's reach).
SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
static atomic_long n_par;
long mycel_bench_forks(void) { return atomic_load(&n_par); }
void GOMP_parallel(void (*fn)(void*), void* data, unsigned nthr, unsigned flags) {
  static void (*real)(void (*)(void*), void*, unsigned, unsigned);
  static int (*maxt)(void);
  if (!real) {
    void* h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    real = dlsym(h, "GOMP_parallel");
    maxt = dlsym(h, "omp_get_max_threads");
  }
  if (nthr > 1 || (nthr == 0 && maxt() > 1)) atomic_fetch_add(&n_par, 1);
  real(fn, data, nthr, flags);
}
"""

B = 128
MATMUL_FLOPS = {"l1": 2 * B * 784 * 512, "l2": 2 * B * 512 * 512, "l3": 2 * B * 512 * 10}
STEP_FLOPS = 410_714_112  # PyTorch's FlopCounterMode for this step (bench/harness)


def matmul_flops(name, nbytes, seen):
    """FLOPs of a dense/matmul launch, told apart by output bytes (the two 128x512 outputs of
    each kind by order: forward layer 1 then 2; backward dx3 then dx2)."""
    kind = name.split("+")[0].split("{")[0]
    if kind not in ("dense", "matmul"):
        return 0
    k = (kind, nbytes)
    seen[k] = seen.get(k, 0) + 1
    i = min(seen[k], 2) - 1
    if kind == "dense":
        return {B * 512 * 4: [MATMUL_FLOPS["l1"], MATMUL_FLOPS["l2"]][i],
                B * 10 * 4: MATMUL_FLOPS["l3"]}.get(nbytes, 0)
    return {784 * 512 * 4: MATMUL_FLOPS["l1"], 512 * 512 * 4: MATMUL_FLOPS["l2"],
            10 * 512 * 4: MATMUL_FLOPS["l3"],
            B * 512 * 4: [MATMUL_FLOPS["l3"], MATMUL_FLOPS["l2"]][i]}.get(nbytes, 0)


def forks_counter():
    try:
        f = ctypes.CDLL(None).mycel_bench_forks
    except AttributeError:
        return None
    f.restype = ctypes.c_long
    return f


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--peak", type=float, default=181.7, help="two-core float32 peak, GFLOP/s")
    ap.add_argument("--forks", action="store_true", help="count OpenMP parallel regions per step")
    a = ap.parse_args()
    if a.forks and "MYCEL_BENCH_SHIM" not in os.environ:
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc:
            d = tempfile.mkdtemp()
            src, lib = os.path.join(d, "shim.c"), os.path.join(d, "shim.so")
            with open(src, "w") as f:
                f.write(SHIM)
            subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", lib, src, "-ldl"], check=True)
            env = dict(os.environ, MYCEL_BENCH_SHIM="1", LD_PRELOAD=lib)
            sys.exit(subprocess.run([sys.executable] + sys.argv, env=env).returncode)
        print("no C compiler: parallel regions not counted")
    mycel.set_context(mode=mycel.GRAPH_MODE)
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "init.npz")
        W.init("mlp", p)
        x, y, params = W.load(p)
    step = W.train_step(W.make_net("mlp"), params)
    xt, yt = Tensor(x), Tensor(y.astype(np.int32))
    for _ in range(20):
        step(xt, yt).asnumpy()
    count = forks_counter()
    c0 = count() if count else 0
    wall = []
    for _ in range(a.steps):
        t = time.perf_counter()
        step(xt, yt).asnumpy()
        wall.append(time.perf_counter() - t)
    forks = (count() - c0) / a.steps if count else None
    wall_ms = statistics.median(wall) * 1e3
    with tempfile.TemporaryDirectory() as d:
        prof = mycel.Profiler(output_path=d)
        for _ in range(a.steps):
            step(xt, yt).asnumpy()
        prof.analyse()
        ev = prof.events()
    n = len(ev) // a.steps
    rows, seen = [], {}
    for i in range(n):
        ds = [(ev[j * n + i][2] - ev[j * n + i][1]) / 1e3 for j in range(a.steps)]
        name, nbytes = ev[i][0], ev[i][3]
        rows.append((name, nbytes, statistics.median(ds), min(ds), matmul_flops(name, nbytes, seen)))
    kern = sum(r[2] for r in rows) / 1e3
    mm = sum(r[2] for r in rows if r[4]) / 1e3
    gf = STEP_FLOPS / wall_ms / 1e6
    print(f"step wall median {wall_ms:.3f} ms: {gf:.1f} GFLOP/s = {gf / a.peak * 100:.1f}% of the "
          f"{a.peak} GFLOP/s peak; launches/step {n}; parallel regions/step "
          f"{'-' if forks is None else f'{forks:.1f}'}")
    print(f"kernels (sum of launch medians) {kern:.3f} ms: matmul/dense {mm:.3f}, other "
          f"{kern - mm:.3f}; outside kernels {wall_ms - kern:.3f} ms")
    print("\n| # | launch | out bytes | median us | min us | GFLOP/s (min) | % of peak (min) |")
    print("|---|---|---|---|---|---|---|")
    for i, (name, nbytes, med, mn, fl) in enumerate(rows):
        g = f"{fl / mn / 1e3:.0f} | {fl / mn / 1e3 / a.peak * 100:.0f}%" if fl else " | "
        print(f"| {i} | {name[:64]} | {nbytes} | {med:.1f} | {mn:.1f} | {g} |")


if __name__ == "__main__":
    main()
