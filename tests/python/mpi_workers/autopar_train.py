"""Run under mpirun by test_parallel_autopar.py: the semi-auto cases of autopar_common in graph
mode, each rank with the whole global batch (the pass splits it); rank 0 saves every case's
losses, final weights and first-batch gradients to <out>/autopar.npz. Gradients from
GradOperation are each rank's d(sum of the ranks' losses)/dw, so their mean over the ranks is
the loss's gradient (what TrainOneStepCell's reducer applies)."""
import sys

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Tensor, ops
from mycel.parallel import ParallelMode
from mpi_workers.autopar_common import BATCH, cases, data, grads, train

out_dir = sys.argv[1]
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
mycel.set_context(mode=mycel.GRAPH_MODE)
mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, device_num=N)
results = {}
for name, (kind, make) in cases(N).items():
    losses, w = train(make(), kind)
    results[f"{name}_losses"] = losses
    for k, v in w.items():
        results[f"{name}_w_{k}"] = v
    x, y = data(kind)
    net = make()
    for p, g in zip(net.trainable_params(), grads(net, x[:BATCH], y[:BATCH])):
        results[f"{name}_g_{p.name}"] = ops.AllReduce()(Tensor(g)).asnumpy() / N
if R == 0:
    np.savez(f"{out_dir}/autopar.npz", **results)
