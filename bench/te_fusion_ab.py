"""TE fusion against the interpreter at steady state, in one process: a graph-mode training step of
bench_train.py's LeNet5 / MLP / transformer compiled twice (MYCEL_TE_FUSION=0 and =1, the TE
kernels from MYCEL_TE_CACHE), then blocks of steps alternating between the two so that load
changes hit both alike. Prints the median step times (wall and this process's CPU time) and the
medians of the paired ratios TE / interpreter. Not a test.

    MYCEL_TE_CACHE=<warm> OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/te_fusion_ab.py lenet5 20 10 [async]

A fourth argument `async` compiles the TE step under the default setting (chains and chains into
reductions, their kernels built in the background, waited for before timing) instead of `1`.
"""

import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import WORKLOADS, mycel_step  # noqa: E402

import mycel  # noqa: E402
from mycel._mycel import te as _te  # noqa: E402


def main():
    name, rounds, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])  # blocks, steps per block
    te_mode = sys.argv[4] if len(sys.argv) > 4 else "1"
    make, _, shape, batch, _ = WORKLOADS[name]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch,) + shape).astype(np.float32)
    y = rng.integers(0, 10, batch)
    steps = {}
    for mode in ("0", "1"):  # the setting is read when a step compiles
        os.environ["MYCEL_TE_FUSION"] = te_mode if mode == "1" else mode
        mycel.set_seed(1)
        init = [p.asnumpy() for p in make().trainable_params()]
        steps[mode] = mycel_step(make, init, x, y, mycel.GRAPH_MODE)
        steps[mode]()
        os.environ.pop("MYCEL_TE_FUSION")
    _te.wait_background_builds()  # (async) every chain on its kernel before timing
    for s in steps.values():
        for _ in range(3):
            s()
    wall = {m: [] for m in steps}
    cpu = {m: [] for m in steps}
    for r in range(rounds):
        for m in (("0", "1") if r % 2 else ("1", "0")):
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(per):
                steps[m]()
            wall[m].append((time.perf_counter() - t0) / per * 1e3)
            cpu[m].append((time.process_time() - c0) / per * 1e3)
    rw = statistics.median(a / b for a, b in zip(wall["1"], wall["0"]))
    rc = statistics.median(a / b for a, b in zip(cpu["1"], cpu["0"]))
    med = statistics.median
    print(f"{name}: step ms wall interp {med(wall['0']):.2f} TE {med(wall['1']):.2f}  "
          f"cpu interp {med(cpu['0']):.2f} TE {med(cpu['1']):.2f}  "
          f"median ratio TE/interp wall {rw:.3f} cpu {rc:.3f}")


if __name__ == "__main__":
    main()
