"""Run under mpirun by test_parallel_auto.py: the AUTO_PARALLEL cases of autopar_auto_common in
graph mode, for search_mode argv[2], each rank with the whole global batch. Rank 0 saves each
case's losses, final weights and first-batch gradients, and the strategy the search chose per
matmul of the training step's forward, to <out>/auto.npz."""
import json
import sys

import numpy as np

import mycel
import mycel.communication as comm
import mycel.dataset
from mycel import _mycel
from mycel import Tensor, ops
from mycel.parallel import ParallelMode
from mycel.parallel.search import last_search
from mycel.parallel.sliced import whole_values
from mpi_workers.autopar_auto_common import TOPOLOGY, cases
from mpi_workers.autopar_common import BATCH, STEPS, grads, make_step  # noqa: F401

out_dir, search_mode = sys.argv[1], sys.argv[2]
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
mycel.set_context(mode=mycel.GRAPH_MODE)
mycel.set_auto_parallel_context(parallel_mode=ParallelMode.AUTO_PARALLEL, device_num=N, search_mode=search_mode,
                                topology=TOPOLOGY)
results = {}
for name, (make, (x, y)) in cases(N, search_mode).items():
    net = make()
    step = make_step(net)
    losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
              for s in range(STEPS)]
    report = last_search()  # None under sharding_propagation (no search runs)
    if report is not None:
        results[f"{name}_strategies"] = np.array(json.dumps([[o["kind"], o["strategy"]] for o in report.ops]))
    else:
        results[f"{name}_strategies"] = np.array(json.dumps(_mycel.autopar.last_applied()))
    results[f"{name}_losses"] = np.array(losses)
    for k, v in whole_values(net.trainable_params()).items():  # split weights are stored as slices
        results[f"{name}_w_{k}"] = v
    net = make()
    for p, g in zip(net.trainable_params(), grads(net, x[:BATCH], y[:BATCH])):
        results[f"{name}_g_{p.name}"] = ops.AllReduce()(Tensor(g)).asnumpy() / N
if search_mode == "sharding_propagation":
    # full_batch=False: each rank's dataset reads its share (rows r, r + N, ...), batches of
    # BATCH / N: N ranks take the steps one process takes with batches of BATCH.
    from mpi_workers.autopar_common import MLP, data
    from mpi_workers.autopar_auto_common import batch_split_reference_rows
    mycel.set_auto_parallel_context(full_batch=False)
    x, y = data("mlp")
    ds = mycel.dataset.NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=False).batch(BATCH // N)
    net = MLP()
    step = make_step(net)
    losses = []
    for i, (bx, by) in enumerate(ds.create_tuple_iterator()):
        if i == 0:
            assert np.array_equal(bx.asnumpy(), x[batch_split_reference_rows(R, N)]), "not this rank's rows"
        losses.append(float(step(bx, by).asnumpy()))
    results["split_losses"] = np.array(losses)
    for k, v in whole_values(net.trainable_params()).items():
        results[f"split_w_{k}"] = v
if R == 0:
    np.savez(f"{out_dir}/auto.npz", **results)
