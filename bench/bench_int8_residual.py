"""int8 ResNet-18 / MobileNetV2 (random weights, PTQ min-max on synthetic data) in the lite runtime,
batch 1, one thread: float32 vs the int8 graph's two forms, alternating in one process (CPU ms per
run, median of rounds), and each int8 form's distance from the fake-quant net in logit steps
(the logits' range over 255 levels) on 16 random inputs:

- "rounded": residual sums rounded to the next layer's scale for the shortcuts, average pooling
  float32 (mycel.lite.int8.EXACT_RESIDUAL = False, no recorded pooling scales);
- "exact": shortcuts read the float32 sums as the fake-quant net does, average pooling int8.

    .venv/bin/python bench/bench_int8_residual.py [--models resnet18,mobilenet_v2] [--rounds 5] [--iters 200]
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
import mycel  # noqa: E402
from mycel import Tensor, lite  # noqa: E402
from mycel.lite import int8, quant  # noqa: E402
from edge_helpers import MODELS, randomize  # noqa: E402


def export(net, x, path, exact, pools):
    saved_exact, saved_pools = int8.EXACT_RESIDUAL, net.__dict__.get("_quant_pools")
    int8.EXACT_RESIDUAL = exact
    if not pools and saved_pools is not None:
        object.__setattr__(net, "_quant_pools", [])
    try:
        return mycel.export(net, x, file_name=path, file_format="MINDIR")
    finally:
        int8.EXACT_RESIDUAL = saved_exact
        if saved_pools is not None:
            object.__setattr__(net, "_quant_pools", saved_pools)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet18,mobilenet_v2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=200)
    a = ap.parse_args()
    print("| model | fp32 ms | int8 rounded ms | int8 exact ms | speed-up rounded | speed-up exact | "
          "rounded: max / median steps | exact: max / median steps |")
    print("|---|---|---|---|---|---|---|---|")
    for name in a.models.split(","):
        make, shape = MODELS[name]
        rng = np.random.default_rng(0)
        with tempfile.TemporaryDirectory() as d:
            net = randomize(make(), seed=0)
            x1 = Tensor(np.zeros(shape, np.float32))
            sessions = {"fp32": lite.Session.from_file(
                mycel.export(net, x1, file_name=f"{d}/fp32", file_format="MINDIR"), num_threads=1)}
            calib = [Tensor(rng.standard_normal((8,) + shape[1:]).astype(np.float32)) for _ in range(4)]
            quant.quantize(net, calib, method="minmax")
            x = rng.standard_normal((16,) + shape[1:]).astype(np.float32)
            old = mycel.get_context("mode")
            mycel.set_context(mode=mycel.GRAPH_MODE)
            want = net(Tensor(x)).asnumpy()
            mycel.set_context(mode=old)
            step = (want.max() - want.min()) / 255
            dist = {}
            for form, exact in (("rounded", False), ("exact", True)):
                s = lite.Session.from_file(export(net, x1, f"{d}/{form}", exact, exact), num_threads=1)
                err = np.abs(s.run([Tensor(x)])[0].asnumpy() - want) / step
                dist[form] = f"{err.max():.2f} / {np.median(err):.2f}"
                sessions[form] = s
            times = {k: [] for k in sessions}
            xb = Tensor(rng.standard_normal(shape).astype(np.float32))
            for _ in range(a.rounds):
                for k, s in sessions.items():
                    for _ in range(10):
                        s.run([xb])
                    t = time.process_time()
                    for _ in range(a.iters):
                        s.run([xb])
                    times[k].append((time.process_time() - t) / a.iters * 1e3)
            m = {k: float(np.median(v)) for k, v in times.items()}
            print(f"| {name} | {m['fp32']:.3f} | {m['rounded']:.3f} | {m['exact']:.3f} | "
                  f"{m['fp32'] / m['rounded']:.2f}x | {m['fp32'] / m['exact']:.2f}x | {dist['rounded']} | "
                  f"{dist['exact']} |", flush=True)


if __name__ == "__main__":
    main()
