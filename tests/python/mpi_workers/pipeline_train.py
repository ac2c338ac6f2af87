"""Run under mpirun by test_parallel_pipeline.py: an MLP of four Dense layers cut into
`stages` pipeline stages (default: one per rank; with fewer stages than ranks each stage runs on
ranks / stages data-parallel ranks), nn.PipelineCell with `micro` micro-batches and the
`scheduler` ("gpipe" or "1f1b"), SEMI_AUTO_PARALLEL, trained with Momentum in graph mode on the
whole global batch. Rank r saves its stage's final weights, its losses, the bytes of weights and
optimizer state it holds and (host-driven steps) the most micro-batches its stage held at once,
to <out>/pipe_rank<r>.npz, and its checkpoint to <out>/pipe_rank<r>.ckpt.

usage: pipeline_train.py OUT [scheduler] [micro] [stages] [optshard|recompute]   (optshard: with
enable_parallel_optimizer, sharding Momentum over each stage's data-parallel ranks; recompute:
pipeline_config stage_recompute=True, 1F1B recomputing each stage's forward)"""
import sys

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Tensor, nn
from mycel.parallel import ParallelMode
from mpi_workers.pipeline_common import MICRO, STEPS, BATCH, data, make_net, stage_of

out_dir = sys.argv[1]
scheduler = sys.argv[2] if len(sys.argv) > 2 else "gpipe"
micro = int(sys.argv[3]) if len(sys.argv) > 3 else MICRO
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
stages = int(sys.argv[4]) if len(sys.argv) > 4 else N
optshard = len(sys.argv) > 5 and sys.argv[5] == "optshard"
recompute = len(sys.argv) > 5 and sys.argv[5] == "recompute"
mycel.set_context(mode=mycel.GRAPH_MODE)
mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, device_num=N, pipeline_stages=stages,
                                pipeline_config={"pipeline_scheduler": scheduler, "stage_recompute": recompute},
                                enable_parallel_optimizer=optshard)
net = make_net()
for i, cell in enumerate(net.cell_list):
    cell.pipeline_stage = stage_of(i, stages)
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
pipe = nn.PipelineCell(nn.WithLossCell(net, loss), micro)
opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
step = nn.TrainOneStepCell(pipe, opt)
held_bytes = sum(p.asnumpy().nbytes for p in list(net.get_parameters()) + list(opt.moments))
x, y = data()
losses, peaks, peak_bytes = [], [], []
for s in range(STEPS):
    losses.append(float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy()))
    peaks.append(-1 if pipe.peak_held is None else pipe.peak_held)
    peak_bytes.append(-1 if pipe.peak_held is None else pipe._runner.peak_held_bytes)
stage = R // (N // stages)
mine = {p.name: p.asnumpy() for i, c in enumerate(net.cell_list) if stage_of(i, stages) == stage
        for p in c.trainable_params()}
mycel.save_checkpoint(net, f"{out_dir}/pipe_rank{R}.ckpt")  # its stage's weights, the others empty
np.savez(f"{out_dir}/pipe_rank{R}.npz", losses=np.array(losses), peaks=np.array(peaks), held_bytes=held_bytes,
         peak_bytes=np.array(peak_bytes),
         **mine)
