"""Training-step throughput: Mycel GRAPH_MODE and PYNATIVE_MODE (nn.TrainOneStepCell) vs PyTorch
eager and torch.compile. The "mycel pynative" column is Mycel's PyNative mode: the same
TrainOneStepCell run op by op from Python with the gradient tape (MindSpore's PYNATIVE_MODE),
not a compiled step; it measures dispatch plus tape overhead. Same models, weights, batch,
optimizer (momentum 0.9, lr 0.01), float32 and thread count, in one process (for each framework
alone in its own process with its default threads, use bench/harness/run.py). Items/s is batch / median step time over the timed steps (after the
warm-up steps, which include compilation). One fixed random batch is reused every step, so the
data pipeline is not measured. Also checks that Mycel's graph and PyNative losses agree for the
first 3 steps (and prints the gap to PyTorch's, from the same initial weights).

    .venv/bin/python bench/bench_train.py [--quick] [--only lenet5|mlp|resnet18|transformer]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

# Two OpenMP runtimes (Mycel's and torch's) take turns here; with the default spin-waiting, the
# idle one's threads keep spinning on the shared cores and slow the other down. Set before import.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
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


def mycel_step(make_net, init, x, y, mode):
    """A Momentum TrainOneStepCell from the weights init; the returned step() runs one training
    step in `mode` and returns the loss as a float (which waits for the step to finish)."""
    mycel.set_context(mode=mode)
    net = make_net()
    for p, a in zip(net.trainable_params(), init):
        p.set_data(Tensor(a))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=LR, momentum=MOMENTUM)
    train = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    train.set_train(True)  # BatchNorm uses batch statistics, as torch's net.train() does
    xt, yt = Tensor(x), Tensor(y.astype(np.int32))

    def step():
        mycel.set_context(mode=mode)  # steps of the two modes are interleaved
        return float(train(xt, yt).asnumpy())

    return step


def torch_step(make_net, init, x, y, compiled):
    """The same step in PyTorch (torch.compile of the model when compiled)."""
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

    return step


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
    makers = [("graph", lambda: mycel_step(make_mycel, init, x, y, mycel.GRAPH_MODE)),
              ("pynative", lambda: mycel_step(make_mycel, init, x, y, mycel.PYNATIVE_MODE))]
    if torch is not None:
        makers += [("torch", lambda: torch_step(make_torch, init, x, y, False)),
                   ("compile", lambda: torch_step(make_torch, init, x, y, True))]
    steps_of, results, times = {}, {}, {}

    def guarded(key, fn):  # a failing peer is reported and dropped, never hides the others
        try:
            return fn()
        except Exception as e:
            msg = str(e).strip().splitlines()
            row[key + "_error"] = f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]
            print(f"  {name} {key}: FAILED {row[key + '_error']}", flush=True)
            steps_of.pop(key, None)
            return None

    for key, make in makers:
        step = guarded(key, make)
        if step is not None:
            steps_of[key], results[key], times[key] = step, [], []
    # Round-robin, one step of each in turn, so that all see the same machine load (the cores
    # are shared); warm-up steps (compilation included) are not timed.
    for i in range(warmup + steps):
        for key in list(steps_of):
            t = time.perf_counter()
            loss = guarded(key, steps_of[key])
            if loss is None:
                continue
            results[key].append(loss)
            if i >= warmup:
                times[key].append(time.perf_counter() - t)
    for key in steps_of:
        med = statistics.median(times[key])
        row[key] = batch / med
        print(f"  {name} {key}: median step {med * 1e3:.2f} ms ({batch / med:.1f} {unit}); "
              f"first step loss {results[key][0]:.6f}, last {results[key][-1]:.6f}", flush=True)
    if "graph" in results and "pynative" in results:
        row["graph_vs_pynative"] = max_rel_diff(results["graph"], results["pynative"])
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
    head = ("workload", "batch", "mycel graph", "mycel pynative", "torch eager", "torch.compile",
            "graph/torch", "graph/compile", "graph~pynative", "graph~torch")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [r["name"], str(r["batch"])] + [fmt(r.get(k)) for k in ("graph", "pynative", "torch", "compile")]
        cells += [ratio(r, "graph", "torch"), ratio(r, "graph", "compile")]
        cells += [f"{r[k]:.1e}" if k in r else "-" for k in ("graph_vs_pynative", "graph_vs_torch")]
        print("| " + " | ".join(cells) + " |")
    for r in rows:
        for k in ("graph", "pynative", "torch", "compile"):
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
    threads = f"mycel {mycel.get_context('num_threads')}"  # read back: the counts actually used
    if torch is not None:
        threads += f", torch {torch.get_num_threads()}"
    print(f"threads: {threads}; warm-up {warmup}, timed {steps} steps; "
          f"torch {torch.__version__ if torch is not None else 'not installed'}; "
          f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}", flush=True)
    rows = []
    for name in args.only or list(WORKLOADS):
        print(f"{name}:", flush=True)
        rows.append(run_workload(name, warmup, steps))
    print_table(rows, args.threads)
    return rows


if __name__ == "__main__":
    main()
