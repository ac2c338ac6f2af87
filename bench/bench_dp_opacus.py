"""DP-SGD step time, Mycel against Opacus on PyTorch (CPU), on LeNet5 / Fashion-MNIST batches:
per-sample clipping (C = 1) plus Gaussian noise (sigma = 1), Momentum(0.05, 0.9); and each
framework's plain step on the same batch. Each framework runs in its own process (two OpenMP
runtimes in one process distort both), alternating A B A B; medians over the rounds.

    .venv/bin/python bench/bench_dp_opacus.py --torch-python /path/to/venv-with-torch-and-opacus/bin/python \
        [--batch 256] [--steps 20] [--rounds 3]

Mycel: DPModel(micro_batches=batch) (vmap of grad inside one compiled step). Opacus:
PrivacyEngine.make_private(poisson_sampling=False) (per-sample gradients by module hooks).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def batch_arrays(batch):
    """The first training images as bench_armour.py makes them ([0, 1], padded to 32 x 32); no framework import."""
    import gzip
    folder = "/usr/share/datasets/fashion-mnist"
    with gzip.open(os.path.join(folder, "train-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)[:batch]
    with gzip.open(os.path.join(folder, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)[:batch].astype(np.int32)
    return np.pad(x.astype(np.float32) / 255.0, ((0, 0), (0, 0), (2, 2), (2, 2))), y


def timed(step, steps):
    step()
    step()  # compile / warm up
    t = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t) / steps * 1000


def worker_mycel(batch, steps):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import mycel
    from mycel import Tensor, nn
    from mycel.armour.privacy.diff_privacy import DPModel, NoiseMechanismsFactory
    from lenet5 import LeNet5
    mycel.set_seed(0)
    mycel.set_context(mode=mycel.GRAPH_MODE)
    x, y = batch_arrays(batch)
    xb, yb = Tensor(x), Tensor(y)
    ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net = LeNet5()
    mech = NoiseMechanismsFactory.create("Gaussian", norm_bound=1.0, initial_noise_multiplier=1.0)
    dp = DPModel(micro_batches=batch, norm_bound=1.0, noise_mech=mech, network=net, loss_fn=ce,
                 optimizer=nn.Momentum(net.trainable_params(), 0.05, 0.9)).train_network
    plain_net = LeNet5()
    plain = mycel.Model(plain_net, ce, nn.Momentum(plain_net.trainable_params(), 0.05, 0.9)).train_network
    return {"dp_ms": timed(lambda: dp(xb, yb), steps), "plain_ms": timed(lambda: plain(xb, yb), steps)}


def worker_torch(batch, steps):
    import torch
    from opacus import PrivacyEngine
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from torch_models import LeNet5
    torch.manual_seed(0)
    x, y = batch_arrays(batch)
    xb, yb = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))
    ce = torch.nn.CrossEntropyLoss()

    def stepper(model, opt):
        def step():
            opt.zero_grad()
            ce(model(xb), yb).backward()
            opt.step()
        return step
    net = LeNet5()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xb, yb), batch_size=batch)
    model, opt, _ = PrivacyEngine().make_private(module=net, optimizer=opt, data_loader=loader,
                                                 noise_multiplier=1.0, max_grad_norm=1.0, poisson_sampling=False)
    dp_ms = timed(stepper(model, opt), steps)
    plain_net = LeNet5()
    plain_ms = timed(stepper(plain_net, torch.optim.SGD(plain_net.parameters(), lr=0.05, momentum=0.9)), steps)
    import opacus
    return {"dp_ms": dp_ms, "plain_ms": plain_ms, "torch": torch.__version__, "opacus": opacus.__version__}


def run(python, which, batch, steps):
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    out = subprocess.run([python, os.path.abspath(__file__), "--worker", which, "--batch", str(batch),
                          "--steps", str(steps)], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", choices=["mycel", "torch"])
    ap.add_argument("--torch-python", default=sys.executable)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if a.worker:
        fn = worker_mycel if a.worker == "mycel" else worker_torch
        print(json.dumps(fn(a.batch, a.steps)))
        return
    runs = {"mycel": [], "torch": []}
    for _ in range(a.rounds):
        runs["mycel"].append(run(sys.executable, "mycel", a.batch, a.steps))
        runs["torch"].append(run(a.torch_python, "torch", a.batch, a.steps))
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("dp_ms", "plain_ms")} for k, v in runs.items()}
    t = runs["torch"][0]
    print(f"LeNet5, batch {a.batch}, {a.steps} steps x {a.rounds} rounds (medians), torch {t['torch']}, "
          f"opacus {t['opacus']}, {len(os.sched_getaffinity(0))} cores")
    print(f"{'':8s} {'DP step ms':>11s} {'plain ms':>9s} {'DP / plain':>11s}")
    for k in ("mycel", "torch"):
        print(f"{k:8s} {med[k]['dp_ms']:11.1f} {med[k]['plain_ms']:9.1f} {med[k]['dp_ms'] / med[k]['plain_ms']:11.2f}")
    print(f"Opacus DP step / Mycel DP step: {med['torch']['dp_ms'] / med['mycel']['dp_ms']:.2f}")


if __name__ == "__main__":
    main()
