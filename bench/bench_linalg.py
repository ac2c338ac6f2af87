"""Linear algebra and FFT: Mycel (LAPACK through LAPACKE, Eigen's FFT) beside numpy (its bundled
OpenBLAS LAPACK and pocketfft) on the same batched work. Each framework runs in its own process
(two thread pools in one process distort both), alternating A B A B; the median time per call of
each round is kept and the median over rounds is printed with the ratio. Run:

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/bench_linalg.py [--rounds 3]
"""
import argparse
import json
import subprocess
import sys
import time

import numpy as np

R = np.random.default_rng(0)


def _work():
    """name -> (numpy input arrays, mycel call, numpy call); built in the worker process."""
    spd = R.normal(size=(8, 256, 256))
    spd = spd @ spd.transpose(0, 2, 1) + 256 * np.eye(256)
    sq = R.normal(size=(8, 256, 256)) + 16 * np.eye(256)
    rect = R.normal(size=(8, 128, 128))
    sig = (R.normal(size=(16, 65536)) + 1j * R.normal(size=(16, 65536))).astype(np.complex64)
    odd = R.normal(size=(64, 1000)).astype(np.float32)
    img = R.normal(size=(8, 256, 256)).astype(np.float32)
    return {
        "inverse 8x256x256 f64": ([sq], "inverse", {}, lambda a: np.linalg.inv(a)),
        "det 8x256x256 f64": ([sq], "det", {}, lambda a: np.linalg.det(a)),
        "cholesky 8x256x256 f64": ([spd], "cholesky", {}, lambda a: np.linalg.cholesky(a)),
        "matrix_solve 8x256x256 f64": ([sq, sq[:, :, :16]], "matrix_solve", {}, lambda a, b: np.linalg.solve(a, b)),
        "eigh 8x128x128 f64": ([spd[:, :128, :128]], "eigh", {}, lambda a: np.linalg.eigh(a)),
        "svd 8x128x128 f64": ([rect], "svd", {}, lambda a: np.linalg.svd(a, full_matrices=False)),
        "qr 8x128x128 f64": ([rect], "qr", {}, lambda a: np.linalg.qr(a)),
        "fft 16x65536 c64": ([sig], "fft", {}, lambda a: np.fft.fft(a)),
        "rfft 64x1000 f32": ([odd], "rfft", {}, lambda a: np.fft.rfft(a)),
        "fft2 8x256x256 f32": ([img], "fft2", {}, lambda a: np.fft.fft2(a)),
    }


def _time(fn, reps=7):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def worker(which):
    work = _work()
    out = {}
    if which == "mycel":
        from mycel import Tensor, ops
        for name, (arrays, op, kw, _) in work.items():
            ts = [Tensor(a) for a in arrays]
            out[name] = _time(lambda: getattr(ops, op)(*ts, **kw))
    else:
        for name, (arrays, _, _, ref) in work.items():
            out[name] = _time(lambda: ref(*arrays))
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--worker", choices=["mycel", "numpy"])
    a = p.parse_args()
    if a.worker:
        return worker(a.worker)
    runs = {"mycel": [], "numpy": []}
    for _ in range(a.rounds):
        for which in ("mycel", "numpy"):
            res = subprocess.run([sys.executable, __file__, "--worker", which], check=True,
                                 capture_output=True, text=True)
            runs[which].append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(f"{'work':32s} {'mycel ms':>10s} {'numpy ms':>10s} {'numpy/mycel':>12s}")
    for name in runs["mycel"][0]:
        m = float(np.median([r[name] for r in runs["mycel"]])) * 1e3
        n = float(np.median([r[name] for r in runs["numpy"]])) * 1e3
        print(f"{name:32s} {m:10.2f} {n:10.2f} {n / m:12.2f}")


if __name__ == "__main__":
    main()
