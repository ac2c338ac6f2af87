"""Run under mpirun by test_parallel_optimizer_shard.py: data-parallel training of dp_common's
MLP with Adam and enable_parallel_optimizer=True (eager and graph mode), each rank on its slice
of every global batch. Rank 0 saves the global losses, the final weights (graph mode stores
blocks: gathered here), and every rank's bytes of Adam state and of weights to
<out>/optshard.npz."""
import sys

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Tensor, nn, ops
from mycel.parallel import ParallelMode
from mpi_workers.dp_common import BATCH, OPTSHARD_STEPS as STEPS, make_net, data
out_dir = sys.argv[1]
lamb = len(sys.argv) > 2 and sys.argv[2] == "lamb"  # a norm-taking optimizer instead of Adam
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
mycel.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True, device_num=N,
                                enable_parallel_optimizer=True)
x, y = data()
local = BATCH // N
results = {}
for mode, label in ((mycel.PYNATIVE_MODE, "eager"), (mycel.GRAPH_MODE, "graph")):
    mycel.set_context(mode=mode)
    net = make_net()
    opt = (nn.Lamb if lamb else nn.Adam)(net.trainable_params(), learning_rate=0.01)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")),
                               opt)
    losses = []
    for s in range(STEPS):
        rows = slice(s * BATCH + R * local, s * BATCH + (R + 1) * local)
        loss = step(Tensor(x[rows]), Tensor(y[rows]))
        losses.append(float(ops.AllReduce()(loss).asnumpy()) / N)
    results[f"{label}_losses"] = np.array(losses)
    for p in net.trainable_params():  # graph mode stores blocks (a layout): gather them to compare
        results[f"{label}_w_{p.name}"] = (ops.AllGather()(p) if getattr(p, "layout", None) else p).asnumpy()
    state = sum(p.asnumpy().nbytes for p in opt.get_parameters()
                if p.name.startswith(("moment1.", "moment2.", "lamb_m.", "lamb_v.")))
    held = sum(p.asnumpy().nbytes for p in net.trainable_params())
    results[f"{label}_state_bytes"] = ops.AllGather()(Tensor(np.array([state], np.int64))).asnumpy()
    results[f"{label}_weight_bytes"] = ops.AllGather()(Tensor(np.array([held], np.int64))).asnumpy()
if R == 0:
    np.savez(f"{out_dir}/optshard{'_lamb' if lamb else ''}.npz", **results)
