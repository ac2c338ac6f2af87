"""Sums ONEDNN_VERBOSE exec lines (stdin) by primitive, implementation and prop kind, and lists
each group's dearest shapes: which of oneDNN's kernels a step runs (AMX or not) and what they cost.
    ONEDNN_VERBOSE=1 python bench/bench_step_ops.py resnet18 --amp O2 --steps 1 | python this.py"""
import collections
import sys


def main():
    groups = collections.defaultdict(lambda: [0, 0.0, collections.Counter()])
    for line in sys.stdin:
        if not line.startswith("onednn_verbose,exec"):
            continue
        f = line.strip().split(",")  # onednn_verbose,exec,cpu,prim,impl,prop,mds,attr,aux,problem,ms
        g = groups[(f[3], f[4], f[5])]
        g[0] += 1
        g[1] += float(f[-1])
        g[2][f[-2]] += float(f[-1])
    total = sum(g[1] for g in groups.values())
    print(f"total {total:.1f} ms over {sum(g[0] for g in groups.values())} executions")
    for key, (n, t, shapes) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:25]:
        print(f"{t:9.1f} ms {n:5d}x  {' '.join(key)}")
        for shape, ts in shapes.most_common(3):
            print(f"           {ts:8.1f} ms  {shape}")


if __name__ == "__main__":
    main()
