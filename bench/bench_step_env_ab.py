"""A harness workload's training step with an environment switch off and on (A: VAR=0, B: VAR=1
or the value given), both steps compiled and prepared in one process and alternated step by step
under mycel.Profiler, so that both see the same load: per launch (by position in the step), the
minimum and median over the steps for A and B, and per step the sum of all launches (minimum,
p10, median). The switch must be read when a launch is first prepared or compiled (e.g.
MYCEL_MATMUL_SPLIT_N, MYCEL_FUSE_MATMUL_UPDATE); each step keeps what it prepared.

    env -u OMP_WAIT_POLICY .venv/bin/python bench/bench_step_env_ab.py mlp \\
        --env MYCEL_MATMUL_SPLIT_N [--threads 2] [--steps 300] [--amp O2]

Steps with different launch sequences (a switch that changes the program) are compared by the
sums of their launch minima per op.
"""
import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness"))
import worker_mycel as W  # noqa: E402

import mycel  # noqa: E402
from mycel import Tensor  # noqa: E402


def profiled(run, steps):
    with tempfile.TemporaryDirectory() as d:
        prof = mycel.Profiler(output_path=d)
        for _ in range(steps):
            run()
        prof.analyse()
        return prof.events()  # (op, start_ns, end_ns, bytes, ...), in order


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=["lenet5", "mlp", "resnet18", "transformer"])
    ap.add_argument("--env", required=True,
                    help="the switch, set to 0 for A (several: comma-separated, all set alike)")
    ap.add_argument("--on", default="1", help="its value for B")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--amp", default="O0", choices=["O0", "O1", "O2", "O3"],
                    help="amp level of both steps (O2: the harness's bf16 rows)")
    args = ap.parse_args()
    mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=args.threads)
    with tempfile.TemporaryDirectory() as d:
        with contextlib.redirect_stdout(io.StringIO()):
            W.init(args.workload, os.path.join(d, "init.npz"))
        x, y, params = W.load(os.path.join(d, "init.npz"))
    xt, yt = Tensor(x), Tensor(y.astype(np.int32))
    steps = {}
    for name, flag in (("A", "0"), ("B", args.on)):
        for var in args.env.split(","):
            os.environ[var] = flag  # read while the step compiles and prepares its launches
        steps[name] = W.train_step(W.make_net(args.workload), params, args.amp)
        for _ in range(3):
            steps[name](xt, yt).asnumpy()
    for var in args.env.split(","):
        os.environ.pop(var)
    for _ in range(20):
        for s in steps.values():
            s(xt, yt).asnumpy()
    count = {k: len(profiled(lambda s=s: s(xt, yt).asnumpy(), 1)) for k, s in steps.items()}
    events = profiled(lambda: [s(xt, yt).asnumpy() for s in steps.values()], args.steps)
    assert len(events) == args.steps * sum(count.values()), (len(events), count)
    per = {k: [[] for _ in range(count[k])] for k in steps}
    total = {k: [] for k in steps}
    names = {}
    pos = 0
    for _ in range(args.steps):
        for k in steps:
            ev = events[pos:pos + count[k]]
            pos += count[k]
            names[k] = [e[0][:60] for e in ev]
            for i, e in enumerate(ev):
                per[k][i].append((e[2] - e[1]) / 1e3)
            total[k].append(sum((e[2] - e[1]) / 1e3 for e in ev))
    print(f"{args.workload} {args.amp}, {args.threads} threads, {args.env}: A=0, B={args.on}; "
          f"load {os.getloadavg()[0]:.2f}")
    if count["A"] == count["B"]:
        print("   #  A min  B min  A median  B median  op")
        for i in range(count["A"]):
            a, b = per["A"][i], per["B"][i]
            print(f"{i:4d} {min(a):6.1f} {min(b):6.1f} {statistics.median(a):9.1f} "
                  f"{statistics.median(b):9.1f}  {names['A'][i]}")
    else:  # the switch changed the launches: per op name, the sums of their minima and medians
        print("  A min sum  B min sum  A med sum  B med sum  count A/B  op")
        for n in sorted(set(names["A"]) | set(names["B"])):
            row = []
            for k in ("A", "B"):
                idx = [i for i, m in enumerate(names[k]) if m == n]
                row.append((sum(min(per[k][i]) for i in idx),
                            sum(statistics.median(per[k][i]) for i in idx), len(idx)))
            (am, ad, ac), (bm, bd, bc) = row
            print(f"  {am:9.1f}  {bm:9.1f}  {ad:9.1f}  {bd:9.1f}  {ac:4d}/{bc:<4d}  {n}")
    for k in steps:
        v = sorted(total[k])
        mins = sum(min(t) for t in per[k])
        print(f"{k} ({count[k]} launches): sum of launch minima {mins:.0f} us; per-step sum "
              f"min {v[0]:.0f} p10 {v[len(v) // 10]:.0f} median {v[len(v) // 2]:.0f} us")


if __name__ == "__main__":
    main()
