"""Run under mpirun by test_parallel_pipeline.py: an MLP of four Dense layers cut into one stage
per rank (nn.PipelineCell, 4 micro-batches, SEMI_AUTO_PARALLEL with pipeline_stages = ranks),
trained with Momentum in graph mode on the whole global batch. Rank r saves its stage's final
weights; the last rank also the losses, to <out>/pipe_rank<r>.npz."""
import sys

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Tensor, nn
from mycel.parallel import ParallelMode
from mpi_workers.pipeline_common import MICRO, STEPS, BATCH, data, make_net, stage_of

out_dir = sys.argv[1]
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
mycel.set_context(mode=mycel.GRAPH_MODE)
mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, device_num=N, pipeline_stages=N)
net = make_net()
for i, cell in enumerate(net.cell_list):
    cell.pipeline_stage = stage_of(i, N)
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
pipe = nn.PipelineCell(nn.WithLossCell(net, loss), MICRO)
step = nn.TrainOneStepCell(pipe, nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9))
x, y = data()
losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
          for s in range(STEPS)]
mine = {p.name: p.asnumpy() for i, c in enumerate(net.cell_list) if stage_of(i, N) == R for p in c.trainable_params()}
np.savez(f"{out_dir}/pipe_rank{R}.npz", losses=np.array(losses), **mine)
