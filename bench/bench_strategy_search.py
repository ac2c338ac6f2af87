"""Strategy-search time, median of repeated runs: ResNet-50 on 8 devices (goal < 50 ms), a
24-layer transformer (~1,000 ops) on 64 devices (goal < 1 s) and on 1,024 devices. The time is
what the C++ search reports: building the cost graph (strategies, costs, redistribution
matrices) plus the search itself; the Python call around it adds JSON in and out. Run:

    .venv/bin/python bench/bench_strategy_search.py [--repeat 7]"""
import argparse
import os
import statistics
import time

from mycel.parallel.search import load_topology, simulate
from mycel.parallel.zoo import resnet50, transformer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bench(name, model, devices, topo, mode, repeat, goal=None):
    searches, calls = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = simulate(model, devices, topo, search_mode=mode)
        calls.append(time.perf_counter() - t0)
        searches.append(r.search_seconds)
    s, c = statistics.median(searches), statistics.median(calls)
    verdict = "" if goal is None else f"  goal < {goal * 1e3:.0f} ms: {'met' if s < goal else 'MISSED'}"
    print(f"{name:<26} {len(model):>5} ops {devices:>5} devices  {mode:<22} search {s * 1e3:8.2f} ms  "
          f"(call {c * 1e3:8.2f} ms)  step {r.step_time * 1e3:9.2f} ms  exact={r.exact}{verdict}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    topo = load_topology(os.path.join(ROOT, "docs", "topologies", "cluster_128x8.json"))
    res, tf = resnet50(), transformer(layers=24)
    for mode in ("dynamic_programming", "recursive_programming"):
        bench("ResNet-50", res, 8, topo, mode, args.repeat, 0.05)
        bench("transformer, 24 layers", tf, 64, topo, mode, args.repeat, 1.0)
        bench("transformer, 24 layers", tf, 1024, topo, mode, args.repeat)


if __name__ == "__main__":
    main()
