"""Batch-1 3x3 convolution per shape: oneDNN's direct kernel vs Winograd F(2x2,3x3) and F(4x4,3x3)
(kernels/cpu/conv_winograd.cc), in the lite runtime. Each shape is a chain of five conv + relu
layers (C -> C channels, HxW, padding 1) exported as MINDIR, run by mycel_lite_benchmark with
MYCEL_WINOGRAD=0 / 2 / 4 forcing the kernel (the first conv reads NCHW input and always runs on
oneDNN; the other four read and write the blocked layout, as inside a network). Reported per
convolution, from the process CPU time per run: oneDNN's chain / 5, and (chain - oneDNN's chain
/ 5) / 4 for the Winograd tiles. Meaningful with --threads 1 (wall times on a shared machine
measure preemption). Rounds alternate the three kernels. Prints microseconds and GFLOP/s
(2 * C * C * 9 * H * W flops, the direct count, also for Winograd).

    .venv/bin/python bench/bench_winograd.py [--threads 1] [--rounds 3] [--iters 100]
        [--shapes 64x32,128x16,256x8,512x4,64x56,128x28,256x14,512x7]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "dev")

EXPORT = r"""
import numpy as np, mycel
from mycel import nn
class Chain(nn.Cell):
    def __init__(self, c):
        super().__init__()
        self.convs = nn.SequentialCell([nn.SequentialCell(nn.Conv2d(c, c, 3, pad_mode="pad", padding=1,
                                        has_bias=True), nn.ReLU()) for _ in range(5)])
    def construct(self, x):
        return self.convs(x)
for c, h in {shapes!r}:
    net = Chain(c)
    rng = np.random.default_rng(0)
    for p in net.trainable_params():
        p.set_data(mycel.Tensor((rng.standard_normal(p.shape) * 0.05).astype(np.float32)))
    x = mycel.Tensor(np.zeros((1, c, h, h), np.float32))
    mycel.export(net, x, file_name={out!r} + f"/c{{c}}_{{h}}", file_format="MINDIR")
"""


def conv_us(path, threads, iters, mode):
    """The chain's process CPU time per run in microseconds (on a loaded machine wall times mostly
    measure preemption; with --threads 1 CPU time is the run's cost)."""
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", MYCEL_WINOGRAD=mode)
    env.pop("GOMP_SPINCOUNT", None)
    out = subprocess.run([os.path.join(BUILD, "mycel_lite_benchmark"), path, "--threads", str(threads),
                          "--iters", str(iters)], capture_output=True, text=True, env=env, timeout=600)
    if out.returncode:
        raise RuntimeError(out.stderr)
    return float(re.search(r"cpu_ms_per_run: ([\d.]+)", out.stdout).group(1)) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--shapes", default="64x32,128x16,256x8,512x4,64x56,128x28,256x14,512x7")
    a = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
    modes = ("0", "2", "4")
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "export_chain.py")  # graph mode parses construct's source: a file
        with open(script, "w") as f:
            f.write(EXPORT.format(shapes=shapes, out=d))
        out = subprocess.run([sys.executable, script], capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(out.stderr[-2000:])
        print(f"threads {a.threads}, median of {a.rounds} rounds (alternating) of the median over {a.iters} runs; "
              "CPU us per conv; GFLOP/s counts direct flops\n")
        print("| C | HxW | oneDNN us | F(2x2) us | F(4x4) us | oneDNN GFLOP/s | F(2x2) | F(4x4) | best |")
        print("|---|---|---|---|---|---|---|---|---|")
        for c, h in shapes:
            t = {m: [] for m in modes}
            for _ in range(a.rounds):
                for m in modes:
                    t[m].append(conv_us(f"{d}/c{c}_{h}.mindir", a.threads, a.iters, m))
            chain = {m: statistics.median(v) for m, v in t.items()}
            # per convolution: the first one (NCHW input) runs on oneDNN in every chain
            us = {m: chain["0"] / 5 if m == "0" else (chain[m] - chain["0"] / 5) / 4 for m in modes}
            gf = {m: 2 * c * c * 9 * h * h / (us[m] * 1e3) for m in modes}
            best = min(modes, key=lambda m: us[m])
            print(f"| {c} | {h}x{h} | {us['0']:.1f} | {us['2']:.1f} | {us['4']:.1f} | {gf['0']:.1f} | "
                  f"{gf['2']:.1f} | {gf['4']:.1f} | {dict(zip(modes, ('oneDNN', 'F(2x2)', 'F(4x4)')))[best]} |",
                  flush=True)


if __name__ == "__main__":
    main()
