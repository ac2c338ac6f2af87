"""The harness's transformer training step (TransformerClassifier: 2 layers, d_model 128, 4 heads,
batch 16 x 128 tokens, batch_first; graph mode, Momentum) with its self-attention called two ways,
alternating in one process: "general" (query passed as key and value: each transposed to
(L, N, E), three projections, the output transposed back) and "self" (key and value None, how
TransformerEncoderLayer calls it: each projection moved to the heads' layout straight from the
input's, no input or output transpose). Same weights, same math.

    .venv/bin/python bench/bench_attention_layout.py [--rounds 8] [--steps 5]
    chrt -f 10 .venv/bin/python bench/bench_attention_layout.py   # near-quiet on a shared machine

Printed: wall and process-CPU ms per step, 10th percentile and median.
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import mycel  # noqa: E402
from mycel import Tensor, nn  # noqa: E402
from mycel.nn.layer import transformer as T  # noqa: E402
from models import TransformerClassifier  # noqa: E402

SELF_BLOCK = T.TransformerEncoderLayer._sa_block


def general_block(self, x, attn_mask, key_padding_mask):
    out, _ = self.self_attn(x, x, x, key_padding_mask, False, attn_mask)
    return self.dropout1(out)


def make_step(self_attention):
    """A compiled training step; the block in use is read when the step first compiles."""
    T.TransformerEncoderLayer._sa_block = SELF_BLOCK if self_attention else general_block
    try:
        mycel.set_seed(0)
        net = TransformerClassifier()
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.Momentum(net.trainable_params(), 0.01, 0.9))
        step.set_train(True)
        rng = np.random.default_rng(0)
        x = Tensor(rng.standard_normal((16, 128, 128)).astype(np.float32))
        y = Tensor(rng.integers(0, 10, 16).astype(np.int32))
        step(x, y).asnumpy()  # compiles
    finally:
        T.TransformerEncoderLayer._sa_block = SELF_BLOCK
    return lambda: step(x, y).asnumpy()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=5, help="steps per variant per round")
    args = ap.parse_args()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    steps = {"general": make_step(False), "self": make_step(True)}
    res = {k: [] for k in steps}
    for _ in range(args.rounds):
        for k, f in steps.items():
            for _ in range(args.steps):
                c, w = time.process_time(), time.perf_counter()
                f()
                res[k].append((time.perf_counter() - w, time.process_time() - c))
    print(f"threads {mycel.get_context('num_threads')}, {args.rounds} rounds of {args.steps} steps, "
          f"load {os.getloadavg()[0]:.1f}")
    for k, v in res.items():
        v = np.array(v) * 1e3
        print(f"  {k:8s} wall p10 {np.percentile(v[:, 0], 10):6.1f} median {np.median(v[:, 0]):6.1f} ms; "
              f"CPU p10 {np.percentile(v[:, 1], 10):6.1f} median {np.median(v[:, 1]):6.1f} ms")


if __name__ == "__main__":
    main()
