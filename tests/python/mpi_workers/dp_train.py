"""Run under mpirun by test_parallel_data.py: data-parallel training of dp_common's MLP, each
rank on its slice of every global batch, with TrainOneStepCell (eager and graph mode) and with
Model.train on a dataset sharded by default; rank 0 saves the global losses and final weights
to <out>/dp.npz for comparison with a single-process run. ModelCheckpoint writes under
<out>/ckpt_rank<R>, which must exist on rank 0 only."""
import os
import sys

import numpy as np

import mycel
import mycel.communication as comm
import mycel.dataset as ds
from mycel import Tensor, ops
from mycel.parallel import ParallelMode
from mycel.train.callback import CheckpointConfig, ModelCheckpoint
from mpi_workers.dp_common import BATCH, STEPS, data, make_net, make_step, weights

out_dir = sys.argv[1]
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
mycel.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True, device_num=N)
# Small buckets: the MLP's four gradients go into more than one fused allreduce.
mycel.set_auto_parallel_context(comm_fusion={"allreduce": {"mode": "size", "config": 300 / 2**20}})
x, y = data()
local = BATCH // N
results = {}
for mode, label in ((mycel.PYNATIVE_MODE, "eager"), (mycel.GRAPH_MODE, "graph")):
    mycel.set_context(mode=mode)
    net = make_net()
    step, _, _ = make_step(net)
    assert len(step.grad_reducer.buckets) > 1, step.grad_reducer.buckets
    losses = []
    for s in range(STEPS):
        rows = slice(s * BATCH + R * local, s * BATCH + (R + 1) * local)
        loss = step(Tensor(x[rows]), Tensor(y[rows]))
        losses.append(float(ops.AllReduce()(loss).asnumpy()) / N)  # the global batch's mean loss
    results[f"{label}_losses"] = np.array(losses)
    for k, v in weights(net).items():
        results[f"{label}_w_{k}"] = v

# parameter_broadcast: ranks other than 0 start from other weights; rank 0's are broadcast.
mycel.set_context(mode=mycel.GRAPH_MODE)
mycel.set_auto_parallel_context(parameter_broadcast=True)
net = make_net()
if R != 0:
    for p in net.trainable_params():
        ops.assign(p, Tensor(np.random.RandomState(R).standard_normal(p.shape).astype(np.float32)))
step, _, _ = make_step(net)
mycel.set_auto_parallel_context(parameter_broadcast=False)
for s in range(STEPS):
    rows = slice(s * BATCH + R * local, s * BATCH + (R + 1) * local)
    step(Tensor(x[rows]), Tensor(y[rows]))
for k, v in weights(net).items():
    results[f"bcast_w_{k}"] = v

# Model.train: the dataset shards itself (num_shards/shard_id from the context): rank R reads rows
# R, R + N, ..., so each global batch of BATCH rows is split across the ranks.
mycel.set_context(mode=mycel.GRAPH_MODE)
net = make_net()
_, loss, opt = make_step(net)
dataset = ds.NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=False).batch(local)
assert dataset.get_dataset_size() == STEPS, dataset.get_dataset_size()
ckpt = ModelCheckpoint(prefix="mlp", directory=os.path.join(out_dir, f"ckpt_rank{R}"),
                       config=CheckpointConfig(save_checkpoint_steps=STEPS))
mycel.Model(net, loss, opt).train(1, dataset, callbacks=[ckpt])
for k, v in weights(net).items():
    results[f"model_w_{k}"] = v
if R == 0:
    np.savez(os.path.join(out_dir, "dp.npz"), **results)
print(f"rank {R} ok", flush=True)
