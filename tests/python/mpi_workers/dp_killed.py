"""Run under mpirun by test_parallel_faults.py: data-parallel Model.train of dp_common's MLP with
a checkpoint every 10 steps (rank 0 writes), and rank 1 killed (kill -9) in step 25. The job must
end with an error, leaving the step-10 and step-20 checkpoints complete and loadable."""
import os
import signal
import sys

import mycel
import mycel.communication as comm
import mycel.dataset as ds
from mycel.parallel import ParallelMode
from mycel.train.callback import Callback, CheckpointConfig, ModelCheckpoint
from mpi_workers.dp_common import BATCH, data, make_net, make_step

out_dir = sys.argv[1]
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
comm.set_comm_timeout(5)
mycel.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True, device_num=N)
mycel.set_context(mode=mycel.GRAPH_MODE)


class KillAt(Callback):
    def __init__(self, step):
        self.step = step

    def on_train_step_begin(self, run_context):
        if run_context.original_args().cur_step_num == self.step:
            os.kill(os.getpid(), signal.SIGKILL)


net = make_net()
_, loss, opt = make_step(net)
x, y = data()
dataset = ds.NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=False).batch(BATCH // N)
ckpt = ModelCheckpoint(prefix="mlp", directory=os.path.join(out_dir, f"ckpt_rank{R}"),
                       config=CheckpointConfig(save_checkpoint_steps=10, keep_checkpoint_max=10))
callbacks = [ckpt] + ([KillAt(25)] if R == 1 else [])
mycel.Model(net, loss, opt).train(1, dataset, callbacks=callbacks)
print(f"rank {R} finished training", flush=True)
