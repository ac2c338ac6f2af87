"""The harness MLP step with the weight-gradient/update fusion off and on (MYCEL_FUSE_MATMUL_UPDATE,
backend/fuse_matmul_update.cc), both compiled in one process and alternated step by step under
mycel.Profiler, so that both see the same load: per step, the time of W1's and W2's weight
gradient plus momentum update (two launches off, one on) and of all launches, as minimum, 10th
percentile and median over the steps (us).

    env -u OMP_WAIT_POLICY .venv/bin/python bench/bench_mlp_fused_update_ab.py [--steps 300]
"""
import argparse
import contextlib
import io
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness"))
import worker_mycel as W  # noqa: E402

import mycel  # noqa: E402
from mycel import Tensor  # noqa: E402

# Output bytes of W1's (512 x 784) and W2's (512 x 512) gradient launches: the matmul writes
# one tensor, the update (alone or fused) two.
W1_BYTES, W2_BYTES = (1605632, 3211264), (1048576, 2097152)


def profiled(run, steps):
    with tempfile.TemporaryDirectory() as d:
        prof = mycel.Profiler(output_path=d)
        for _ in range(steps):
            run()
        prof.analyse()
        return prof.events()  # (op, start_ns, end_ns, bytes, ...), in order


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    mycel.set_context(mode=mycel.GRAPH_MODE)
    with tempfile.TemporaryDirectory() as d:
        with contextlib.redirect_stdout(io.StringIO()):
            W.init("mlp", os.path.join(d, "init.npz"))
        x, y, params = W.load(os.path.join(d, "init.npz"))
    xt, yt = Tensor(x), Tensor(y.astype(np.int32))
    steps = {}
    for name, flag in (("off", "0"), ("on", "1")):
        os.environ["MYCEL_FUSE_MATMUL_UPDATE"] = flag  # read when the step compiles
        steps[name] = W.train_step(W.make_net("mlp"), params)
        steps[name](xt, yt).asnumpy()
    os.environ.pop("MYCEL_FUSE_MATMUL_UPDATE")
    for _ in range(20):
        for s in steps.values():
            s(xt, yt).asnumpy()
    count = {k: len(profiled(lambda s=s: s(xt, yt).asnumpy(), 1)) for k, s in steps.items()}
    events = profiled(lambda: [s(xt, yt).asnumpy() for s in steps.values()], args.steps)
    assert len(events) == args.steps * sum(count.values()), (len(events), count)
    res = {k: {"W1": [], "W2": [], "all launches": []} for k in steps}
    pos = 0
    for _ in range(args.steps):
        for k in steps:
            ev = events[pos:pos + count[k]]
            pos += count[k]
            us = [((e[2] - e[1]) / 1e3, e[3]) for e in ev]
            res[k]["W1"].append(sum(t for t, b in us if b in W1_BYTES))
            res[k]["W2"].append(sum(t for t, b in us if b in W2_BYTES))
            res[k]["all launches"].append(sum(t for t, _ in us))
    for k in steps:
        parts = []
        for m, v in res[k].items():
            v = sorted(v)
            parts.append(f"{m} min {v[0]:.0f} p10 {v[len(v) // 10]:.0f} "
                         f"median {v[len(v) // 2]:.0f}")
        print(f"{k:3s} ({count[k]} launches): " + " | ".join(parts))


if __name__ == "__main__":
    main()
