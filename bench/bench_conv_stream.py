"""Batch-1 convolution per shape: oneDNN's direct kernel vs the streamed kernel
(kernels/cpu/conv_stream.cc), in the lite runtime. Each shape is a model of a first conv (C -> C,
3x3, HxW, reading NCHW input: oneDNN in both modes) whose result feeds four convolutions of the
shape (C -> OC, KxK, stride S, padding K // 2; four weight sets, so the weights come from memory
as in a whole network), summed. It is run by mycel_lite_benchmark with MYCEL_CONV_STREAM=0, and
with the streamed kernel forced wherever its geometry fits (MYCEL_CONV_STREAM_RULE="100000,100000");
the first conv alone is a third model. Reported per convolution of the shape, from the process
CPU time per run: (model - first conv) / 4. Meaningful with --threads 1 (wall times on a shared
machine measure preemption). Rounds alternate the two kernels. Prints microseconds and GFLOP/s.

    .venv/bin/python bench/bench_conv_stream.py [--threads 1] [--rounds 3] [--iters 100]
        [--shapes 512x512x4x3x1,256x512x8x3x2,512x512x7x3x1,256x512x14x3x2,128x256x28x3x2]
        (C x OC x H x K x S)
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
class Four(nn.Cell):
    def __init__(self, c, oc, k, s, branches):
        super().__init__()
        self.first = nn.Conv2d(c, c, 3, pad_mode="pad", padding=1, has_bias=True)
        self.relu = nn.ReLU()
        self.branches = branches
        self.convs = nn.CellList([nn.Conv2d(c, oc, k, stride=s, pad_mode="pad", padding=k // 2,
                                            has_bias=True) for _ in range(4)])
    def construct(self, x):
        h = self.relu(self.first(x))
        if self.branches == 0:
            return h
        return (self.convs[0](h) + self.convs[1](h)) + (self.convs[2](h) + self.convs[3](h))
for c, oc, h, k, s in {shapes!r}:
    for branches in (0, 4):
        net = Four(c, oc, k, s, branches)
        rng = np.random.default_rng(0)
        for p in net.trainable_params():
            p.set_data(mycel.Tensor((rng.standard_normal(p.shape) * 0.05).astype(np.float32)))
        x = mycel.Tensor(np.zeros((1, c, h, h), np.float32))
        mycel.export(net, x, file_name={out!r} + f"/m{{c}}_{{oc}}_{{h}}_{{k}}_{{s}}_{{branches}}",
                     file_format="MINDIR")
"""


def run_us(path, threads, iters, mode):
    """The model's process CPU time per run in microseconds."""
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", MYCEL_CONV_STREAM=mode,
               MYCEL_CONV_STREAM_RULE="100000,100000")
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
    ap.add_argument("--shapes", default="512x512x4x3x1,256x512x8x3x2,512x512x7x3x1,256x512x14x3x2,128x256x28x3x2")
    a = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "export_four.py")  # graph mode parses construct's source: a file
        with open(script, "w") as f:
            f.write(EXPORT.format(shapes=shapes, out=d))
        out = subprocess.run([sys.executable, script], capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(out.stderr[-2000:])
        print(f"threads {a.threads}, median of {a.rounds} rounds (alternating) of the median over {a.iters} runs; "
              "CPU us per conv\n")
        print("| C | OC | HxW | K | stride | oneDNN us | streamed us | streamed / oneDNN | oneDNN GFLOP/s | streamed GFLOP/s |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for c, oc, h, k, s in shapes:
            base = f"{d}/m{c}_{oc}_{h}_{k}_{s}"
            t = {m: [] for m in ("first", "0", "1")}
            for _ in range(a.rounds):
                t["first"].append(run_us(base + "_0.mindir", a.threads, a.iters, "0"))
                for m in ("0", "1"):
                    t[m].append(run_us(base + "_4.mindir", a.threads, a.iters, m))
            med = {m: statistics.median(v) for m, v in t.items()}
            us = {m: (med[m] - med["first"]) / 4 for m in ("0", "1")}
            o = (h + 2 * (k // 2) - k) // s + 1
            flop = 2 * c * oc * k * k * o * o
            print(f"| {c} | {oc} | {h}x{h} | {k} | {s} | {us['0']:.1f} | {us['1']:.1f} | {us['1'] / us['0']:.2f} | "
                  f"{flop / us['0'] / 1e3:.1f} | {flop / us['1'] / 1e3:.1f} |", flush=True)


if __name__ == "__main__":
    main()
