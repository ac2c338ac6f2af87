"""Data-parallel scaling on this machine: steps of LeNet5 (Fashion-MNIST shape, 1x32x32) and
ResNet-18 (CIFAR shape) on 1 and 2 ranks with a fixed batch per rank, Mycel (graph mode,
DATA_PARALLEL, bucketed AllReduce over Open MPI) against PyTorch DistributedDataParallel on the
gloo backend when torch is installed. Each run is its own mpirun job; rounds alternate the
frameworks; the median of the rounds is reported as global samples per second and the scaling
efficiency (2-rank throughput / (2 x 1-rank throughput)).

    .venv/bin/python bench/bench_dp_scaling.py --rounds 3
    (PyTorch: .venv/bin/pip install torch==2.13.0 first; it is never a framework dependency)
    .venv/bin/python bench/bench_dp_scaling.py --variants mycel,mycel-blocking,mycel-kernel
    (the gradient buckets' overlap with the backward: "mycel" overlaps with a progress thread,
    "mycel-kernel" advances the allreduces between kernels, "mycel-blocking" reduces after the
    backward; the table adds each variant's step time)

Each rank gets an equal share of the cores (Mycel's rule in mycel.communication.init; PyTorch via
torch.set_num_threads with the same share), and OMP_WAIT_POLICY=PASSIVE for both so that ranks
sharing cores do not spin against each other."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = {"lenet5": ((1, 32, 32), 32), "resnet18": ((3, 32, 32), 16)}  # input shape, batch per rank


# Mycel's variants: (comm_overlap, the communicator's progress mode).
MYCEL_VARIANTS = {"mycel": (True, "thread"), "mycel-kernel": (True, "kernel"), "mycel-blocking": (False, "thread")}


def mycel_worker(model, batch, steps, warmup, variant="mycel"):
    import numpy as np
    import mycel
    import mycel.communication as comm
    from mycel import Tensor, nn
    from mycel.parallel import ParallelMode
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    comm.init()
    rank, size = comm.get_rank(), comm.get_group_size()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True, device_num=size)
    overlap, progress = MYCEL_VARIANTS[variant]
    mycel.set_auto_parallel_context(comm_overlap=overlap)
    from mycel import _mycel
    _mycel.comm.set_progress_mode(progress)
    if model == "lenet5":
        from lenet5 import LeNet5
        net = LeNet5()
    else:
        from models.resnet import resnet18_cifar
        net = resnet18_cifar()
    shape, _ = MODELS[model]
    rng = np.random.default_rng(rank)
    x = Tensor(rng.standard_normal((batch,) + shape).astype(np.float32))
    y = Tensor(rng.integers(0, 10, batch).astype(np.int32))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    for _ in range(warmup):
        step(x, y)
    comm_barrier = mycel.ops.Barrier()
    comm_barrier()
    t = time.perf_counter()
    for _ in range(steps):
        out = step(x, y)
    out.asnumpy()
    comm_barrier()
    dt = time.perf_counter() - t
    return rank, size, batch * size * steps / dt, mycel.get_context("num_threads")


def torch_worker(model, batch, steps, warmup, variant="torch"):
    import torch
    import torch.distributed as dist
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import torch_models
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", 0))
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", 1))
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", size))
    torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // local))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("gloo", rank=rank, world_size=size)
    net = torch_models.LeNet5() if model == "lenet5" else torch_models.ResNet18Cifar()
    ddp = torch.nn.parallel.DistributedDataParallel(net)
    shape, _ = MODELS[model]
    g = torch.Generator().manual_seed(rank)
    x = torch.randn((batch,) + shape, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    lossf = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = lossf(ddp(x), y)
        loss.backward()
        opt.step()
        return loss
    for _ in range(warmup):
        step()
    dist.barrier()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    dt = time.perf_counter() - t
    threads = torch.get_num_threads()
    dist.destroy_process_group()
    return rank, size, batch * size * steps / dt, threads


def launch(framework, model, ranks, steps, warmup):
    batch = MODELS[model][1]
    cmd = [os.path.join(ROOT, "scripts", "mpirun"), "-n", str(ranks), "-x", "OMP_WAIT_POLICY=PASSIVE",
           sys.executable, os.path.abspath(__file__), "--worker", framework, "--model", model,
           "--steps", str(steps), "--warmup", str(warmup)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{framework} {model} on {ranks} rank(s) failed:\n{out.stdout}\n{out.stderr}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", choices=list(MYCEL_VARIANTS) + ["torch"])
    ap.add_argument("--variants", default=None,
                    help="comma-separated frameworks to run: " + ", ".join(MYCEL_VARIANTS) + ", torch")
    ap.add_argument("--model", choices=list(MODELS), default=None)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if args.worker:
        fn = torch_worker if args.worker == "torch" else mycel_worker
        rank, size, rate, threads = fn(args.model, MODELS[args.model][1], args.steps, args.warmup, args.worker)
        if rank == 0:
            print("RESULT " + json.dumps({"rate": rate, "threads": threads, "ranks": size}), flush=True)
        return
    try:
        import torch  # noqa: F401
        frameworks = ["mycel", "torch"]
    except ImportError:
        frameworks = ["mycel"]
        print("(PyTorch not installed: Mycel only)")
    if args.variants:
        frameworks = [f for f in args.variants.split(",") if f != "torch" or "torch" in frameworks]
    print(f"{len(os.sched_getaffinity(0))} cores; batch per rank: "
          + ", ".join(f"{m} {b}" for m, (_, b) in MODELS.items()))
    models = [args.model] if args.model else list(MODELS)
    for model in models:
        steps = args.steps or (200 if model == "lenet5" else 10)
        rates = {(f, r): [] for f in frameworks for r in (1, 2)}
        threads = {}
        for _ in range(args.rounds):
            for r in (1, 2):
                for f in frameworks:
                    res = launch(f, model, r, steps, args.warmup)
                    rates[(f, r)].append(res["rate"])
                    threads[(f, r)] = res["threads"]
        print(f"\n{model}: {steps} steps, median of {args.rounds} rounds (global samples/s)")
        print("| framework | 1 rank | 2 ranks | efficiency | step ms (1 / 2 ranks) | threads per rank (1 / 2 ranks) |")
        print("|---|---|---|---|---|---|")
        batch = MODELS[model][1]
        for f in frameworks:
            one, two = statistics.median(rates[(f, 1)]), statistics.median(rates[(f, 2)])
            print(f"| {f} | {one:.0f} | {two:.0f} | {two / (2 * one):.2f} | {1e3 * batch / one:.1f} / "
                  f"{1e3 * 2 * batch / two:.1f} | {threads[(f, 1)]} / {threads[(f, 2)]} |")
        if "torch" in frameworks and "mycel" in frameworks:
            for r in (1, 2):
                ratio = statistics.median(rates[("mycel", r)]) / statistics.median(rates[("torch", r)])
                print(f"Mycel / PyTorch DDP at {r} rank(s): {ratio:.2f}x")


if __name__ == "__main__":
    main()
