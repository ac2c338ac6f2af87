"""Run under mpirun (4 ranks) by test_parallel_pipeline.py: tensor parallel inside pipeline
stages. pipeline_common's make_tp_net (MatMuls with shard strategies) on 2 stages x 2 ranks:
each stage's two ranks run its programs split by the sharding pass over them. Rank r saves its
stage's final weights, the losses, and the (op, strategy) pairs its stage's last pass applied
to <out>/tp_rank<r>.npz.

usage: pipeline_tp.py OUT scheduler   ("gpipe" or "1f1b")"""
import json
import sys

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Tensor, _mycel, nn
from mycel.parallel import ParallelMode
from mpi_workers.pipeline_common import BATCH, MICRO, STEPS, data, make_tp_net

out_dir, scheduler = sys.argv[1], sys.argv[2]
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
STAGES = 2
mycel.set_context(mode=mycel.GRAPH_MODE)
mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, device_num=N, pipeline_stages=STAGES,
                                pipeline_config={"pipeline_scheduler": scheduler})
net = make_tp_net(N // STAGES)
for i, cell in enumerate(net.cell_list):
    cell.pipeline_stage = i * STAGES // 4
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
pipe = nn.PipelineCell(nn.WithLossCell(net, loss), MICRO)
assert pipe.tp, "the stages should be tensor parallel"
step = nn.TrainOneStepCell(pipe, nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9))
x, y = data()
losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
          for s in range(STEPS)]
stage = R // (N // STAGES)
mine = {p.name: p.asnumpy() for i, c in enumerate(net.cell_list) if i * STAGES // 4 == stage
        for p in c.trainable_params()}
np.savez(f"{out_dir}/tp_rank{R}.npz", losses=np.array(losses),
         applied=np.array(json.dumps(_mycel.autopar.last_applied())), **mine)
