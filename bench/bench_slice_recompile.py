"""What slice_parameters costs (on by default under SEMI_AUTO/AUTO_PARALLEL): before the first
compile the sharding pass plans the network's forward without building it, the weights it splits
are stored as slices, and the step compiles once, against the slices. Run under mpirun:

    scripts/mpirun -n 2 .venv/bin/python bench/bench_slice_recompile.py [layers] [width]

A Megatron-style MLP of `layers` MatMuls alternately split by columns and by rows over the ranks
(semi-auto, graph mode, Momentum). Prints, for slice_parameters False and True, the wall time of
the plan (True only: TrainOneStepCell.plan_slices, called explicitly so it is timed apart), of
each of the first steps (step 1 includes the compile), the steady step time (median of the last
ones) and how many graphs were compiled during the run (1: no recompile)."""
import sys
import time

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Parameter, Tensor, _mycel, nn, ops
from mycel.parallel import ParallelMode

LAYERS = int(sys.argv[1]) if len(sys.argv) > 1 else 12
WIDTH = int(sys.argv[2]) if len(sys.argv) > 2 else 256
BATCH, STEPS = 32, 12


class Layer(nn.Cell):
    def __init__(self, rng, i, strategy):
        super().__init__()
        self.w = Parameter(Tensor((rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)),
                           name=f"w{i}")
        self.mm = ops.MatMul().shard(strategy)
        self.relu = ops.ReLU()

    def construct(self, h):
        return self.relu(self.mm(h, self.w))


class Megatron(nn.Cell):
    def __init__(self, n):
        super().__init__()
        rng = np.random.RandomState(0)
        cols, rows = ((1, 1), (1, n)), ((1, n), (n, 1))
        self.layers = nn.SequentialCell([Layer(rng, i, cols if i % 2 == 0 else rows) for i in range(LAYERS)])

    def construct(self, x):
        return self.layers(x)


def run(sliced, n):
    mycel.reset_auto_parallel_context()
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, device_num=n,
                                    slice_parameters=sliced)
    net = Megatron(n)
    loss = nn.MSELoss()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.Momentum(net.trainable_params(), 0.01, 0.9))
    rng = np.random.RandomState(1)
    x = Tensor(rng.standard_normal((BATCH, WIDTH)).astype(np.float32))
    y = Tensor(rng.standard_normal((BATCH, WIDTH)).astype(np.float32))
    times = []
    compiles = _mycel.graph.compile_count()
    ops.Barrier()()
    t = time.perf_counter()
    step.plan_slices(x, y)  # a no-op without slice_parameters
    plan = time.perf_counter() - t
    for _ in range(STEPS):
        ops.Barrier()()
        t = time.perf_counter()
        step(x, y).asnumpy()
        times.append(time.perf_counter() - t)
    return plan, times, _mycel.graph.compile_count() - compiles


def main():
    comm.init()
    n = comm.get_group_size()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    rows = [(s, run(s, n)) for s in (False, True, False, True)]  # the second pair with warm caches
    if comm.get_rank() == 0:
        print(f"{n} ranks, {LAYERS} MatMuls {WIDTH}x{WIDTH}, batch {BATCH}")
        for s, (plan, t, compiles) in rows:
            print(f"slice_parameters={s!s:5}  plan {plan * 1e3:6.1f} ms  step1 {t[0] * 1e3:8.1f} ms  "
                  f"step2 {t[1] * 1e3:7.1f} ms  step3 {t[2] * 1e3:7.1f} ms  steady {np.median(t[4:]) * 1e3:7.2f} ms  "
                  f"compiles {compiles}")


main()
