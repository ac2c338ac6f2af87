"""The cost model's predicted step time against a measured one: an MLP trained data parallel
(graph mode, TrainOneStepCell) on the ranks of this mpirun job. The prediction prices the same
compiled network with `search_cell(..., search_mode="data_parallel")` on a topology calibrated on
this machine: flops_per_second measured by a matmul, α and β fitted from timed AllReduces. Prints
measured / predicted. Run:

    scripts/mpirun -n 2 .venv/bin/python bench/bench_cost_model_vs_measured.py
    scripts/mpirun -n 4 .venv/bin/python bench/bench_cost_model_vs_measured.py

Then the same network is trained under AUTO_PARALLEL (every rank fed the global batch, the
search's strategies applied by the parallel pass) and its measured step is compared with the
search's own prediction (mycel.parallel.search.last_search()). Only rank 0 prints."""
import statistics
import time

import numpy as np

import mycel
import mycel.communication as comm
from mycel import Tensor, nn, ops
from mycel.parallel import ParallelMode
from mycel.parallel.search import last_search, measure_flops, search_cell


class Mlp(nn.Cell):
    def __init__(self, d_in=512, hidden=2048, d_out=512):
        super().__init__()
        self.fc1 = nn.Dense(d_in, hidden)
        self.fc2 = nn.Dense(hidden, hidden)
        self.fc3 = nn.Dense(hidden, d_out)

    def construct(self, x):
        return self.fc3(ops.relu(self.fc2(ops.relu(self.fc1(x)))))


def fit_alpha_beta(size):
    """α (s) and β (s/byte) of this job's AllReduce, fitted on 4 KB .. 4 MB float32 messages."""
    op, xs, ts = ops.AllReduce(), [], []
    for n in (1 << 10, 1 << 14, 1 << 17, 1 << 20):
        x = Tensor(np.ones(n, np.float32))
        op(x)
        times = []
        for _ in range(7):
            ops.Barrier()()
            t0 = time.perf_counter()
            op(x)
            times.append(time.perf_counter() - t0)
        # a ring AllReduce moves 2 (p - 1) / p of the bytes in 2 (p - 1) messages
        xs.append(2 * (size - 1) / size * 4 * n)
        ts.append(statistics.median(times))
    beta, a = np.polyfit(xs, ts, 1)
    return max(a / (2 * (size - 1)), 1e-7), max(beta, 1e-12)


def time_steps(step, x, y):
    """Median seconds of 15 steps after 3 warm-up steps (the first compiles)."""
    for _ in range(3):
        step(x, y)
    times = []
    for _ in range(15):
        ops.Barrier()()
        t0 = time.perf_counter()
        step(x, y).asnumpy()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    comm.init()
    rank, size = comm.get_rank(), comm.get_group_size()
    mycel.set_seed(1)
    batch = 64 * size
    net = nn.WithLossCell(Mlp(), nn.MSELoss())
    x = Tensor(np.random.default_rng(rank).standard_normal((batch // size, 512)).astype(np.float32))
    y = Tensor(np.zeros((batch // size, 512), np.float32))
    # Predict for the global batch on `size` devices.
    flops = measure_flops(512)
    alpha, beta = fit_alpha_beta(size)
    topo = {"devices_per_node": size, "flops_per_second": flops, "memory_per_device_gib": 0,
            "intra_node": {"latency_us": alpha * 1e6, "bandwidth_gbps": 1 / beta / 1e9}}
    xg = Tensor(np.zeros((batch, 512), np.float32))
    yg = Tensor(np.zeros((batch, 512), np.float32))
    pred = search_cell(net, xg, yg, device_num=size, topology=topo, search_mode="data_parallel",
                       optimizer_slots=1)
    # Measure.
    mycel.set_context(mode=mycel.GRAPH_MODE)
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True,
                                    device_num=size)
    measured = time_steps(nn.TrainOneStepCell(net, nn.Momentum(net.trainable_params(), 0.01, 0.9)), x, y)
    # AUTO_PARALLEL: the search's choice on the same cluster, every rank fed the global batch.
    mycel.set_auto_parallel_context(parallel_mode=ParallelMode.AUTO_PARALLEL, topology=topo)
    auto_net = nn.WithLossCell(Mlp(), nn.MSELoss())
    auto_step = nn.TrainOneStepCell(auto_net, nn.Momentum(auto_net.trainable_params(), 0.01, 0.9))
    auto_measured = time_steps(auto_step, xg, yg)
    auto_pred = last_search()
    if rank == 0:
        print(f"{size} ranks, MLP 512-2048-2048-512, global batch {batch}: measured {flops / 1e9:.1f} GFLOP/s, "
              f"allreduce alpha {alpha * 1e6:.1f} us, {1 / beta / 1e9:.2f} GB/s")
        print(f"predicted step {pred.step_time * 1e3:.2f} ms (compute "
              f"{sum(o['compute_s'] for o in pred.ops) * 1e3:.2f} ms, comm "
              f"{sum(o['comm_s'] + o['redistribution_s'] for o in pred.ops) * 1e3:.2f} ms), measured "
              f"{measured * 1e3:.2f} ms: measured / predicted = {measured / pred.step_time:.2f}")
        matmuls = [o["strategy"] for o in auto_pred.ops if o["kind"] in ("matmul", "dense")]
        print(f"auto_parallel (matmuls {matmuls}): predicted step {auto_pred.step_time * 1e3:.2f} ms, measured "
              f"{auto_measured * 1e3:.2f} ms: measured / predicted = {auto_measured / auto_pred.step_time:.2f}")


if __name__ == "__main__":
    main()
