"""Run under mpirun by test_parallel_predict_strategy.py: a semi-auto MLP trains 2 steps with its
weights stored as slices ("columns": w1 by columns, w2 by rows), each rank saves its checkpoint;
then a predict network with another strategy ("reduction": w1 by rows, w2 whole) gets its
layouts from Model.infer_predict_layout and loads the checkpoints with predict_strategy, each
rank holding its predict slices; it predicts on a batch. Rank 0 writes every rank's slices,
the predict layouts and the output to <out>/predict.npz."""
import sys

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Model, Tensor, nn, ops
from mycel.dataset import NumpySlicesDataset
from mycel.parallel import ParallelMode, load_distributed_checkpoint
from mycel.parallel.sliced import parameter_layouts
from mpi_workers.autopar_common import BATCH, MLP, data
from mpi_workers.autopar_sliced_common import make_step

out_dir = sys.argv[1]
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
mycel.set_context(mode=mycel.GRAPH_MODE)
mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, device_num=N)
x, y = data("mlp")
train_net = MLP(((1, 1), (1, N)), ((1, N), (N, 1)))
step = make_step(train_net)
for s in range(2):
    step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH]))
train_layouts = parameter_layouts(train_net)
files = [f"{out_dir}/train_rank{r}.ckpt" for r in range(N)]
mycel.save_checkpoint(train_net, files[R])
ops.Barrier()()

net = MLP(((1, N), (N, 1)))
model = Model(net)
xp = Tensor(x[4 * BATCH:5 * BATCH])
predict_strategy = model.infer_predict_layout(xp)
# The per-step shapes of a sinking dataset (the batch), as the training step would see them.
ds = NumpySlicesDataset((x[:4 * BATCH], y[:4 * BATCH]), shuffle=False).batch(BATCH)
tnet = MLP(((1, 1), (1, N)), ((1, N), (N, 1)))
train_model = Model(tnet, nn.SoftmaxCrossEntropyWithLogits(sparse=True), nn.Momentum(tnet.trainable_params(), 0.1, 0.9))
sink_layout = train_model.infer_train_layout(ds, dataset_sink_mode=True, sink_size=2)
step_layout = train_model.infer_train_layout(ds, dataset_sink_mode=False)
load_distributed_checkpoint(net, files, predict_strategy, train_strategy_filename=train_layouts)
held = {p.name: p.asnumpy() for p in net.get_parameters()}
out = model.predict(xp).asnumpy()
gathered = {k: ops.AllGather()(Tensor(v.reshape(1, -1))).asnumpy() for k, v in held.items()}
if R == 0:
    np.savez(f"{out_dir}/predict.npz", out=out, x=x[4 * BATCH:5 * BATCH],
             **{f"held_{k}": v for k, v in gathered.items()},
             **{f"shape_{k}": np.array(v.shape) for k, v in held.items()},
             **{f"layout_{k}": np.array(getattr(p, "layout", ((), (), ()))[1]) for k, p in
                ((p.name, p) for p in net.get_parameters())},
             predict_w1=np.array(predict_strategy["w1"][2]), predict_names=np.array(sorted(predict_strategy)),
             train_names=np.array(sorted(train_layouts)), sink_names=np.array(sorted(sink_layout)),
             sink_w1=np.array(sink_layout["w1"][2]), step_w1=np.array(step_layout["w1"][2]))
