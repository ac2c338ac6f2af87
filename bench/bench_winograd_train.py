"""Per-layer CPU time of ResNet-18 CIFAR's 3x3 stride-1 convolutions at a training batch, forward
and backward-data, Winograd on NCHW (kernels/cpu/conv_winograd_nchw.h) against oneDNN
(MYCEL_WINOGRAD=0), each configuration in its own process, alternating A B A B; the minimum CPU
milliseconds per call over the rounds (CPU time moves far less than wall time on a loaded machine).

    .venv/bin/python bench/bench_winograd_train.py [--batch 32] [--threads 2] [--rounds 2]
"""
import argparse
import json
import os
import subprocess
import sys
import time

LAYERS = [(64, 32), (128, 16), (256, 8), (512, 4)]  # (channels, output side)


def child(batch, threads, reps):
    import numpy as np
    import mycel
    from mycel import Tensor, ops
    mycel.set_context(num_threads=threads)
    rng = np.random.default_rng(0)
    out = {}
    for c, s in LAYERS:
        x = Tensor(rng.standard_normal((batch, c, s, s)).astype(np.float32))
        w = Tensor(rng.standard_normal((c, c, 3, 3)).astype(np.float32))
        dy = Tensor(rng.standard_normal((batch, c, s, s)).astype(np.float32))
        calls = {"fwd": lambda: ops.conv2d(x, w, pad_mode="pad", pad=1).asnumpy(),
                 "bwd_data": lambda: ops.conv2d_backprop_input(
                     dy, w, input_size=(batch, c, s, s), pad_mode="pad", pad=1).asnumpy()}
        for name, fn in calls.items():
            fn()
            best = float("inf")
            for _ in range(reps):
                t = time.process_time()
                fn()
                best = min(best, time.process_time() - t)
            out[f"{c}x{s}x{s} {name}"] = best * 1e3
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.batch, args.threads, args.reps)
    best = {"winograd": {}, "onednn": {}}
    for _ in range(args.rounds):
        for label, env in (("winograd", ""), ("onednn", "0")):
            r = subprocess.run([sys.executable, __file__, "--child", "--batch", str(args.batch),
                                "--threads", str(args.threads), "--reps", str(args.reps)],
                               env=dict(os.environ, MYCEL_WINOGRAD=env), check=True,
                               capture_output=True, text=True)
            for k, v in json.loads(r.stdout.strip().splitlines()[-1]).items():
                best[label][k] = min(v, best[label].get(k, float("inf")))
    print(f"batch {args.batch}, threads {args.threads}, load {os.getloadavg()[0]:.1f}: "
          "CPU ms per call, minimum over the rounds")
    print("| layer | call | oneDNN | Winograd | ratio |")
    print("|---|---|---|---|---|")
    for k in best["onednn"]:
        layer, call = k.split(" ")
        a, b = best["onednn"][k], best["winograd"][k]
        print(f"| {layer} | {call} | {a:.1f} | {b:.1f} | {a / b:.2f}x |")


if __name__ == "__main__":
    main()
