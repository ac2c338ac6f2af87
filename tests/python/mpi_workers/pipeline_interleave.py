"""Run under mpirun (2 ranks) by test_parallel_pipeline.py: interleaved 1F1B. pipeline_common's
four Dense layers as 4 virtual stages on 2 ranks (layer i: pipeline_stage i % 2, pipeline_segment
i // 2, so rank 0 holds layers 0 and 2, rank 1 layers 1 and 3), 4 micro-batches, Momentum, graph
mode. Rank r saves the losses, its layers' final weights, its peaks of chunks held, and its bytes
of weights and momentum to <out>/inter_rank<r>.npz."""
import sys

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Tensor, nn
from mycel.parallel import ParallelMode
from mpi_workers.pipeline_common import BATCH, MICRO, STEPS, data, make_net

out_dir = sys.argv[1]
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
mycel.set_context(mode=mycel.GRAPH_MODE)
mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, device_num=N, pipeline_stages=N,
                                pipeline_config={"pipeline_scheduler": "1f1b", "pipeline_interleave": True})
net = make_net()
for i, cell in enumerate(net.cell_list):
    cell.pipeline_stage, cell.pipeline_segment = i % N, i // N
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
pipe = nn.PipelineCell(nn.WithLossCell(net, loss), MICRO)
opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
step = nn.TrainOneStepCell(pipe, opt)
held_bytes = sum(p.asnumpy().nbytes for p in list(net.get_parameters()) + list(opt.moments))
x, y = data()
losses, peaks = [], []
for s in range(STEPS):
    losses.append(float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy()))
    peaks.append(pipe.peak_held)
mine = {p.name: p.asnumpy() for i, c in enumerate(net.cell_list) if i % N == R for p in c.trainable_params()}
np.savez(f"{out_dir}/inter_rank{R}.npz", losses=np.array(losses), peaks=np.array(peaks), held_bytes=held_bytes,
         **mine)
