"""Eager dispatch overhead: a tiny add called 100k times, Mycel vs PyTorch (if installed), in one
interleaved run. Prints microseconds per call (best of several rounds) and the ratio.

    .venv/bin/python bench/bench_dispatch.py [--calls 100000] [--rounds 5]
"""
import argparse
import time

import numpy as np

import mycel
from mycel import ops


def per_call_us(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    try:
        import torch
        torch.set_num_threads(mycel.get_context("num_threads"))
    except ImportError:
        torch = None

    a = mycel.Tensor(np.ones(4, np.float32))
    b = mycel.Tensor(np.ones(4, np.float32))
    cases = {
        "mycel ops.add(a, b)": lambda: ops.add(a, b),
        "mycel a + b": lambda: a + b,
        "mycel a + 1.0": lambda: a + 1.0,
    }
    if torch is not None:
        ta, tb = torch.ones(4), torch.ones(4)
        cases.update({
            "torch torch.add(a, b)": lambda: torch.add(ta, tb),
            "torch a + b": lambda: ta + tb,
            "torch a + 1.0": lambda: ta + 1.0,
        })
    best = {k: float("inf") for k in cases}
    for _ in range(args.rounds):  # interleave frameworks so machine noise hits both alike
        for k, fn in cases.items():
            best[k] = min(best[k], per_call_us(fn, args.calls))
    print(f"eager dispatch, tiny add (4 floats), {args.calls} calls, best of {args.rounds} rounds")
    for k, v in best.items():
        print(f"  {k:28s} {v:7.3f} us/call")
    if torch is not None:
        for m, t in [("mycel ops.add(a, b)", "torch torch.add(a, b)"), ("mycel a + b", "torch a + b"),
                     ("mycel a + 1.0", "torch a + 1.0")]:
            print(f"  ratio {m} / {t}: {best[m] / best[t]:.2f} (below 1 = Mycel faster)")
    else:
        print("  (PyTorch not installed: pip install torch==2.13.0 to compare)")


if __name__ == "__main__":
    main()
