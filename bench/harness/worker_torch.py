"""Harness worker for PyTorch (eager, CPU): one workload in this process, with PyTorch's default
thread settings (nothing set here), printing one JSON line. PyTorch is a benchmark peer only.

    worker_torch.py step <workload> <init.npz> <warmup> <steps> [fp32|autocast]  # autocast: bf16
    worker_torch.py epoch <init.npz> [batches]   # a plain loop over in-memory Fashion-MNIST tensors
    worker_torch.py infer <workload> <init.npz> <warmup> <iters> <no_grad|inference_mode>
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (CHECK_STEPS, FASHION_BATCH, INFER, LR, MOMENTUM, ROOT, fashion_arrays, infer_loop,  # noqa: E402
                    report, timing)

sys.path.insert(0, os.path.join(ROOT, "bench"))
import torch  # noqa: E402
import torch_models  # noqa: E402


def make_net(name):
    return {"lenet5": torch_models.LeNet5, "mlp": torch_models.mlp, "resnet18": torch_models.ResNet18Cifar,
            "transformer": torch_models.TransformerClassifier, "resnet18_cifar": torch_models.ResNet18Cifar,
            "resnet18_224": torch_models.resnet18, "mobilenetv2": torch_models.MobileNetV2}[name]()


def threads():
    return {"num_threads": torch.get_num_threads(), "interop_threads": torch.get_num_interop_threads(),
            "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "(unset)")}


def load(path):
    d = np.load(path)
    params = [d[f"arr_{i}"] for i in range(len(d.files) - 2)]
    return d["x"], d["y"], params


def setup(name, params):
    net = make_net(name)
    ps = list(net.parameters())
    if [tuple(p.shape) for p in ps] != [a.shape for a in params]:
        raise RuntimeError(f"{name}: the PyTorch twin's parameters differ from Mycel's in order or shape")
    with torch.no_grad():
        for p, a in zip(ps, params):
            p.copy_(torch.from_numpy(a))
    net.train()
    return net, torch.optim.SGD(ps, lr=LR, momentum=MOMENTUM), torch.nn.CrossEntropyLoss()


def flops_of_step(net, opt, loss_fn, x, y):
    """Forward + backward FLOPs of one step, from PyTorch's own counter (matmul/conv)."""
    from torch.utils.flop_counter import FlopCounterMode
    counter = FlopCounterMode(display=False)
    with counter:
        loss_fn(net(x), y).backward()
    opt.zero_grad(set_to_none=True)
    return counter.get_total_flops()


def step_run(name, path, warmup, steps, mode="fp32"):
    """mode "autocast": the forward under torch.autocast("cpu", torch.bfloat16) (PyTorch's mixed
    precision: bf16 matmul/conv, float32 weights and optimizer), the peer of Mycel's O2."""
    x, y, params = load(path)
    net, opt, loss_fn = setup(name, params)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    autocast = mode == "autocast"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn(net(xt), yt)
        loss.backward()
        opt.step()
        return loss.item()

    losses, times = [], []
    for i in range(CHECK_STEPS + warmup + steps):
        t = time.perf_counter()
        loss = step()
        dt = time.perf_counter() - t
        if i < CHECK_STEPS:
            losses.append(loss)
        elif i >= CHECK_STEPS + warmup:
            times.append(dt)
    flops = flops_of_step(*setup(name, params), xt, yt)
    report({"framework": "torch", "version": torch.__version__, "workload": name, "mode": mode,
            "losses": losses, "threads": threads(), "flops_per_step": flops, **timing(times)})


def epoch_run(path, limit=0):
    """LeNet5 over the Fashion-MNIST train set held in memory (already preprocessed), shuffled
    each epoch, batch 64: the loop a PyTorch user writes without a DataLoader."""
    _, _, params = load(path)
    net, opt, loss_fn = setup("lenet5", params)
    images, labels = fashion_arrays()
    xs, ys = torch.from_numpy(images), torch.from_numpy(labels)
    steps = len(xs) // FASHION_BATCH
    if limit > 0:  # the first `limit` batches only, as the Mycel worker
        steps = min(steps, limit)
    order = torch.randperm(len(xs))
    for i in range(20):  # warm-up
        idx = order[i * FASHION_BATCH:(i + 1) * FASHION_BATCH]
        opt.zero_grad(set_to_none=True)
        loss_fn(net(xs[idx]), ys[idx]).backward()
        opt.step()
    t = time.perf_counter()
    order = torch.randperm(len(xs))
    for i in range(steps):
        idx = order[i * FASHION_BATCH:(i + 1) * FASHION_BATCH]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(xs[idx]), ys[idx])
        loss.backward()
        opt.step()
    loss.item()
    dt = time.perf_counter() - t
    report({"framework": "torch", "version": torch.__version__, "workload": "fashion_epoch",
            "threads": threads(), "epoch_s": dt, "images_per_s": steps * FASHION_BATCH / dt, "steps": steps})


def infer_run(workload, path, warmup, iters, mode):
    """Batch-1 forward in eval() under torch.no_grad() or torch.inference_mode()."""
    d = np.load(path)
    count = lambda prefix: sum(1 for k in d.files if k.startswith(prefix))
    model = INFER[workload][1]
    net = make_net("resnet18_224" if model == "resnet18" else model)
    ps = list(net.parameters())
    stats = [b for n, b in net.named_buffers() if n.endswith(("running_mean", "running_var"))]
    shared = [d[f"arr_{i}"] for i in range(count("arr_"))]
    shared_stats = [d[f"stat_{i}"] for i in range(count("stat_"))]
    if ([tuple(p.shape) for p in ps] != [a.shape for a in shared]
            or [tuple(b.shape) for b in stats] != [a.shape for a in shared_stats]):
        raise RuntimeError(f"{workload}: the PyTorch twin's parameters differ from Mycel's in order or shape")
    with torch.no_grad():
        for p, a in zip(ps + stats, shared + shared_stats):
            p.copy_(torch.from_numpy(a))
    net.eval()
    xt = torch.from_numpy(d["x"])
    context = torch.inference_mode if mode == "inference_mode" else torch.no_grad
    with context():
        out = net(xt).numpy().copy()
        times = infer_loop(lambda: net(xt), warmup, iters)
    report({"framework": "torch", "version": torch.__version__, "workload": workload, "mode": mode,
            "output": out.ravel().tolist(), "threads": threads(), **timing(times)})


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "step":
        step_run(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                 sys.argv[6] if len(sys.argv) > 6 else "fp32")
    elif cmd == "epoch":
        epoch_run(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    elif cmd == "infer":
        infer_run(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    else:
        raise SystemExit(f"worker_torch: unknown command {cmd!r}")
