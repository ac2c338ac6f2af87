"""The gradient test net's long sweep (issue 22): many seeded random networks through the checks
of tests/python/grad_net.py (graph == PyNative, gradients == float64 finite differences, every
parameter stepped by -lr * gradient). Prints each failure with its seed and a summary.

    .venv/bin/python bench/grad_net_sweep.py --start 0 --count 2000
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))

from grad_net import check, random_net  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--start", type=int, default=30, help="first seed (0-29 run in scripts/test)")
    ap.add_argument("--count", type=int, default=1000)
    args = ap.parse_args()
    failures, t0 = [], time.time()
    for seed in range(args.start, args.start + args.count):
        try:
            net, x, desc = random_net(seed)
            check(net, x, seed)
        except Exception as e:  # noqa: BLE001 (a sweep reports every kind of failure)
            failures.append(seed)
            print(f"seed {seed}: {type(e).__name__}: {str(e)[:400]}", flush=True)
    print(f"{args.count} networks, {len(failures)} failures, {time.time() - t0:.1f} s; failing seeds: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
