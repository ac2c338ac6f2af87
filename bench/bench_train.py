"""Training-step throughput: Mycel GRAPH_MODE and PYNATIVE_MODE (nn.TrainOneStepCell) vs PyTorch
eager and torch.compile, same models, weights, batch, optimizer (momentum 0.9, lr 0.01), float32
and thread count, in one run. Items/s is batch / median step time over the timed steps (after the
warm-up steps, which include compilation). One fixed random batch is reused every step, so the
data pipeline is not measured. Also checks that Mycel's graph and eager losses agree for the
first 3 steps (and prints the gap to PyTorch's, from the same initial weights).

    .venv/bin/python bench/bench_train.py [--quick] [--only lenet5|mlp|resnet18|transformer]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import mycel  # noqa: E402
from mycel import Tensor, nn  # noqa: E402
from lenet5 import LeNet5  # noqa: E402
from models import TransformerClassifier, resnet18_cifar  # noqa: E402

try:
    import torch
    import torch_models
except ImportError:  # the peer is optional
    torch = None

LR, MOMENTUM, CHECK_STEPS = 0.01, 0.9, 3


class MLP(nn.Cell):
    """784-512-512-10 with ReLU."""

    def __init__(self):
        super().__init__()
        self.body = nn.SequentialCell(nn.Dense(784, 512), nn.ReLU(), nn.Dense(512, 512), nn.ReLU(),
                                      nn.Dense(512, 10))

    def construct(self, x):
        return self.body(x)


# name: (Mycel model, PyTorch model, input shape without batch, batch, unit)
WORKLOADS = {
    "lenet5": (LeNet5, lambda: torch_models.LeNet5(), (1, 32, 32), 64, "images/s"),
    "mlp": (MLP, lambda: torch_models.mlp(), (784,), 128, "samples/s"),
    "resnet18": (resnet18_cifar, lambda: torch_models.ResNet18Cifar(), (3, 32, 32), 32, "images/s"),
    "transformer": (TransformerClassifier, lambda: torch_models.TransformerClassifier(), (128, 128), 16,
                    "samples/s"),
}


def time_steps(step, warmup, steps):
    """Runs warmup + steps calls of step() (each returns the loss as a float, which waits for the
    step to finish); returns (losses, timed step durations)."""
    losses, times = [], []
    for i in range(warmup + steps):
        t = time.perf_counter()
        losses.append(step())
        if i >= warmup:
            times.append(time.perf_counter() - t)
    return losses, times


def mycel_run(make_net, init, x, y, mode, warmup, steps):
    mycel.set_context(mode=mode)
    net = make_net()
    for p, a in zip(net.trainable_params(), init):
        p.set_data(Tensor(a))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=LR, momentum=MOMENTUM)
    train = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    train.set_train(True)  # BatchNorm uses batch statistics, as torch's net.train() does
    xt, yt = Tensor(x), Tensor(y.astype(np.int32))
    return time_steps(lambda: float(train(xt, yt).asnumpy()), warmup, steps)


def torch_run(make_net, init, x, y, compiled, warmup, steps):
    net = make_net()
    params = list(net.parameters())
    if [tuple(p.shape) for p in params] != [a.shape for a in init]:
        raise RuntimeError("the PyTorch twin's parameters differ from Mycel's in order or shape")
    with torch.no_grad():
        for p, a in zip(params, init):
            p.copy_(torch.from_numpy(a))
    net.train()
    model = torch.compile(net) if compiled else net
    opt = torch.optim.SGD(params, lr=LR, momentum=MOMENTUM)
    loss_fn = torch.nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xt), yt)
        loss.backward()
        opt.step()
        return loss.item()

    return time_steps(step, warmup, steps)


def max_rel_diff(a, b):
    a, b = np.asarray(a[:CHECK_STEPS]), np.asarray(b[:CHECK_STEPS])
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-12)))


def run_workload(name, warmup, steps):
    make_mycel, make_torch, shape, batch, unit = WORKLOADS[name]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch,) + shape).astype(np.float32)
    y = rng.integers(0, 10, batch)
    mycel.set_seed(0)
    init = [p.asnumpy().copy() for p in make_mycel().trainable_params()]
    row = {"name": name, "batch": batch, "unit": unit}
    results = {}
    runs = [("graph", lambda: mycel_run(make_mycel, init, x, y, mycel.GRAPH_MODE, warmup, steps)),
            ("eager", lambda: mycel_run(make_mycel, init, x, y, mycel.PYNATIVE_MODE, warmup, steps))]
    if torch is not None:
        runs += [("torch", lambda: torch_run(make_torch, init, x, y, False, warmup, steps)),
                 ("compile", lambda: torch_run(make_torch, init, x, y, True, warmup, steps))]
    for key, fn in runs:
        try:
            losses, times = fn()
        except Exception as e:  # report and go on: one failing peer must not hide the others
            row[key + "_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
            print(f"  {name} {key}: FAILED {row[key + '_error']}", flush=True)
            continue
        results[key] = losses
        med = statistics.median(times)
        row[key] = batch / med
        print(f"  {name} {key}: median step {med * 1e3:.2f} ms ({batch / med:.1f} {unit}); "
              f"first step {losses[0]:.6f}, last {losses[-1]:.6f}", flush=True)
    if "graph" in results and "eager" in results:
        row["graph_vs_eager"] = max_rel_diff(results["graph"], results["eager"])
    if "graph" in results and "torch" in results:
        row["graph_vs_torch"] = max_rel_diff(results["graph"], results["torch"])
    return row


def fmt(v):
    return "failed" if v is None else f"{v:.1f}"


def ratio(row, a, b):
    return f"{row[a] / row[b]:.2f}" if a in row and b in row else "-"


def print_table(rows, threads):
    print(f"\nTraining throughput (items/s), float32, {threads} threads, "
          f"momentum {MOMENTUM} lr {LR}; loss diffs over the first {CHECK_STEPS} steps (max relative)")
    head = ("workload", "batch", "mycel graph", "mycel eager", "torch eager", "torch.compile",
            "graph/torch", "graph/compile", "graph~eager", "graph~torch")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [r["name"], str(r["batch"])] + [fmt(r.get(k)) for k in ("graph", "eager", "torch", "compile")]
        cells += [ratio(r, "graph", "torch"), ratio(r, "graph", "compile")]
        cells += [f"{r[k]:.1e}" if k in r else "-" for k in ("graph_vs_eager", "graph_vs_torch")]
        print("| " + " | ".join(cells) + " |")
    for r in rows:
        for k in ("graph", "eager", "torch", "compile"):
            if k + "_error" in r:
                print(f"{r['name']} {k} failed: {r[k + '_error']}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 warm-up and 5 timed steps")
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append",
                        help="run only this workload (repeatable)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args(argv)
    warmup, steps = (2, 5) if args.quick else (args.warmup, args.steps)
    if steps < CHECK_STEPS - warmup:
        steps = CHECK_STEPS
    mycel.set_context(num_threads=args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    print(f"threads: {args.threads} (mycel and torch); warm-up {warmup}, timed {steps} steps; "
          f"torch {torch.__version__ if torch is not None else 'not installed'}", flush=True)
    rows = []
    for name in args.only or list(WORKLOADS):
        print(f"{name}:", flush=True)
        rows.append(run_workload(name, warmup, steps))
    print_table(rows, args.threads)
    return rows


if __name__ == "__main__":
    main()
