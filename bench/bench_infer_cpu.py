"""CPU time per batch-1 inference call, Mycel against PyTorch, each in its own process, alternating
(A B A B): a loaded machine stretches wall times by whatever else runs, CPU time much less. Both
run one thread with passive waits (OMP_WAIT_POLICY=PASSIVE), the harness's nets, weights and
batch-norm statistics (bench/harness INFER rows); PyTorch in eval() under no_grad. Extra
environment settings for Mycel's side (e.g. MYCEL_LAYOUT_TAG=nhwc, the layout before Zen 4 got
nChw8c) go in --mycel-env.

    .venv/bin/python bench/bench_infer_cpu.py resnet18_b1 [--rounds 2] [--calls 10]
        [--mycel-env MYCEL_LAYOUT_TAG=nhwc]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "harness"))
from common import INFER  # noqa: E402


def mycel_child(workload, calls):
    import contextlib
    import io

    import mycel
    from bench_infer_ops import eval_net
    mycel.set_context(mode=mycel.GRAPH_MODE, num_threads=1)
    with contextlib.redirect_stdout(io.StringIO()):
        net, x = eval_net(workload)
    run = lambda: net(x).asnumpy()  # noqa: E731
    return run


def torch_child(workload, calls):
    import numpy as np
    import torch
    import worker_torch as WT
    torch.set_num_threads(1)
    model = INFER[workload][1]
    net = WT.make_net("resnet18_224" if model == "resnet18" else model).eval()
    x = torch.from_numpy(np.random.default_rng(1).standard_normal(INFER[workload][0]).astype(np.float32))

    def run():
        with torch.no_grad():
            return net(x)
    return run


def child(framework, workload, calls):
    run = (mycel_child if framework == "mycel" else torch_child)(workload, calls)
    for _ in range(3):
        run()
    c = time.process_time()
    for _ in range(calls):
        run()
    print(json.dumps({"cpu_ms": (time.process_time() - c) / calls * 1e3}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=sorted(k for k in INFER if k != "lenet5_b1"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--mycel-env", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--child", choices=["mycel", "torch"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.workload, args.calls)
    times = {"mycel": [], "torch": []}
    for _ in range(args.rounds):
        for fw in ("mycel", "torch"):
            env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
            if fw == "mycel":
                env.update(kv.split("=", 1) for kv in args.mycel_env)
            p = subprocess.run([sys.executable, __file__, args.workload, "--child", fw,
                                "--calls", str(args.calls)], env=env, capture_output=True,
                               text=True, check=True)
            times[fw].append(json.loads(p.stdout.strip().splitlines()[-1])["cpu_ms"])
    m, t = statistics.median(times["mycel"]), statistics.median(times["torch"])
    print(f"{args.workload} CPU ms per call, one thread (median of {args.rounds} runs): Mycel "
          f"{m:.2f} {[round(v, 2) for v in times['mycel']]}, PyTorch {t:.2f} "
          f"{[round(v, 2) for v in times['torch']]}: Mycel / PyTorch {m / t:.2f}x; load "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
