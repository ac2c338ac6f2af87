"""CSR SpMM (ops.csr_spmm, the kernel behind CSRTensor.mm) against the dense matmul of the same
matrix, and against scipy.sparse when installed (its own single-threaded CSR product), for a few
sizes and densities; median of several runs, alternating the contenders run by run so that all
see the same machine load. Run:

    .venv/bin/python bench/bench_sparse.py

Prints milliseconds per product and the speed-up over dense."""
import time

import numpy as np

from mycel import Tensor, ops

try:
    import scipy.sparse as sp
except ImportError:  # the peer is optional
    sp = None


def _csr(m, n, density, rng):
    d = (rng.random((m, n)) < density) * rng.standard_normal((m, n)).astype(np.float32)
    rows, cols = np.nonzero(d)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=m))]).astype(np.int32)
    return d.astype(np.float32), ptr, cols.astype(np.int32), d[rows, cols].astype(np.float32)


def main(reps=7):
    rng = np.random.default_rng(0)
    print(f"{'M x N x K':>20} {'density':>8} {'csr_spmm ms':>12} {'dense ms':>9} {'scipy ms':>9} {'vs dense':>9}")
    for (m, n, k) in [(2048, 2048, 64), (4096, 4096, 32), (8192, 8192, 16)]:
        for density in (0.001, 0.01, 0.05):
            d, ptr, ind, val = _csr(m, n, density, rng)
            b = rng.standard_normal((n, k)).astype(np.float32)
            tp, ti, tv, tb, td = Tensor(ptr), Tensor(ind), Tensor(val), Tensor(b), Tensor(d)
            s = sp.csr_matrix((val, ind, ptr), shape=(m, n)) if sp is not None else None
            runs = {"csr": [], "dense": [], "scipy": []}
            got = ops.csr_spmm(tp, ti, tv, tb, shape=(m, n)).asnumpy()
            np.testing.assert_allclose(got, d @ b, rtol=1e-3, atol=1e-3)
            for _ in range(reps):
                t0 = time.perf_counter()
                ops.csr_spmm(tp, ti, tv, tb, shape=(m, n))
                runs["csr"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                ops.matmul(td, tb)
                runs["dense"].append(time.perf_counter() - t0)
                if s is not None:
                    t0 = time.perf_counter()
                    s @ b
                    runs["scipy"].append(time.perf_counter() - t0)
            med = {key: 1e3 * float(np.median(v)) if v else float("nan") for key, v in runs.items()}
            print(f"{f'{m} x {n} x {k}':>20} {density:>8} {med['csr']:>12.3f} {med['dense']:>9.3f} "
                  f"{med['scipy']:>9.3f} {med['dense'] / med['csr']:>8.1f}x")


if __name__ == "__main__":
    main()
