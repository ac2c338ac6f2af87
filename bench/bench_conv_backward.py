"""Mycel vs PyTorch on conv2d backward (not a test): the data and filter gradients of conv2d
(batch 32, 64->64 channels, 56x56, 3x3, pad 1, float32), timed interleaved; prints median times
and the Mycel/PyTorch ratio (< 1 means Mycel is faster). PyTorch is optional.

    .venv/bin/python bench/bench_conv_backward.py [--reps 10]
"""
import argparse
import statistics
import time

import numpy as np

import mycel
from mycel import ops

try:
    import torch
except ImportError:
    torch = None


def median_ms(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    threads = mycel.get_context("num_threads")  # read back: the count the kernels will use
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 64, 56, 56), np.float32)
    w = rng.standard_normal((64, 64, 3, 3), np.float32) * 0.05
    dy = rng.standard_normal((32, 64, 56, 56), np.float32)
    mx, mw, mdy = (mycel.Tensor(v) for v in (x, w, dy))
    conv = dict(pad_mode="pad", pad=1)
    runs = {
        "mycel data": lambda: ops.conv2d_backprop_input(mdy, mw, input_size=x.shape, **conv),
        "mycel filter": lambda: ops.conv2d_backprop_filter(mdy, mx, filter_size=w.shape, **conv),
    }
    if torch is not None:
        torch.set_num_threads(threads)
        tx, tw, tdy = (torch.from_numpy(v) for v in (x, w, dy))

        def torch_bwd(mask):
            return torch.ops.aten.convolution_backward(tdy, tx, tw, None, [1, 1], [1, 1], [1, 1], False,
                                                       [0, 0], 1, mask)
        runs["torch data"] = lambda: torch_bwd([True, False, False])
        runs["torch filter"] = lambda: torch_bwd([False, True, False])
        dx_t, dw_t, _ = torch_bwd([True, True, False])
        assert np.allclose(runs["mycel data"]().asnumpy(), dx_t.numpy(), rtol=1e-3, atol=1e-3)
        assert np.allclose(runs["mycel filter"]().asnumpy(), dw_t.numpy(), rtol=1e-2, atol=1e-2)
    for fn in runs.values():  # warm-up: primitive builds, caches
        fn()
    med = {k: [] for k in runs}
    for _ in range(args.reps):  # interleaved rounds, so load drifts hit both alike
        for k, fn in runs.items():
            med[k].append(median_ms(fn, 1))
    med = {k: statistics.median(v) for k, v in med.items()}
    print(f"threads: {threads}; torch: {torch.__version__ if torch else 'not installed'}; reps: {args.reps}")
    for part in ("data", "filter"):
        m, t = med[f"mycel {part}"], med.get(f"torch {part}")
        print(f"conv2d backward {part:6s} mycel {m:8.1f} ms  torch {t if t else float('nan'):8.1f} ms  "
              f"ratio {m / t if t else float('nan'):.3f}")
    m = med["mycel data"] + med["mycel filter"]
    t = med["torch data"] + med["torch filter"] if torch is not None else float("nan")
    print(f"conv2d backward total  mycel {m:8.1f} ms  torch {t:8.1f} ms  ratio {m / t:.3f}")


if __name__ == "__main__":
    main()
