"""ops.flash_attention and its gradient against the composed attention (batched matmul, softmax,
matmul; softmax_grad and four matmuls backward) on the per-head (B*N, S, D) operands, eager,
minimum of 60 launches each (robust on a shared host):

    .venv/bin/python bench/bench_flash_attention.py [--threads 1] [--dtype bf16] [--batch 16 --seq 128]

The harness transformer's attention: batch 16, 4 heads of 32, sequence 128 (the defaults)."""
import argparse
import time

import numpy as np

import mycel
from mycel import ops, Tensor


def best(f, n=60):
    for _ in range(3):
        f()
    t = 1e9
    for _ in range(n):
        w = time.perf_counter()
        f()
        t = min(t, time.perf_counter() - w)
    return t * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dtype", choices=["bf16", "f32"], default="bf16")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--dim", type=int, default=32)
    a = ap.parse_args()
    mycel.set_context(num_threads=a.threads)
    dt = mycel.bfloat16 if a.dtype == "bf16" else mycel.float32
    rng = np.random.default_rng(0)
    b, s, n, d = a.batch, a.seq, a.heads, a.dim
    q, k, v, do = (Tensor(rng.standard_normal((b, s, n * d)).astype(np.float32), dtype=dt) for _ in range(4))
    out, lse = ops.flash_attention(q, k, v, head_num=n)
    dlse = Tensor(np.zeros((b, n, s), np.float32))
    qh, kh, vh, doh = (Tensor(rng.standard_normal((b * n, s, d)).astype(np.float32), dtype=dt) for _ in range(4))
    p = ops.softmax(ops.matmul(qh, kh, transpose_b=True), axis=-1)

    def composed_bwd():
        dp = ops.matmul(doh, vh, transpose_b=True)
        ops.matmul(p, doh, transpose_a=True)
        ds = ops.softmax_grad(p, dp)
        ops.matmul(ds, kh)
        ops.matmul(ds, qh, transpose_a=True)

    times = {
        "flash fwd": best(lambda: ops.flash_attention(q, k, v, head_num=n)),
        "flash bwd": best(lambda: ops.flash_attention_grad(q, k, v, out, do, lse, dlse, head_num=n)),
        "composed fwd": best(lambda: ops.matmul(ops.softmax(ops.matmul(qh, kh, transpose_b=True), axis=-1), vh)),
        "composed bwd": best(composed_bwd),
    }
    print(f"B {b} S {s} N {n} D {d} {a.dtype}, {a.threads} thread(s): "
          + " | ".join(f"{k} {t:.2f}" for k, t in times.items()) + " ms (min of 60)")


if __name__ == "__main__":
    main()
