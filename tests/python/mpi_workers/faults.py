"""Run under mpirun by test_parallel_faults.py: after one good allreduce, rank 1 dies (kill -9),
hangs (sleeps), or raises an exception nobody catches, while the other ranks enter the next
allreduce; or rank 1 hangs while rank 0 creates a group with it, or while rank 0 has started a
split allreduce (split_<progress mode>); or the ranks start split allreduces of different shapes. The job must end, naming the rank, within the collective timeout."""
import os
import signal
import sys
import time

import numpy as np

import mycel.communication as comm
from mycel import Tensor, ops

comm.init()
R = comm.get_rank()
x = Tensor(np.ones(4, np.float32))
ops.AllReduce()(x)  # under the default timeout: slow starts on a loaded machine are not faults
if sys.argv[2] != "env":  # "env": MYCEL_COMM_TIMEOUT gave the timeout to init()
    comm.set_comm_timeout(float(sys.argv[2]))
if sys.argv[1] == "group":  # rank 1 never joins the group rank 0 creates
    if R == 1:
        time.sleep(600)
    comm.create_group("pair", [0, 1])
if sys.argv[1] in ("split_thread", "split_kernel", "split_wait"):  # rank 1 hangs; rank 0 started a split allreduce and is
    # busy elsewhere: whoever advances it (sys.argv[1][6:]: thread, kernel, wait) names rank 1
    if R == 1:
        time.sleep(600)
    from mycel import _mycel
    _mycel.comm.set_progress_mode(sys.argv[1][6:])
    buf = ops.AllReduceStart()(x)
    if sys.argv[1] == "split_thread":
        time.sleep(60)  # the communication thread notices the deadline meanwhile
    ops.AllReduceWait()(buf)
    print(f"rank {R} passed the second allreduce", flush=True)
if sys.argv[1] == "split_mismatch":  # ranks start different shapes: ValueError at the wait
    buf = ops.AllReduceStart()(Tensor(np.ones(4 + R, np.float32)))
    try:
        ops.AllReduceWait()(buf)
    except ValueError as e:
        print(f"rank {R} ValueError: {e}", flush=True)
    ops.AllReduce()(x)  # the communicator stays usable
    print(f"rank {R} usable after the mismatch", flush=True)
    sys.exit(0)
if R == 1:
    if sys.argv[1] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif sys.argv[1] == "hang":
        time.sleep(600)
    else:
        raise KeyError("rank 1 failed on purpose")
ops.AllReduce()(x)
print(f"rank {R} passed the second allreduce", flush=True)
