"""Step time under CPU contention (issue 19): a training step while other processes keep the
cores busy, as on a shared workstation or CI runner. Uses the harness workers (each framework
alone in a fresh process, the same weights and batch) and starts `--load` busy-loop processes
beside each run. Rows: Mycel as built (libgomp spins 1,000 times before sleeping, set by
`import mycel`; small oneDNN primitives on one thread), Mycel with libgomp's default spin
(GOMP_SPINCOUNT=300000, the behaviour before), Mycel with every primitive on the pool
(MYCEL_SERIAL_WORK=0), Mycel with OMP_WAIT_POLICY=PASSIVE, and PyTorch (default and PASSIVE) when
installed. Rounds alternate the rows; each figure is the median over rounds of the per-run median
step time. Under contention the default spin makes single runs bimodal (fast, or 10x slower), so
use several rounds.

    .venv/bin/python bench/bench_contention.py [--workload lenet5] [--load 2] [--rounds 3] \
        [--steps 40]
    (--load 0 measures the same rows on an otherwise idle machine)
"""
import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "harness")
PY = sys.executable


def spin(stop):
    x = 0
    while not stop.is_set():
        for _ in range(100000):
            x += 1


def worker(framework, args, env_extra):
    env = dict(os.environ)
    for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "MYCEL_SERIAL_WORK"):
        env.pop(k, None)
    env.update(env_extra)
    p = subprocess.run([PY, os.path.join(HARNESS, f"worker_{framework}.py")] + [str(a) for a in args],
                       env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"{framework} failed:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def have_torch():
    return subprocess.run([PY, "-c", "import torch"], capture_output=True).returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="lenet5", choices=["lenet5", "mlp", "resnet18", "transformer"])
    ap.add_argument("--load", type=int, default=2, help="busy-loop processes beside each run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    rows = [("mycel", "mycel", {}), ("mycel, GOMP_SPINCOUNT=300000", "mycel", {"GOMP_SPINCOUNT": "300000"}),
            ("mycel, MYCEL_SERIAL_WORK=0", "mycel", {"MYCEL_SERIAL_WORK": "0"}),
            ("mycel, PASSIVE", "mycel", {"OMP_WAIT_POLICY": "PASSIVE"})]
    if have_torch():
        rows += [("pytorch", "torch", {}), ("pytorch, PASSIVE", "torch", {"OMP_WAIT_POLICY": "PASSIVE"})]
    with tempfile.TemporaryDirectory() as tmp:
        init = os.path.join(tmp, "init.npz")
        worker("mycel", ["init", a.workload, init], {})
        results = {name: [] for name, _, _ in rows}
        for r in range(a.rounds):
            for name, fw, env in rows:
                stop = mp.Event()
                busy = [mp.Process(target=spin, args=(stop,), daemon=True) for _ in range(a.load)]
                for p in busy:
                    p.start()
                try:
                    res = worker(fw, ["step", a.workload, init, a.warmup, a.steps], env)
                finally:
                    stop.set()
                    for p in busy:
                        p.join()
                results[name].append(res["median_s"] * 1e3)
                print(f"round {r + 1} {name:40s} {res['median_s'] * 1e3:8.2f} ms  "
                      f"threads {res.get('threads')}", flush=True)
    print(f"\n{a.workload}, {a.load} busy processes beside each run, {os.cpu_count()} CPUs; "
          f"median over {a.rounds} rounds of per-run median step time:")
    base = statistics.median(results["mycel"])
    for name, _, _ in rows:
        m = statistics.median(results[name])
        print(f"  {name:40s} {m:8.2f} ms   ({m / base:5.2f}x Mycel as built)")


if __name__ == "__main__":
    main()
