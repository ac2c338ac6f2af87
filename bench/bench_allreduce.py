"""Allreduce latency and bandwidth over Open MPI, fitted to the alpha-beta model t(n) = alpha +
beta * n (n bytes): alpha is the per-call latency, 1/beta the bandwidth. Sizes 4 B .. 64 MB, float32,
median of several calls each; with and without the metadata handshake that lets a timeout name
the missing rank (docs/parallel.md). Run:

    scripts/mpirun -n 2 .venv/bin/python bench/bench_allreduce.py

Only rank 0 prints. A plain MPI_Allreduce through mpi4py would be the peer; it is not installed."""
import time

import numpy as np

import mycel.communication as comm
from mycel import Tensor, _mycel, ops


def time_allreduce(n_floats, reps):
    """Median seconds per call with and without the handshake, alternating call by call so that
    both see the same machine load."""
    x = Tensor(np.ones(n_floats, np.float32))
    op = ops.AllReduce()
    op(x)  # warm-up (allocations, connections)
    times = {True: [], False: []}
    for _ in range(reps):
        for check in (True, False):
            _mycel.comm.set_check(check)
            ops.Barrier()()
            t0 = time.perf_counter()
            op(x)
            times[check].append(time.perf_counter() - t0)
    _mycel.comm.set_check(True)
    return float(np.median(times[True])), float(np.median(times[False]))


def fit(sizes, times):
    """Least squares of t = alpha + beta * bytes, weighted by 1/t so small sizes count too."""
    a = np.stack([np.ones(len(sizes)), np.array(sizes, float)], 1)
    w = 1.0 / np.array(times)
    (alpha, beta), *_ = np.linalg.lstsq(a * w[:, None], np.array(times) * w, rcond=None)
    return alpha, beta


def main():
    comm.init()
    rank, size = comm.get_rank(), comm.get_group_size()
    sizes = [4 * 4 ** k for k in range(13)]  # 4 B .. 64 MB
    timed = [time_allreduce(b // 4, 50 if b < (1 << 20) else 10) for b in sizes]
    results = {True: [t[0] for t in timed], False: [t[1] for t in timed]}
    if rank == 0:
        print(f"allreduce (sum, float32) on {size} ranks; median seconds per call")
        print(f"{'bytes':>10} {'checked (us)':>14} {'unchecked (us)':>15} {'GB/s checked':>13}")
        for b, t1, t0 in zip(sizes, results[True], results[False]):
            print(f"{b:>10} {t1 * 1e6:>14.1f} {t0 * 1e6:>15.1f} {b / t1 / 1e9:>13.3f}")
        for check in (True, False):
            alpha, beta = fit(sizes, results[check])
            print(f"alpha-beta fit ({'with' if check else 'without'} handshake): alpha = {alpha * 1e6:.1f} us, "
                  f"bandwidth 1/beta = {1 / beta / 1e9:.2f} GB/s")


if __name__ == "__main__":
    main()
