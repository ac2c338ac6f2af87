"""Run under mpirun by test_parallel_auto.py: AUTO_PARALLEL's strategy files. The wide net trains
once with strategy_ckpt_save_file (the search's operator strategies go into the file), again
loading that file (the same plan), and again loading a file that holds only the last matmul's strategy, forced to data
parallelism (strategy_ckpt_config load_file): the search keeps it and places the rest. Rank 0
saves each run's strategies, losses and final weights to <out>/load.npz."""
import json
import sys

import numpy as np

import mycel
import mycel.communication as comm
from mycel import _mycel
from mycel import Tensor
from mycel.parallel import ParallelMode
from mycel.parallel.sliced import whole_values
from mycel.parallel.strategy_file import load_op_strategies, save_strategy_file
from mpi_workers.autopar_auto_common import TOPOLOGY, Wide, wide_data
from mpi_workers.autopar_common import BATCH, STEPS, make_step

out_dir = sys.argv[1]
comm.init()
R, N = comm.get_rank(), comm.get_group_size()
mycel.set_context(mode=mycel.GRAPH_MODE)
saved, forced = f"{out_dir}/saved_{R}.ckpt", f"{out_dir}/forced_{R}.ckpt"
x, y = wide_data()
results = {}


def train(name, **settings):
    mycel.reset_auto_parallel_context()
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.AUTO_PARALLEL, device_num=N, topology=TOPOLOGY,
                                    **settings)
    net = Wide()
    step = make_step(net)
    losses = [float(step(Tensor(x[s * BATCH:(s + 1) * BATCH]), Tensor(y[s * BATCH:(s + 1) * BATCH])).asnumpy())
              for s in range(STEPS)]
    results[f"{name}_strategies"] = np.array(json.dumps(_mycel.autopar.searched_strategies()))
    results[f"{name}_losses"] = np.array(losses)
    for k, v in whole_values(net.trainable_params()).items():
        results[f"{name}_w_{k}"] = v


train("searched", strategy_ckpt_save_file=saved)
results["file_strategies"] = np.array(json.dumps(load_op_strategies(saved)))
train("reloaded", strategy_ckpt_load_file=saved)
save_strategy_file(forced, {}, op_strategies=[("matmul-op1", ((N, 1), (1, 1)))])  # the rest: searched
train("forced", strategy_ckpt_config={"load_file": forced})
if R == 0:
    np.savez(f"{out_dir}/load.npz", **results)
