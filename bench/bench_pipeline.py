"""Pipeline schedules compared: GPipe (one compiled step) against 1F1B (host-driven), whose stage
either keeps each micro-batch's residuals (the gradient split at its sensitivity, the default) or
its input only, the backward recomputing the forward (stage_recompute=True). Run under mpirun,
one stage per rank (interleaved: two chunks per rank, 2 x ranks virtual stages):

    scripts/mpirun -n 2 .venv/bin/python bench/bench_pipeline.py [layers] [width] [micro]

An MLP of `layers` Dense+ReLU layers (width x width) split into equal stages, batch 64 cut into
`micro` micro-batches, Momentum, graph mode. Prints per schedule the median step time (after two
warm-up steps), the most micro-batches stage 0 held between their forward and backward and the
bytes they took (1F1B: measured, residuals or inputs; GPipe: all of them, with every layer's
activations inside the compiled step, bytes not measured)."""
import sys
import time

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Tensor, nn, ops
from mycel.parallel import ParallelMode

LAYERS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
WIDTH = int(sys.argv[2]) if len(sys.argv) > 2 else 512
MICRO = int(sys.argv[3]) if len(sys.argv) > 3 else 8
BATCH, STEPS = 64, 8


def run(scheduler, n):
    recompute, interleave = scheduler == "1f1b-recompute", scheduler == "1f1b-interleave"
    mycel.reset_auto_parallel_context()
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.SEMI_AUTO_PARALLEL, device_num=n, pipeline_stages=n,
                                    pipeline_config={"pipeline_scheduler": scheduler.split("-")[0],
                                                     "stage_recompute": recompute, "pipeline_interleave": interleave})
    mycel.set_seed(0)
    net = nn.SequentialCell([nn.SequentialCell([nn.Dense(WIDTH, WIDTH), nn.ReLU()]) for _ in range(LAYERS)])
    for i, cell in enumerate(net.cell_list):
        if interleave:  # 2 chunks per rank: virtual stage i * 2n // LAYERS
            virtual = i * 2 * n // LAYERS
            cell.pipeline_stage, cell.pipeline_segment = virtual % n, virtual // n
        else:
            cell.pipeline_stage = i * n // LAYERS
    pipe = nn.PipelineCell(nn.WithLossCell(net, nn.MSELoss()), MICRO)
    step = nn.TrainOneStepCell(pipe, nn.Momentum(net.trainable_params(), 0.01, 0.9))
    rng = np.random.RandomState(1)
    x = Tensor(rng.standard_normal((BATCH, WIDTH)).astype(np.float32))
    y = Tensor(rng.standard_normal((BATCH, WIDTH)).astype(np.float32))
    times = []
    for _ in range(STEPS):
        ops.Barrier()()
        t = time.perf_counter()
        step(x, y).asnumpy()
        times.append(time.perf_counter() - t)
    held = pipe.peak_held if pipe.peak_held is not None else MICRO
    nbytes = pipe._runner.peak_held_bytes if pipe.peak_held is not None else None
    return np.median(times[2:]), held, nbytes


def main():
    comm.init()
    n = comm.get_group_size()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    kinds = ("gpipe", "1f1b", "1f1b-recompute", "1f1b-interleave")
    rows = [(s, run(s, n)) for s in kinds + kinds]  # the second round with warm caches
    if comm.get_rank() == 0:
        print(f"{n} stages, {LAYERS} Dense {WIDTH}x{WIDTH}, batch {BATCH} in {MICRO} micro-batches")
        for s, (t, held, nbytes) in rows:
            kept = "" if nbytes is None else f" ({nbytes / 1024:.0f} KiB)"
            print(f"{s:15} step {t * 1e3:8.2f} ms   stage 0 held {held} micro-batches{kept}")


main()
