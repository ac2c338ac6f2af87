"""A CSRTensor built from run-time tensors and multiplied, per call: eagerly (the constructor
checks the index arrays in numpy, then SpMM) against graph mode (a compiled function that builds
it and runs SpMM; the index values are checked by the kernel). Also the first call's compile
time. 2000 x 2000 at 1% density times a 2000 x 64 dense matrix, float32; alternating calls,
median of several. Run:

    .venv/bin/python bench/bench_graph_records.py
"""
import time

import numpy as np

import mycel
from mycel import CSRTensor, Tensor


def build_and_mm(indptr, indices, values, dense):
    return CSRTensor(indptr, indices, values, (2000, 2000)).mm(dense)


def main():
    rng = np.random.default_rng(0)
    d = (rng.random((2000, 2000)) < 0.01) * rng.standard_normal((2000, 2000))
    rows, cols = np.nonzero(d)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=2000))]).astype(np.int32)
    args = (Tensor(ptr), Tensor(cols.astype(np.int32)), Tensor(d[rows, cols].astype(np.float32)),
            Tensor(rng.standard_normal((2000, 64)).astype(np.float32)))
    compiled = mycel.jit(build_and_mm)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    t0 = time.perf_counter()
    compiled(*args)
    first = time.perf_counter() - t0
    times = {"eager": [], "graph": []}
    for _ in range(30):
        for mode in ("eager", "graph"):
            mycel.set_context(mode=mycel.PYNATIVE_MODE if mode == "eager" else mycel.GRAPH_MODE)
            fn = build_and_mm if mode == "eager" else compiled
            t0 = time.perf_counter()
            fn(*args)
            times[mode].append(time.perf_counter() - t0)
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    e, g = np.median(times["eager"]) * 1e3, np.median(times["graph"]) * 1e3
    print(f"first graph call (parse, specialize, compile, run): {first * 1e3:.1f} ms")
    print(f"per call, median of 30: eager {e:.3f} ms, graph {g:.3f} ms, eager/graph {e / g:.2f}x")


if __name__ == "__main__":
    main()
