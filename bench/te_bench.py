"""mycel.te: compile latency (cold, cached) and generated-kernel speed against Mycel's built-in
ops and numpy. Prints a table; not a test.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/te_bench.py
"""
import os
import tempfile
import time

import numpy as np

import mycel as ms
from mycel import ops, te


def best(fn, reps=20):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts) * 1e3


def sigmoid_chain(n):
    x = te.placeholder((n,), "float32", "x")
    return [x], [te.vrec(te.vadds(te.vexp(te.vmuls(x, -1.0)), 1.0))]


def row_sum(n, m):
    x = te.placeholder((n, m), "float32", "x")
    return [x], [te.reduce_sum(x, 1)]


def matmul(n):
    a = te.placeholder((n, n), "float32", "a")
    b = te.placeholder((n, n), "float32", "b")
    k = te.reduce_axis((0, n), "k")
    return [a, b], [te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), "mm")]


def main():
    os.environ["MYCEL_TE_CACHE"] = tempfile.mkdtemp(prefix="te_bench_")
    rng = np.random.default_rng(0)
    print("kernel                      cold compile s  cached load s")
    for name, make in [("sigmoid 1M", lambda: sigmoid_chain(1 << 20)),
                       ("row sum 1024x1024", lambda: row_sum(1024, 1024)),
                       ("matmul 256^3", lambda: matmul(256))]:
        ins, outs = make()
        t0 = time.perf_counter()
        te.build(ins, outs)
        cold = time.perf_counter() - t0
        ins2, outs2 = make()
        t0 = time.perf_counter()
        f = te.build(ins2, outs2)
        warm = time.perf_counter() - t0
        print(f"{name:28s}{cold:14.3f}{warm:15.4f}  cached={f.cached}")

    print("\nkernel                      te ms   mycel ops ms   numpy ms")
    n = 1 << 20
    xv = rng.standard_normal(n).astype(np.float32)
    ins, outs = sigmoid_chain(n)
    f = te.build(ins, outs)
    xt = ms.Tensor(xv)
    print(f"{'sigmoid chain 1M':28s}{best(lambda: f(xt)):6.3f}{best(lambda: ops.sigmoid(xt)):15.3f}"
          f"{best(lambda: 1 / (1 + np.exp(-xv))):11.3f}")
    mv = rng.standard_normal((1024, 1024)).astype(np.float32)
    ins, outs = row_sum(1024, 1024)
    f = te.build(ins, outs)
    mt = ms.Tensor(mv)
    print(f"{'row sum 1024x1024':28s}{best(lambda: f(mt)):6.3f}{best(lambda: mt.sum(1)):15.3f}"
          f"{best(lambda: mv.sum(1)):11.3f}")
    av = rng.standard_normal((256, 256)).astype(np.float32)
    ins, outs = matmul(256)
    f = te.build(ins, outs)
    at = ms.Tensor(av)
    print(f"{'matmul 256^3':28s}{best(lambda: f(at, at), 5):6.3f}"
          f"{best(lambda: ops.matmul(at, at), 5):15.3f}{best(lambda: av @ av, 5):11.3f}")


if __name__ == "__main__":
    main()
