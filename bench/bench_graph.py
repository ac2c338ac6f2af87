"""Graph mode vs eager mode vs PyTorch eager on forward passes (not a test): an MLP
(784-512-512-10, batch 128) and LeNet5 (batch 64, 1x32x32; also compiled for a dynamic batch
with set_inputs), timed interleaved in one run.

    .venv/bin/python bench/bench_graph.py [--reps 30]
"""
import argparse
import statistics
import time

import numpy as np

import mycel
from mycel import Tensor, nn, ops
from mycel.common.parameter import Parameter

try:
    import torch
except ImportError:
    torch = None

RNG = np.random.default_rng(0)


def param(*shape):
    return Parameter(Tensor((RNG.standard_normal(shape) * 0.05).astype(np.float32)))


class MLP(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w1, self.b1 = param(512, 784), param(512)
        self.w2, self.b2 = param(512, 512), param(512)
        self.w3, self.b3 = param(10, 512), param(10)

    def construct(self, x):
        x = ops.relu(ops.dense(x, self.w1, self.b1))
        x = ops.relu(ops.dense(x, self.w2, self.b2))
        return ops.dense(x, self.w3, self.b3)


class LeNet5(nn.Cell):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = param(6, 1, 5, 5), param(16, 6, 5, 5)
        self.f1, self.b1 = param(120, 400), param(120)
        self.f2, self.b2 = param(84, 120), param(84)
        self.f3, self.b3 = param(10, 84), param(10)

    def construct(self, x):
        x = ops.max_pool2d(ops.relu(ops.conv2d(x, self.c1, pad_mode="valid")), kernel_size=2, strides=2)
        x = ops.max_pool2d(ops.relu(ops.conv2d(x, self.c2, pad_mode="valid")), kernel_size=2, strides=2)
        x = ops.reshape(x, (x.shape[0], -1))
        x = ops.relu(ops.dense(x, self.f1, self.b1))
        x = ops.relu(ops.dense(x, self.f2, self.b2))
        return ops.dense(x, self.f3, self.b3)


def torch_twin(net):
    ps = {k: torch.from_numpy(np.array(v.asnumpy())) for k, v in net.parameters_and_names()}
    F = torch.nn.functional
    if isinstance(net, MLP):
        def fwd(x):
            x = F.relu(F.linear(x, ps["w1"], ps["b1"]))
            x = F.relu(F.linear(x, ps["w2"], ps["b2"]))
            return F.linear(x, ps["w3"], ps["b3"])
    else:
        def fwd(x):
            x = F.max_pool2d(F.relu(F.conv2d(x, ps["c1"])), 2, 2)
            x = F.max_pool2d(F.relu(F.conv2d(x, ps["c2"])), 2, 2)
            x = x.reshape(x.shape[0], -1)
            x = F.relu(F.linear(x, ps["f1"], ps["b1"]))
            x = F.relu(F.linear(x, ps["f2"], ps["b2"]))
            return F.linear(x, ps["f3"], ps["b3"])
    return fwd


def bench(name, net, x_np, reps, dynamic_batch=False):
    x = Tensor(x_np)
    if dynamic_batch:  # one Program for every batch size (set_inputs with a None dim)
        net.set_inputs(Tensor(shape=[None, *x_np.shape[1:]], dtype=mycel.float32))
    mycel.set_context(mode=mycel.PYNATIVE_MODE)
    eager_out = net(x)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    graph_out = net(x)  # compiles
    np.testing.assert_allclose(graph_out.asnumpy(), eager_out.asnumpy(), rtol=1e-5, atol=1e-5)
    cases = {}

    def eager():
        mycel.set_context(mode=mycel.PYNATIVE_MODE)
        net(x)

    def graph():
        mycel.set_context(mode=mycel.GRAPH_MODE)
        net(x)
    cases["mycel eager"] = eager
    cases["mycel graph"] = graph
    if torch is not None:
        fwd, tx = torch_twin(net), torch.from_numpy(x_np)
        def torch_eager():
            with torch.no_grad():
                fwd(tx)
        cases["torch eager"] = torch_eager
    times = {k: [] for k in cases}
    for _ in range(reps):
        for k, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(f"{name}: " + ", ".join(f"{k} {v:.3f} ms" for k, v in med.items()))
    print(f"  graph speed-up over eager: {med['mycel eager'] / med['mycel graph']:.2f}x", end="")
    if torch is not None:
        print(f"; graph / torch eager: {med['mycel graph'] / med['torch eager']:.2f} (below 1 = Mycel faster)")
    else:
        print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    if torch is not None:
        torch.set_num_threads(mycel.get_context("num_threads"))
    bench("MLP 784-512-512-10, batch 128", MLP(), RNG.standard_normal((128, 784)).astype(np.float32), args.reps)
    lenet_x = RNG.standard_normal((64, 1, 32, 32)).astype(np.float32)
    bench("LeNet5, batch 64", LeNet5(), lenet_x, args.reps)
    bench("LeNet5, batch 64, dynamic batch (set_inputs)", LeNet5(), lenet_x, args.reps,
          dynamic_batch=True)
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


if __name__ == "__main__":
    main()
