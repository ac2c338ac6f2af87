"""Per-sample gradients of LeNet5 (32x32 inputs): vmap(grad(loss_fn), in_axes=(0, 0)) as one
compiled program vs a Python loop of the per-sample gradient program, and vs the plain batch
gradient (the floor). Prints compile time and warm medians. Usage:
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/bench_vmap.py [batch ...]"""
import os
import sys
import time

import numpy as np

import mycel
from mycel import Tensor, nn, ops

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from train_helpers import LeNet5  # noqa: E402


def median_ms(fn, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return np.median(times) * 1e3


def main(batches):
    mycel.set_seed(0)
    net = LeNet5()
    ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    weights = net.trainable_params()

    def loss_fn(x, y):
        return ce(net(ops.expand_dims(x, 0)), ops.expand_dims(y, 0))

    grad_fn = ops.grad(loss_fn, grad_position=None, weights=weights)
    batch_grad = ops.grad(nn.WithLossCell(net, ce), grad_position=None, weights=weights)
    rng = np.random.default_rng(0)
    print(f"{'batch':>5} {'vmap compile':>12} {'vmap ms':>8} {'loop ms':>8} {'speedup':>7} {'batch-grad ms':>13}")
    for b in batches:
        x = Tensor(rng.standard_normal((b, 1, 32, 32)).astype(np.float32))
        y = Tensor(rng.integers(0, 10, b).astype(np.int32))
        xs = [Tensor(x.asnumpy()[i]) for i in range(b)]
        ys = [Tensor(y.asnumpy()[i]) for i in range(b)]
        per_sample = ops.vmap(grad_fn, in_axes=(0, 0))
        t = time.perf_counter()
        per_sample(x, y)
        compile_s = time.perf_counter() - t
        grad_fn(xs[0], ys[0])
        batch_grad(x, y)
        reps = max(3, 200 // b)
        t_vmap = median_ms(lambda: per_sample(x, y), reps)
        t_loop = median_ms(lambda: [grad_fn(xs[i], ys[i]) for i in range(b)], reps)
        t_batch = median_ms(lambda: batch_grad(x, y), reps)
        print(f"{b:>5} {compile_s * 1e3:>10.0f}ms {t_vmap:>8.2f} {t_loop:>8.2f} {t_loop / t_vmap:>6.1f}x {t_batch:>13.2f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [8, 32, 64])
