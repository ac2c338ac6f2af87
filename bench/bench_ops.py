"""Mycel vs PyTorch on the dense kernels (not a test): matmul 1024^3 float32 and conv2d
(batch 32, 64->64 channels, 56x56, 3x3, pad 1), timed interleaved in one run; prints median times
and the Mycel/PyTorch ratio (< 1 means Mycel is faster). PyTorch is optional.

    .venv/bin/python bench/bench_ops.py [--reps 15]
"""
import argparse
import statistics
import time

import numpy as np

import mycel
from mycel import ops

try:
    import torch
except ImportError:  # the bench still reports Mycel's own figures
    torch = None


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    threads = mycel.get_context("num_threads")  # read back: the count the kernels will use
    if torch is not None:
        torch.set_num_threads(threads)
    rng = np.random.default_rng(0)

    a, b = rng.standard_normal((1024, 1024), np.float32), rng.standard_normal((1024, 1024), np.float32)
    x = rng.standard_normal((32, 64, 56, 56), np.float32)
    w = rng.standard_normal((64, 64, 3, 3), np.float32) * 0.05
    ma, mb, mx, mw = (mycel.Tensor(v) for v in (a, b, x, w))
    cases = {
        "matmul 1024^3 f32": dict(
            flop=2 * 1024 ** 3,
            mycel=lambda: ops.matmul(ma, mb),
            check=lambda out: np.abs(out.asnumpy() - a @ b).max() < 1e-2),
        "conv2d 32x64x56x56 3x3 f32": dict(
            flop=2 * 32 * 64 * 64 * 9 * 56 * 56,
            mycel=lambda: ops.conv2d(mx, mw, pad_mode="pad", pad=1),
            check=None),
    }
    if torch is not None:
        ta, tb, tx, tw = (torch.from_numpy(v) for v in (a, b, x, w))
        cases["matmul 1024^3 f32"]["torch"] = lambda: torch.matmul(ta, tb)
        conv = cases["conv2d 32x64x56x56 3x3 f32"]
        conv["torch"] = lambda: torch.nn.functional.conv2d(tx, tw, padding=1)
        conv["check"] = lambda out: np.allclose(out.asnumpy(), conv["torch"]().numpy(), rtol=1e-3, atol=1e-3)

    print(f"threads: {threads}; torch: {torch.__version__ if torch else 'not installed'}; reps: {args.reps}")
    print(f"{'case':30s} {'mycel ms':>10s} {'torch ms':>10s} {'mycel GF/s':>11s} {'torch GF/s':>11s} {'ratio':>7s}")
    for name, c in cases.items():
        assert c["check"] is None or c["check"](c["mycel"]()), f"{name}: Mycel result differs"
        runners = ["mycel"] + (["torch"] if "torch" in c else [])
        for _ in range(args.warmup):
            for r in runners:
                c[r]()
        times = {r: [] for r in runners}
        for _ in range(args.reps):  # interleaved, so drifts in clock or load hit both alike
            for r in runners:
                times[r].append(timed(c[r]))
        med = {r: statistics.median(v) for r, v in times.items()}
        tm = med.get("torch")
        print(f"{name:30s} {med['mycel'] * 1e3:10.2f} {tm * 1e3 if tm else float('nan'):10.2f} "
              f"{c['flop'] / med['mycel'] / 1e9:11.1f} {c['flop'] / tm / 1e9 if tm else float('nan'):11.1f} "
              f"{med['mycel'] / tm if tm else float('nan'):7.3f}")


if __name__ == "__main__":
    main()
