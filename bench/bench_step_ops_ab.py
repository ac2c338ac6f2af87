"""A/B of a harness workload's training step between two checkouts, launch by launch: runs
bench_step_ops.py from each checkout's own venv in turn (A B A B ...) and compares the per-launch
minima summed by op (the minimum is what a loaded machine still shows), the sum of all minima and
the step's wall median. Report the load (printed per run) with any figure.

    python3 bench/bench_step_ops_ab.py --a /work/main --b . [--workload transformer]
        [--amp O2] [--threads 1] [--rounds 3]
"""
import argparse
import collections
import os
import re
import subprocess

OPS = ["softmax", "softmax_grad", "layer_norm", "layer_norm_grad", "cast", "mul", "add", "matmul",
       "matmul+sum", "dense", "dense+relu", "transpose"]


def run(root, args):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("OMP_WAIT_POLICY", None)  # the harness's default rows
    out = subprocess.run([os.path.join(root, ".venv", "bin", "python"),
                          os.path.join(root, "bench", "bench_step_ops.py"), args.workload,
                          "--amp", args.amp, "--threads", str(args.threads), "--top", "100000",
                          "--steps", str(args.steps)],
                         capture_output=True, text=True, env=env, cwd="/tmp", check=True).stdout
    head = next(line for line in out.splitlines() if "step wall" in line)
    per = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*\d+\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+(\S+)", line)
        if m:
            op = m.group(2)
            per[op if op in OPS else op.split("{")[0] if "{" in op else "other"] += float(m.group(1))
    return (float(re.search(r"min sum ([\d.]+)", head).group(1)),
            float(re.search(r"wall median ([\d.]+)", head).group(1)), per)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="checkout A (with its .venv and build)")
    ap.add_argument("--b", required=True, help="checkout B")
    ap.add_argument("--workload", default="transformer")
    ap.add_argument("--amp", default="O2")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    res = {"A": [], "B": []}
    for r in range(args.rounds):
        for side, root in (("A", args.a), ("B", args.b)):
            minsum, wall, per = run(os.path.abspath(root), args)
            res[side].append((minsum, wall, per))
            print(f"round {r} {side} load {open('/proc/loadavg').read().split()[0]} wall median "
                  f"{wall:.2f} ms, launch minima sum {minsum:.2f} ms", flush=True)
    for side in "AB":
        rows = res[side]
        keys = sorted(set().union(*(p.keys() for _, _, p in rows)))
        print(f"{side}: best minima sum {min(m for m, _, _ in rows):.2f} ms; per op (ms, best round): " +
              ", ".join(f"{k} {min(p[k] for _, _, p in rows) / 1e3:.3f}" for k in keys))


if __name__ == "__main__":
    main()
