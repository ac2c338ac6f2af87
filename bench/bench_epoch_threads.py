"""Where each core's time goes during a LeNet5 Fashion-MNIST epoch (issue 19 item 2): the CPU
time of every thread of the process over sinks of --steps steps (Model.train, dataset_sink_mode,
graph mode, batch 64), split by role, with its voluntary context switches (sleeps) per step, and
the wall time per step beside the fixed-batch step's, alternating. Roles: "main" (the loop and
the OpenMP master), "pool" (the OpenMP workers), "pipeline" (threads the dataset pipeline
started). Run it once per policy:

    .venv/bin/python bench/bench_epoch_threads.py [--steps 300] [--rounds 3]
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/bench_epoch_threads.py
    MYCEL_DATA_ON_CONSUMER=0 ...   # the pipeline on its own threads (before the one-pool change)

Where the OpenMP threads' time goes inside (spinning in libgomp vs kernels), from perf:

    perf record -e cpu-clock:u -F 2000 -o /tmp/p.data -- .venv/bin/python bench/bench_epoch_threads.py
    perf script -i /tmp/p.data -F tid,ip,dso | awk '{print $1, $NF}' | sort | uniq -c | sort -rn

On a loaded machine the wall figures measure the scheduler; the CPU figures much less so.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))

import mycel  # noqa: E402
from mycel import Tensor, nn  # noqa: E402
from mycel.train import Model  # noqa: E402
from mycel.train.callback import Callback  # noqa: E402
from lenet5 import LeNet5  # noqa: E402
from worker_mycel import fashion_dataset  # noqa: E402

BATCH = 64
TICK = os.sysconf("SC_CLK_TCK")


def threads():
    """{tid: (cpu seconds, voluntary context switches)} of this process's threads."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/self/task/{tid}/status") as f:
                status = f.read()
        except OSError:  # the thread ended
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        vol = int(status.split("voluntary_ctxt_switches:")[1].split()[0])
        out[int(tid)] = ((int(fields[11]) + int(fields[12])) / TICK, vol)
    return out


class Sample(Callback):
    """At each sink's end: wall clock, process CPU and every thread's counters; then as many
    fixed-batch steps, timed apart (so load that comes and goes hits both alike)."""

    def __init__(self, step, steps):
        self.step, self.steps = step, steps
        rng = np.random.default_rng(0)
        self.x = Tensor(rng.standard_normal((BATCH, 1, 32, 32)).astype(np.float32))
        self.y = Tensor(np.zeros(BATCH, np.int32))
        self.marks, self.fixed = [], []

    def on_train_epoch_begin(self, run_context):
        self.begin = (time.perf_counter(), time.process_time(), threads())

    def on_train_epoch_end(self, run_context):
        run_context.original_args().net_outputs.asnumpy()
        self.marks.append((self.begin, (time.perf_counter(), time.process_time(), threads())))
        t = time.perf_counter()
        for _ in range(self.steps):
            out = self.step(self.x, self.y)
        out.asnumpy()
        self.fixed.append(time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300, help="steps per sink")
    ap.add_argument("--rounds", type=int, default=3, help="sinks measured (medians printed)")
    args = ap.parse_args()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    mycel.set_seed(0)
    net = LeNet5()
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                  nn.Momentum(net.trainable_params(), 0.01, 0.9))
    data = fashion_dataset(BATCH)
    model.train(1, data.take(20))  # compiles; starts the OpenMP pool
    cb = Sample(model.train_network, args.steps)
    for _ in range(5):
        cb.step(cb.x, cb.y)
    before = set(threads())  # main + the OpenMP pool
    model.train(args.rounds + 1, data, callbacks=[cb], dataset_sink_mode=True, sink_size=args.steps)
    main_tid = os.getpid()
    rows, wall, cpu = {}, [], []
    for (t0, c0, a), (t1, c1, b) in cb.marks[1:]:  # the first sink includes the pipeline's start
        n = args.steps * BATCH
        wall.append((t1 - t0) / args.steps)
        cpu.append((c1 - c0) / n * 1e6)
        per = {}
        for tid, (c, v) in b.items():
            c_a, v_a = a.get(tid, (0.0, 0))
            role = "main" if tid == main_tid else "pool" if tid in before else "pipeline"
            k = per.setdefault(role, [0.0, 0, 0])
            k[0] += (c - c_a) / n * 1e6
            k[1] += (v - v_a) / args.steps
            k[2] += 1
        for role, v in per.items():
            rows.setdefault(role, []).append(v)
    fixed = [f / args.steps for f in cb.fixed[1:]]
    med = statistics.median
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, GOMP_SPINCOUNT="
          f"{os.environ.get('GOMP_SPINCOUNT', '(unset)')}, MYCEL_DATA_ON_CONSUMER="
          f"{os.environ.get('MYCEL_DATA_ON_CONSUMER', '(unset)')}, threads "
          f"{mycel.get_context('num_threads')}, {args.rounds} sinks of {args.steps} steps, "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"wall: sink {med(wall) * 1e3:.3f} ms/step, fixed-batch step {med(fixed) * 1e3:.3f} ms/step, "
          f"epoch / step {med(fixed) / med(wall) * 100:.0f}%")
    print(f"cpu: {med(cpu):.1f} core-us/img in all")
    for role in ("main", "pool", "pipeline"):
        if role in rows:
            r = rows[role]
            print(f"  {role:8s} {med(x[0] for x in r):6.1f} core-us/img  "
                  f"{med(x[1] for x in r):6.1f} sleeps/step  ({r[0][2]} threads)")


if __name__ == "__main__":
    main()
