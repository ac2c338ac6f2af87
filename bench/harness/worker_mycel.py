"""Harness worker for Mycel: one workload in this process, with Mycel's default thread settings
(nothing set here), printing one JSON line (bench/harness/common.report).

    worker_mycel.py step <workload> <init.npz> <warmup> <steps> [amp_level]  # O2: bf16 rows
    worker_mycel.py epoch <init.npz> [sink_size [batches]]  # Model.train, one Fashion-MNIST epoch
    worker_mycel.py init <workload> <out.npz>         # the shared weights and batch
    worker_mycel.py infer <workload> <init.npz> <warmup> <iters>  # batch-1 eval forward, graph mode
    worker_mycel.py init_infer <workload> <out.npz>   # weights, batch-norm statistics and input
    worker_mycel.py matmul <n> <float32|bfloat16>     # ops.matmul n^3 GFLOP/s (the dtype's peak)
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (CHECK_STEPS, FASHION_BATCH, FASHION_DIR, INFER, LR, MOMENTUM, ROOT, STEPS,  # noqa: E402
                    infer_loop, report, timing)

sys.path.insert(0, os.path.join(ROOT, "examples"))
import mycel  # noqa: E402
from mycel import Tensor, nn  # noqa: E402


class MLP(nn.Cell):
    """784-512-512-10 with ReLU (bench/torch_models.mlp is its twin)."""

    def __init__(self):
        super().__init__()
        self.body = nn.SequentialCell(nn.Dense(784, 512), nn.ReLU(), nn.Dense(512, 512), nn.ReLU(),
                                      nn.Dense(512, 10))

    def construct(self, x):
        return self.body(x)


def make_net(name):
    from lenet5 import LeNet5
    from models import TransformerClassifier, mobilenet_v2, resnet18, resnet18_cifar
    return {"lenet5": LeNet5, "mlp": MLP, "resnet18": resnet18_cifar,
            "transformer": TransformerClassifier, "resnet18_cifar": resnet18_cifar,
            "resnet18_224": resnet18, "mobilenetv2": mobilenet_v2}[name]()


def infer_model(workload):
    """The model name of an inference workload ("resnet18" there is the ImageNet layout)."""
    model = INFER[workload][1]
    return "resnet18_224" if model == "resnet18" else model


def threads():
    return {"num_threads": mycel.get_context("num_threads"),
            "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "(unset)")}


def init(name, out):
    shape, batch, _ = STEPS[name]
    mycel.set_seed(0)
    params = [p.asnumpy() for p in make_net(name).trainable_params()]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch,) + shape).astype(np.float32)
    y = rng.integers(0, 10, batch).astype(np.int64)
    np.savez(out, x=x, y=y, *params)
    report({"framework": "mycel", "init": name, "params": len(params)})


def load(path):
    d = np.load(path)
    params = [d[f"arr_{i}"] for i in range(len(d.files) - 2)]
    return d["x"], d["y"], params


def train_step(net, params, amp_level="O0"):
    for p, a in zip(net.trainable_params(), params):
        if tuple(p.shape) != a.shape:
            raise RuntimeError(f"weight {p.name}: shape {tuple(p.shape)} vs shared {a.shape}")
        p.set_data(Tensor(a))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=LR, momentum=MOMENTUM)
    if amp_level == "O0":
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    else:  # bfloat16 compute, float32 master weights (the optimizer holds the float32 Parameters)
        from mycel import amp
        step = amp.build_train_network(net, opt, loss, level=amp_level)
    step.set_train(True)
    return step


def step_run(name, path, warmup, steps, amp_level="O0"):
    mycel.set_context(mode=mycel.GRAPH_MODE)
    x, y, params = load(path)
    step = train_step(make_net(name), params, amp_level)
    xt, yt = Tensor(x), Tensor(y.astype(np.int32))
    t = time.perf_counter()
    losses = [float(step(xt, yt).asnumpy())]  # compiles
    first = time.perf_counter() - t
    times = []
    for i in range(CHECK_STEPS - 1 + warmup + steps):
        t = time.perf_counter()
        loss = float(step(xt, yt).asnumpy())
        dt = time.perf_counter() - t
        if len(losses) < CHECK_STEPS:
            losses.append(loss)
        if i >= CHECK_STEPS - 1 + warmup:
            times.append(dt)
    tm = timing(times)
    report({"framework": "mycel", "workload": name, "amp_level": amp_level, "losses": losses, "threads": threads(),
            "compile_s": max(first - tm["median_s"], 0.0), **tm})


def fashion_dataset(batch):
    import mycel.dataset as ds
    from mycel.dataset import vision
    data = ds.MnistDataset(FASHION_DIR, usage="train", shuffle=True)
    data = data.map([vision.Resize((32, 32)), vision.Rescale(1.0 / 255.0, 0.0),
                     vision.Rescale(1 / 0.3530, -0.2860 / 0.3530), vision.HWC2CHW()], input_columns="image")
    return data.batch(batch, drop_remainder=True)


def epoch_run(path, sink_size, limit=0, workers=0):
    """One Fashion-MNIST epoch with Model.train (LeNet5, batch 64), after a short warm-up train
    (compilation); and the same network's fixed-batch step throughput, for the ratio."""
    from mycel.train import Model
    import mycel.dataset as ds
    if workers > 0:  # the pipeline's num_parallel_workers (0: the framework's default)
        ds.config.set_num_parallel_workers(workers)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    _, _, params = load(path)
    net = make_net("lenet5")
    for p, a in zip(net.trainable_params(), params):
        p.set_data(Tensor(a))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=LR, momentum=MOMENTUM)
    model = Model(net, loss, opt, metrics={"acc"})
    data = fashion_dataset(FASHION_BATCH)
    if limit > 0:  # the first `limit` batches only (a shorter "epoch", for a loaded machine)
        data = data.take(limit)
    steps = data.get_dataset_size()
    sink = sink_size > 0
    model.train(1, data.take(20), dataset_sink_mode=sink, sink_size=min(sink_size, 20) if sink else -1)
    t = time.perf_counter()
    if sink:
        model.train(max(steps // sink_size, 1), data, dataset_sink_mode=True, sink_size=sink_size)
        steps = max(steps // sink_size, 1) * sink_size
    else:
        model.train(1, data)
    dt = time.perf_counter() - t
    # The fixed-batch step of the same train network, same process, on the pipeline's first batch.
    # Not random images with every label 0: that batch saturates the trained network, whose
    # gradients then fill with subnormals, each a microcode assist on Intel cores (the step ran
    # 14-33 ms instead of 3.1-3.3 on an Ice Lake Xeon; docs/training.md, "Subnormal numbers").
    step = model.train_network
    x, y = next(data.create_tuple_iterator())[:2]
    times = []
    for i in range(60):
        t = time.perf_counter()
        step(x, y).asnumpy()
        if i >= 10:
            times.append(time.perf_counter() - t)
    tm = timing(times)
    # The same step as a throughput (steps / their total time, as the epoch's figure is): the
    # median above leaves out the slow steps that the epoch's total includes.
    t = time.perf_counter()
    for i in range(200):
        step(x, y).asnumpy()
    mean_s = (time.perf_counter() - t) / 200
    report({"framework": "mycel", "workload": "fashion_epoch" + ("_sink" if sink else ""),
            "threads": threads(), "data_workers": ds.config.get_num_parallel_workers(), "epoch_s": dt, "images_per_s": steps * FASHION_BATCH / dt,
            "steps": steps, "step_images_per_s": FASHION_BATCH / tm["median_s"],
            "step_throughput_images_per_s": FASHION_BATCH / mean_s, **tm})


def init_infer(workload, out):
    """Mycel's initial weights, random batch-norm statistics (mean ~ N(0, 0.1), variance,
    gamma in [0.5, 1.5], beta ~ N(0, 0.1): not the identity, so folding them is exercised) and
    a random input, saved for both workers (trainable as arr_i, statistics as stat_i, in
    definition order)."""
    shape, _ = INFER[workload]
    mycel.set_seed(0)
    net = make_net(infer_model(workload))
    rng = np.random.default_rng(1)
    params = []
    for p in net.trainable_params():
        a = p.asnumpy()
        if p.name.endswith("gamma"):
            a = rng.uniform(0.5, 1.5, a.shape).astype(np.float32)
        elif p.name.endswith("beta"):
            a = rng.normal(0, 0.1, a.shape).astype(np.float32)
        params.append(a)
    stats = []
    for p in net.untrainable_params():
        if p.name.endswith("moving_mean"):
            stats.append(rng.normal(0, 0.1, tuple(p.shape)).astype(np.float32))
        elif p.name.endswith("moving_variance"):
            stats.append(rng.uniform(0.5, 1.5, tuple(p.shape)).astype(np.float32))
        else:
            raise RuntimeError(f"init_infer: unexpected untrainable parameter {p.name}")
    x = rng.standard_normal(shape).astype(np.float32)
    np.savez(out, x=x, **{f"arr_{i}": a for i, a in enumerate(params)},
             **{f"stat_{i}": a for i, a in enumerate(stats)})
    report({"framework": "mycel", "init": workload, "params": len(params), "stats": len(stats)})


def load_infer(path):
    d = np.load(path)
    count = lambda prefix: sum(1 for k in d.files if k.startswith(prefix))
    return (d["x"], [d[f"arr_{i}"] for i in range(count("arr_"))],
            [d[f"stat_{i}"] for i in range(count("stat_"))])


def infer_run(workload, path, warmup, iters):
    """Batch-1 forward in eval mode, graph mode: the output (for the agreement check), the first
    call's extra time (compilation) and the per-call latencies."""
    mycel.set_context(mode=mycel.GRAPH_MODE)
    x, params, stats = load_infer(path)
    net = make_net(infer_model(workload))
    for group, arrays in ((net.trainable_params(), params), (net.untrainable_params(), stats)):
        if len(group) != len(arrays):
            raise RuntimeError(f"{workload}: {len(group)} parameters vs {len(arrays)} shared")
        for p, a in zip(group, arrays):
            if tuple(p.shape) != a.shape:
                raise RuntimeError(f"weight {p.name}: shape {tuple(p.shape)} vs shared {a.shape}")
            p.set_data(Tensor(a))
    net.set_train(False)
    xt = Tensor(x)
    t = time.perf_counter()
    out = net(xt).asnumpy()  # compiles
    first = time.perf_counter() - t
    tm = timing(infer_loop(lambda: net(xt).asnumpy(), warmup, iters))
    report({"framework": "mycel", "workload": workload, "output": out.ravel().tolist(),
            "threads": threads(), "compile_s": max(first - tm["median_s"], 0.0), **tm})


def matmul_run(n, dtype):
    """GFLOP/s of an n x n x n matmul on tensors of `dtype`, through Mycel's ops (oneDNN's
    primitive of that dtype): the best of 10 calls after 2 warm-up ones."""
    rng = np.random.default_rng(0)
    a, b = (Tensor(rng.standard_normal((n, n)).astype(np.float32)).astype(getattr(mycel, dtype))
            for _ in range(2))
    times = []
    for i in range(12):
        t = time.perf_counter()
        mycel.ops.matmul(a, b).asnumpy()
        if i >= 2:
            times.append(time.perf_counter() - t)
    report({"framework": "mycel", "workload": f"matmul{n}", "dtype": dtype, "threads": threads(),
            "gflops": 2.0 * n ** 3 / min(times) / 1e9, **timing(times)})


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "init":
        init(sys.argv[2], sys.argv[3])
    elif cmd == "step":
        step_run(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                 sys.argv[6] if len(sys.argv) > 6 else "O0")
    elif cmd == "init_infer":
        init_infer(sys.argv[2], sys.argv[3])
    elif cmd == "infer":
        infer_run(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif cmd == "matmul":
        matmul_run(int(sys.argv[2]), sys.argv[3])
    elif cmd == "epoch":
        epoch_run(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else -1,
                  int(sys.argv[4]) if len(sys.argv) > 4 else 0, int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    else:
        raise SystemExit(f"worker_mycel: unknown command {cmd!r}")
