"""Run under mpirun by test_parallel_data.py: data-parallel LeNet5 on the first STEPS global
batches of Fashion-MNIST (examples/lenet5.py's network and pipeline), each rank on its default
shard, Model.train in graph mode with the gradients bucketed. Rank 0 saves every step's global
mean loss and the final weights (w0, w1, ... in trainable_params order) to <out>/lenet.npz."""
import os
import sys

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Tensor, nn, ops
from mycel.parallel import ParallelMode
from mycel.train.callback import Callback
from mpi_workers.dp_lenet_common import GLOBAL_BATCH, STEPS, dataset, make_model

out_dir = sys.argv[1]
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
mycel.set_context(mode=mycel.GRAPH_MODE)
mycel.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True, device_num=N)
mycel.set_auto_parallel_context(comm_fusion={"allreduce": {"mode": "size", "config": 0.1}})  # several buckets


class GlobalLoss(Callback):
    def __init__(self):
        self.losses = []

    def on_train_step_end(self, run_context):
        loss = run_context.original_args().net_outputs
        self.losses.append(float(ops.AllReduce()(loss).asnumpy()) / N)


model, net = make_model()
record = GlobalLoss()
data = dataset(GLOBAL_BATCH // N)
assert data.get_dataset_size() == STEPS, data.get_dataset_size()
model.train(1, data, callbacks=[record])
if R == 0:
    np.savez(os.path.join(out_dir, "lenet.npz"), losses=np.array(record.losses),
             **{f"w{i}": p.asnumpy() for i, p in enumerate(net.trainable_params())})
print(f"rank {R} ok", flush=True)
