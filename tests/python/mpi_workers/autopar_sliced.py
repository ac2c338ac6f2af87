"""Run under mpirun by test_parallel_sliced.py: the cases of autopar_sliced_common with
slice_parameters on (the default), counting the graphs compiled during the steps. Each rank writes its checkpoint (its slices) and its parameter bytes
(weights and optimizer state); rank 0 merges the checkpoints with the weights' layouts and saves
losses, merged weights and every rank's bytes to <out>/sliced.npz; it also merges through the
MindSpore strategy file each step wrote (strategy_ckpt_save_file), saved as "<case>_pb_<weight>". With the argument "optshard",
the 2-rank "reduction" case runs with enable_parallel_optimizer=True too (its whole w2 is then
stored as dim-0 blocks), and again with the parallel optimizer alone (slice_parameters=False:
both weights stored as dim-0 blocks from the start, saved as "optonly_..."), to
<out>/sliced_optshard.npz."""
import sys

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Tensor, _mycel, nn, ops
from mycel.dataset import NumpySlicesDataset
from mycel.parallel import ParallelMode, load_distributed_checkpoint
from mycel.parallel.sliced import parameter_layouts, whole_values
from mpi_workers.autopar_auto_common import TOPOLOGY
from mpi_workers.autopar_common import BATCH, STEPS
from mpi_workers.autopar_sliced_common import cases, make_loss_opt, make_step

out_dir = sys.argv[1]
optshard = len(sys.argv) > 2 and sys.argv[2] == "optshard"
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
mycel.set_context(mode=mycel.GRAPH_MODE)
results = {}
runs = [(name, case, True) for name, case in cases(N).items()]
if optshard:
    runs = [("reduction", cases(N)["reduction"], True), ("optonly", cases(N)["reduction"], False)]
for name, (mode, make, (x, y), _), slice_params in runs:
    mycel.reset_auto_parallel_context()
    mycel.set_auto_parallel_context(
        parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL if mode == "semi" else ParallelMode.AUTO_PARALLEL,
        device_num=N, topology=TOPOLOGY, enable_parallel_optimizer=optshard)
    if not slice_params:  # slice_parameters is on by default
        mycel.set_auto_parallel_context(slice_parameters=False)
    strategy = f"{out_dir}/{name}_strategy_rank{R}.ckpt"  # MindSpore's protobuf strategy file
    if not optshard:
        mycel.set_auto_parallel_context(strategy_ckpt_save_file=strategy)
    net = make()
    step = make_step(net)
    compiles = _mycel.graph.compile_count()
    losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
              for s in range(STEPS)]
    results[f"{name}_compiles"] = np.array(_mycel.graph.compile_count() - compiles)
    results[f"{name}_losses"] = np.array(losses)
    nbytes = sum(p.asnumpy().nbytes for p in net.trainable_params()) + \
        sum(p.asnumpy().nbytes for p in step.optimizer.get_parameters() if p.name.startswith("moments."))
    results[f"{name}_bytes"] = ops.AllGather()(Tensor(np.array([nbytes], np.int64))).asnumpy()
    mycel.save_checkpoint(net, f"{out_dir}/{name}_rank{R}.ckpt")
    ops.Barrier()()
    if R == 0:
        layouts = parameter_layouts(net)
        results[f"{name}_sliced"] = np.array(sorted(layouts))
        merged = load_distributed_checkpoint(make(), [f"{out_dir}/{name}_rank{r}.ckpt" for r in range(N)], layouts=layouts)
        for k, v in merged.items():
            results[f"{name}_w_{k}"] = v.asnumpy()
        if not optshard:  # the same merge through the strategy file the step wrote
            merged = load_distributed_checkpoint(make(), [f"{out_dir}/{name}_rank{r}.ckpt" for r in range(N)],
                                                 train_strategy_filename=strategy)
            for k, v in merged.items():
                results[f"{name}_pb_{k}"] = v.asnumpy()
if not optshard:
    # Model.train (its graph-mode loop runs the step from C++): planned for the dataset's rows,
    # sliced before the step compiles once; the same batches as the "columns" case's steps.
    mode, make, (x, y), _ = cases(N)["columns"]
    mycel.reset_auto_parallel_context()
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, device_num=N)
    net = make()
    loss, opt = make_loss_opt(net)
    ds = NumpySlicesDataset((x[:STEPS * BATCH], y[:STEPS * BATCH]), column_names=["x", "y"],
                                          shuffle=False, num_shards=1, shard_id=0).batch(BATCH)
    compiles = _mycel.graph.compile_count()
    mycel.Model(net, loss, opt).train(1, ds, callbacks=[])
    results["model_compiles"] = np.array(_mycel.graph.compile_count() - compiles)
    results["model_sliced"] = np.array(sorted(parameter_layouts(net)))
    for k, v in whole_values(net.trainable_params()).items():
        results[f"model_w_{k}"] = v
if not optshard:
    # A TrainOneStepCell subclass with a construct of its own is not planned: its first step
    # runs with whole weights, which are sliced after it (a second compile).
    class OwnStep(nn.TrainOneStepCell):
        def construct(self, *inputs):
            loss, grads = self.value_and_grad(*inputs)
            grads = self.grad_reducer(grads)
            return ops.depend(loss, self.optimizer(grads))

    mode, make, (x, y), _ = cases(N)["columns"]
    mycel.reset_auto_parallel_context()
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, device_num=N)
    net = make()
    loss, opt = make_loss_opt(net)
    step = OwnStep(nn.WithLossCell(net, loss), opt)
    compiles = _mycel.graph.compile_count()
    for s in range(STEPS):
        step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH]))
    results["own_compiles"] = np.array(_mycel.graph.compile_count() - compiles)
    results["own_sliced"] = np.array(sorted(parameter_layouts(net)))
    for k, v in whole_values(net.trainable_params()).items():
        results[f"own_w_{k}"] = v
if R == 0:
    np.savez(f"{out_dir}/sliced{'_optshard' if optshard else ''}.npz", **results)
