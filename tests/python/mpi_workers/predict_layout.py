"""Run under mpirun by compat/test_compat_predict_layout.py: Model.infer_predict_layout and
infer_train_layout of a semi-auto MLP whose matmuls split the weights by columns, on every rank;
rank 0 writes the layouts and the shapes of its weights after predict to <out>/layout.json."""
import json
import sys

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Model, Tensor, nn
from mycel.dataset import NumpySlicesDataset
from mycel.parallel import ParallelMode
from mpi_workers.autopar_common import BATCH, MLP, data

out_dir = sys.argv[1]
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
mycel.set_context(mode=mycel.GRAPH_MODE)
mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, device_num=N)
x, y = data("mlp")
net = MLP(((1, 1), (1, N)), ((1, N), (N, 1)))
model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
              nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9))
predict = model.infer_predict_layout(Tensor(x[:BATCH]))
ds = NumpySlicesDataset((x[:4 * BATCH], y[:4 * BATCH]), shuffle=False).batch(BATCH)
train = model.infer_train_layout(ds)
out = model.predict(Tensor(x[:BATCH])).asnumpy()
if R == 0:
    with open(f"{out_dir}/layout.json", "w") as f:
        json.dump({"predict": predict, "train": train, "out_shape": list(out.shape),
                   "weights": {p.name: list(p.shape) for p in net.get_parameters()}}, f)
