"""Run under mpirun by test_parallel_overlap.py: data parallel with the gradient buckets'
allreduces overlapping the backward (comm_overlap) against the blocking reducer.
1. dp_common's MLP, 12 steps in each mode with overlap on and off: losses and final weights.
2. LeNet5 (examples/lenet5.py) on random images, graph mode, 10 steps under each progress mode
   of the communicator (thread, kernel, wait) with the profiler on: per step the kernels' launch
   order and times and the communicator's per-bucket events (start, posted, done, wait, end).
Every rank saves <out>/overlap_rank<R>.npz."""
import os
import sys

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Tensor, _mycel, nn, ops
from mycel.insight import Profiler
from mycel.parallel import ParallelMode
from mpi_workers.dp_common import BATCH, data, make_net, make_step, weights

MLP_STEPS, LENET_STEPS = 12, 10
out_dir = sys.argv[1]
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
mycel.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True, device_num=N)
res = {}

# 1. MLP: buckets of 300 bytes, so its four gradients go into several allreduces.
mycel.set_auto_parallel_context(comm_fusion={"allreduce": {"mode": "size", "config": 300 / 2**20}})
x, y = data()
local = BATCH // N
for mode, label in ((mycel.PYNATIVE_MODE, "eager"), (mycel.GRAPH_MODE, "graph")):
    mycel.set_context(mode=mode)
    for overlap in (False, True):
        mycel.set_auto_parallel_context(comm_overlap=overlap)
        net = make_net()
        step, _, _ = make_step(net)
        assert step.grad_reducer.overlap == overlap and len(step.grad_reducer.buckets) > 1
        losses = []
        for s in range(MLP_STEPS):
            rows = slice(s * BATCH + R * local, s * BATCH + (R + 1) * local)
            losses.append(float(step(Tensor(x[rows]), Tensor(y[rows])).asnumpy()))
        tag = f"mlp_{label}_{'on' if overlap else 'off'}"
        res[f"{tag}_losses"] = np.array(losses)
        res[f"{tag}_buckets"] = np.array([len(b) for b in step.grad_reducer.buckets])
        for k, v in weights(net).items():
            res[f"{tag}_w_{k}"] = v
assert _mycel.comm.pending_allreduces() == 0

# 2. LeNet5 in graph mode: 64 KB buckets (LeNet5's 61706 float32 weights make 5 of them).
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))
from lenet5 import LeNet5  # noqa: E402

mycel.set_context(mode=mycel.GRAPH_MODE)
mycel.set_auto_parallel_context(comm_fusion={"allreduce": {"mode": "size", "config": 1 / 16}})
rng = np.random.RandomState(R)
images = rng.standard_normal((LENET_STEPS, 16, 1, 32, 32)).astype(np.float32)
labels = rng.randint(0, 10, (LENET_STEPS, 16)).astype(np.int32)
for overlap, progress in ((False, "thread"), (True, "thread"), (True, "kernel"), (True, "wait")):
    _mycel.comm.set_progress_mode(progress)
    mycel.set_auto_parallel_context(comm_overlap=overlap)
    mycel.set_seed(1)
    net = LeNet5()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.Momentum(net.trainable_params(), 0.01, 0.9))
    step(Tensor(images[0]), Tensor(labels[0]))  # compiles
    _mycel.comm.take_comm_events()
    tag = f"lenet_{progress}_{'on' if overlap else 'off'}"
    prof = Profiler(output_path=os.path.join(out_dir, f"prof_{R}_{tag}"))
    losses = []
    for s in range(1, LENET_STEPS):
        losses.append(float(step(Tensor(images[s]), Tensor(labels[s])).asnumpy()))
    events = prof.events()
    res[f"{tag}_losses"] = np.array(losses)
    res[f"{tag}_w0"] = net.trainable_params()[0].asnumpy()
    res[f"{tag}_kernels"] = np.array([e[0] for e in events])
    res[f"{tag}_kernel_times"] = np.array([(e[1] * 1e-9, e[2] * 1e-9) for e in events])
    res[f"{tag}_comm"] = np.array([e[2:] for e in _mycel.comm.take_comm_events()]).reshape(-1, 5)
    res[f"{tag}_nbuckets"] = np.array(len(step.grad_reducer.buckets))
_mycel.comm.set_progress_mode("thread")
np.savez(os.path.join(out_dir, f"overlap_rank{R}.npz"), **res)
print(f"rank {R} ok", flush=True)
