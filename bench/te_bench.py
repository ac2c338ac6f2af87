"""mycel.te: compile latency (cold, cached) and generated-kernel speed against Mycel's built-in
ops and numpy; matmul 512^3 and a direct conv2d scheduled (tiled) against the default lowering,
oneDNN (ops.matmul / ops.conv2d), numpy and PyTorch (in its own process, when installed). Prints
tables; not a test.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/te_bench.py [summary|matmul|conv|padded_conv|blur|blur_tanh|fusion|reduce_fusion ...]

PyTorch runs under MYCEL_BENCH_TORCH_PYTHON (a Python that has torch) when set, else this one.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import mycel as ms
from mycel import ops, te


TORCH_PYTHON = os.environ.get("MYCEL_BENCH_TORCH_PYTHON") or sys.executable


def best(fn, reps=20):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts) * 1e3


def sigmoid_chain(n):
    x = te.placeholder((n,), "float32", "x")
    return [x], [te.vrec(te.vadds(te.vexp(te.vmuls(x, -1.0)), 1.0))]


def row_sum(n, m):
    x = te.placeholder((n, m), "float32", "x")
    return [x], [te.reduce_sum(x, 1)]


def matmul(n):
    a = te.placeholder((n, n), "float32", "a")
    b = te.placeholder((n, n), "float32", "b")
    k = te.reduce_axis((0, n), "k")
    return [a, b], [te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), "mm")]


def tiled_matmul(n, ti=64, tj=64, tk=128):
    """matmul with a Halide-style schedule: tiles of ti x tj outputs accumulated over k-blocks of
    tk, rows of a tile on OpenMP threads, the j loop of the tile vectorized."""
    (a, b), (c,) = matmul(n)
    s = te.create_schedule(c)
    i, j = c.axis
    (k,) = c.reduce_axis
    io, ii = s[c].split(i, ti)
    jo, ji = s[c].split(j, tj)
    ko, ki = s[c].split(k, tk)
    s[c].reorder(io, jo, ko, ii, ki, ji)
    s[c].parallel(io)
    s[c].vectorize(ji)
    return [a, b], [c], s


def conv2d(n, c, h, w, oc, k):
    """A direct NCHW convolution (stride 1, no padding): a reduction over (c, kh, kw)."""
    x = te.placeholder((n, c, h, w), "float32", "x")
    f = te.placeholder((oc, c, k, k), "float32", "f")
    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, k), "ry"), te.reduce_axis((0, k), "rx")
    out = te.compute((n, oc, h - k + 1, w - k + 1),
                     lambda b, o, y, z: te.sum(x[b, rc, y + ry, z + rx] * f[o, rc, ry, rx], axis=[rc, ry, rx]),
                     "conv")
    return [x, f], [out]


def scheduled_conv2d(*shape):
    """conv2d with the reduction loops outermost per image: each filter tap (c, ky, kx) is then
    applied to every output plane of the image in turn, the innermost loop along an output row
    (vectorized, unit stride in x); images on OpenMP threads. Measured against (b, o, y, rc, ry,
    rx, z) and (b, o, rc, ry, rx, y, z): 8x and 3x slower than this order on LeNet5's conv."""
    ins, (out,) = conv2d(*shape)
    s = te.create_schedule(out)
    b, o, y, z = out.axis
    rc, ry, rx = out.reduce_axis
    s[out].reorder(b, rc, ry, rx, o, y, z)
    s[out].parallel(b)
    s[out].vectorize(z)
    return ins, [out], s


def padded_conv2d(n, c, h, w, oc, k, where):
    """conv2d with zero padding k // 2 ("same"), the pad a compute of its own, scheduled as
    scheduled_conv2d; `where` places the pad: "inline" (the guard is evaluated in the conv's
    innermost loop), "root" (a whole padded copy of the batch first) or "at image" (compute_at
    the conv's parallel image loop: one padded image per thread, while it is in cache)."""
    p = k // 2
    x = te.placeholder((n, c, h, w), "float32", "x")
    f = te.placeholder((oc, c, k, k), "float32", "f")
    pad = te.compute((n, c, h + 2 * p, w + 2 * p),
                     lambda b, ch, y, z: te.if_then_else(te.all_of(y >= p, y < h + p, z >= p, z < w + p),
                                                         x[b, ch, y - p, z - p], 0.0), "pad")
    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, k), "ry"), te.reduce_axis((0, k), "rx")
    out = te.compute((n, oc, h, w),
                     lambda b, o, y, z: te.sum(pad[b, rc, y + ry, z + rx] * f[o, rc, ry, rx], axis=[rc, ry, rx]),
                     "conv")
    s = te.create_schedule(out)
    b, o, y, z = out.axis
    s[out].reorder(b, rc, ry, rx, o, y, z)
    s[out].parallel(b)
    s[out].vectorize(z)
    if where == "root":
        s[pad]
    elif where == "at image":
        s[pad].compute_at(s[out], b)
    return [x, f], [out], s


TORCH_CONV = """
import sys, time, torch
n, c, h, w, oc, k, reps = (int(a) for a in sys.argv[1:8])
x, f = torch.randn(n, c, h, w), torch.randn(oc, c, k, k)
torch.nn.functional.conv2d(x, f)
ts = []
for _ in range(reps):
    t0 = time.perf_counter(); torch.nn.functional.conv2d(x, f); ts.append(time.perf_counter() - t0)
print(min(ts) * 1e3)
"""


TORCH_MATMUL = """
import sys, time, torch
n, reps = int(sys.argv[1]), int(sys.argv[2])
a, b = torch.randn(n, n), torch.randn(n, n)
torch.matmul(a, b)
ts = []
for _ in range(reps):
    t0 = time.perf_counter(); torch.matmul(a, b); ts.append(time.perf_counter() - t0)
print(min(ts) * 1e3)
"""


# PyTorch (eager, CPU) on the elementwise and reduction rows, in its own process: a name, then
# the best of reps in ms.
TORCH_ROWS = """
import sys, time, torch
name, reps = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
n = 1 << 20
x, a, b = torch.randn(n), torch.randn(n), torch.randn(n)
m = torch.randn(1024, 1024)
s = torch.randn(4096, 256)
def chain(x, a, b):
    y = torch.relu(x * a + b)
    return (torch.sigmoid(y * 2.0 - x) * torch.tanh(x) + torch.exp(-(x * x))).sum()
def chain_grad():
    xs = [t.clone().requires_grad_() for t in (x, a, b)]
    chain(*xs).backward()
def softmax_grad():
    xs = s.clone().requires_grad_()
    e = torch.exp(xs - xs.max(-1, keepdim=True).values)
    (e / e.sum(-1, keepdim=True) * xs).sum().backward()
fns = {"sigmoid": lambda: torch.reciprocal(torch.exp(x * -1.0) + 1.0),
       "rowsum": lambda: m.sum(1), "chain": lambda: chain(x, a, b), "chain_grad": chain_grad,
       "softmax_grad": softmax_grad}
f = fns[name]
f()
ts = []
for _ in range(reps):
    t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
print(min(ts) * 1e3)
"""


def torch_row(name, reps=10):
    """PyTorch's time for one of TORCH_ROWS in its own process, or None when not installed."""
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    r = subprocess.run([TORCH_PYTHON, "-c", TORCH_ROWS, name, str(reps)], capture_output=True,
                       text=True, env=env)
    return float(r.stdout) if r.returncode == 0 else None


def fmt(t, width):
    return f"{t:{width}.3f}" if t is not None else f"{'-':>{width}s}"


def torch_ms(n, reps=10):
    """PyTorch's matmul time in its own process (two OpenMP runtimes in one process distort both),
    or None when PyTorch is not installed."""
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}  # PyTorch's own default
    r = subprocess.run([TORCH_PYTHON, "-c", TORCH_MATMUL, str(n), str(reps)], capture_output=True, text=True,
                       env=env)
    return float(r.stdout) if r.returncode == 0 else None


def matmul_table(n=512, rounds=5):
    rng = np.random.default_rng(0)
    av = rng.standard_normal((n, n)).astype(np.float32)
    bv = rng.standard_normal((n, n)).astype(np.float32)
    at, bt = ms.Tensor(av), ms.Tensor(bv)
    ins, outs = matmul(n)
    default = te.build(ins, outs)
    ins, outs, s = tiled_matmul(n)
    tiled = te.build(ins, outs, schedule=s)
    ref = av @ bv
    for f in (default, tiled):
        assert np.allclose(f(at, bt).asnumpy(), ref, rtol=1e-3, atol=1e-3)
    runs = {"te default lowering": lambda: default(at, bt), "te tiled schedule": lambda: tiled(at, bt),
            "mycel ops.matmul (oneDNN)": lambda: ops.matmul(at, bt), "numpy": lambda: av @ bv}
    times = {k: [] for k in list(runs) + ["PyTorch (own process)"]}
    for _ in range(rounds):  # alternate, so load changes hit every contender alike
        for k, fn in runs.items():
            times[k].append(best(fn, 5))
        t = torch_ms(n, 5)
        if t is not None:
            times["PyTorch (own process)"].append(t)
    flops = 2.0 * n ** 3
    print(f"\nmatmul {n}^3 float32 (median of {rounds} rounds, each the best of 5)")
    print("kernel                          ms     GFLOP/s")
    for k, ts in times.items():
        if not ts:
            print(f"{k:30s}  (not installed: pip install torch==2.13.0 to compare)")
            continue
        m = statistics.median(ts)
        print(f"{k:30s}{m:8.2f}{flops / m / 1e6:10.1f}")


def conv_table(shape=(64, 6, 14, 14, 16, 5), rounds=5):
    """LeNet5's second convolution (batch 64): the TE default lowering and a schedule against
    ops.conv2d (oneDNN) and PyTorch in its own process."""
    n, c, h, w, oc, k = shape
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((n, c, h, w)).astype(np.float32)
    fv = rng.standard_normal((oc, c, k, k)).astype(np.float32)
    xt, ft = ms.Tensor(xv), ms.Tensor(fv)
    default = te.build(*conv2d(*shape))
    ins, outs, s = scheduled_conv2d(*shape)
    tiled = te.build(ins, outs, schedule=s)
    ref = ops.conv2d(xt, ft).asnumpy()
    for f in (default, tiled):
        assert np.allclose(f(xt, ft).asnumpy(), ref, rtol=1e-3, atol=1e-3)
    runs = {"te default lowering": lambda: default(xt, ft), "te scheduled": lambda: tiled(xt, ft),
            "mycel ops.conv2d (oneDNN)": lambda: ops.conv2d(xt, ft)}
    times = {k_: [] for k_ in list(runs) + ["PyTorch (own process)"]}
    env = {k_: v for k_, v in os.environ.items() if k_ != "GOMP_SPINCOUNT"}
    for _ in range(rounds):
        for k_, fn in runs.items():
            times[k_].append(best(fn, 5))
        r = subprocess.run([TORCH_PYTHON, "-c", TORCH_CONV, *map(str, shape), "5"], capture_output=True,
                           text=True, env=env)
        if r.returncode == 0:
            times["PyTorch (own process)"].append(float(r.stdout))
    oh, ow = h - k + 1, w - k + 1
    flops = 2.0 * n * oc * oh * ow * c * k * k
    print(f"\nconv2d x{(n, c, h, w)} w{(oc, c, k, k)} float32 (median of {rounds} rounds, each the best of 5)")
    print("kernel                          ms     GFLOP/s")
    for k_, ts in times.items():
        if not ts:
            print(f"{k_:30s}  (not installed: pip install torch==2.13.0 to compare)")
            continue
        m = statistics.median(ts)
        print(f"{k_:30s}{m:8.3f}{flops / m / 1e6:10.1f}")


def padded_conv_table(shape=(64, 6, 14, 14, 16, 5), rounds=5):
    """compute_at: a "same" convolution whose zero padding is inlined into the conv, computed
    whole first, or computed per image inside the conv's image loop; oneDNN and PyTorch with the
    same padding."""
    n, c, h, w, oc, k = shape
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((n, c, h, w)).astype(np.float32)
    fv = rng.standard_normal((oc, c, k, k)).astype(np.float32)
    xt, ft = ms.Tensor(xv), ms.Tensor(fv)
    ref = ops.conv2d(xt, ft, pad_mode="pad", padding=k // 2).asnumpy()
    runs = {}
    for where in ("inline", "root", "at image"):
        ins, outs, s = padded_conv2d(*shape, where)
        fn = te.build(ins, outs, schedule=s)
        assert np.allclose(fn(xt, ft).asnumpy(), ref, rtol=1e-3, atol=1e-3)
        runs[f"te, pad {where}"] = lambda fn=fn: fn(xt, ft)
    runs["mycel ops.conv2d (oneDNN)"] = lambda: ops.conv2d(xt, ft, pad_mode="pad", padding=k // 2)
    times = {k_: [] for k_ in runs}
    for _ in range(rounds):
        for k_, fn in runs.items():
            times[k_].append(best(fn, 5))
    flops = 2.0 * n * oc * h * w * c * k * k
    print(f"\nconv2d x{(n, c, h, w)} w{(oc, c, k, k)} padding {k // 2} float32 "
          f"(median of {rounds} rounds, each the best of 5)")
    print("kernel                          ms     GFLOP/s")
    for k_, ts in times.items():
        m = statistics.median(ts)
        print(f"{k_:30s}{m:8.3f}{flops / m / 1e6:10.1f}")


def blur_table(n=2048, rounds=5, tanh=False):
    """compute_at on Halide's example: a 3x3 box blur as a horizontal pass bx feeding a vertical
    pass by, bx inlined into by (each bx value computed three times), computed whole first (a
    full-size intermediate through memory), or computed per tile of 32 output rows inside by's
    parallel tile loop (34 rows of bx, in cache, per thread). With tanh, bx is tanh of the
    horizontal sum: a producer worth not recomputing."""
    x = te.placeholder((n + 2, n + 2), "float32", "x")
    act = te.tanh if tanh else (lambda v: v)
    bx = te.compute((n + 2, n), lambda i, j: act(x[i, j] + x[i, j + 1] + x[i, j + 2]), "bx")
    by = te.compute((n, n), lambda i, j: (bx[i, j] + bx[i + 1, j] + bx[i + 2, j]) / 9.0, "by")
    xv = np.random.default_rng(0).standard_normal((n + 2, n + 2)).astype(np.float32)
    xt = ms.Tensor(xv)
    h = xv[:, :-2] + xv[:, 1:-1] + xv[:, 2:]
    h = np.tanh(h) if tanh else h
    ref = (h[:-2] + h[1:-1] + h[2:]) / 9
    runs = {}
    for where in ("inline", "root", "at tile"):
        s = te.create_schedule(by)
        yo, yi = s[by].split(by.axis[0], 32)
        s[by].parallel(yo)
        s[by].vectorize(by.axis[1])
        if where == "root":
            s[bx].parallel(bx.axis[0])
            s[bx].vectorize(bx.axis[1])
        elif where == "at tile":
            s[bx].compute_at(s[by], yo)
            s[bx].vectorize(bx.axis[1])
        fn = te.build([x], [by], schedule=s)
        assert np.allclose(fn(xt).asnumpy(), ref, rtol=1e-4, atol=1e-5)
        runs[f"te, bx {where}"] = lambda fn=fn: fn(xt)
    times = {k: [] for k in runs}
    for _ in range(rounds):
        for k, fn in runs.items():
            times[k].append(best(fn, 5))
    print(f"\n3x3 box blur {n}x{n} float32 as two passes{', tanh of the horizontal one' if tanh else ''} "
          f"(median of {rounds} rounds, each the best of 5)")
    print("kernel                          ms")
    for k, ts in times.items():
        print(f"{k:30s}{statistics.median(ts):8.3f}")


def fusion_table(n=1 << 20, rounds=5):
    """A graph-mode elementwise chain (forward and backward) with the interpreter's fused
    kernels (MYCEL_TE_FUSION=0), with MYCEL_TE_FUSION=1 (chains compiled by mycel.te) and unfused (MYCEL_FUSE=0)."""
    from mycel import nn

    class Chain(nn.Cell):
        def construct(self, x, a, b):
            y = ops.relu(x * a + b)
            return (ops.sigmoid(y * 2.0 - x) * ops.tanh(x) + ops.exp(-(x * x))).sum()
    rng = np.random.default_rng(0)
    x, a, b = (ms.Tensor(rng.standard_normal(n).astype(np.float32)) for _ in range(3))
    ms.set_context(mode=ms.GRAPH_MODE)
    variants = {"interpreter fused (MYCEL_TE_FUSION=0)": {"MYCEL_TE_FUSION": "0"},
                "TE fused (MYCEL_TE_FUSION=1)": {"MYCEL_TE_FUSION": "1"},
                "unfused (MYCEL_FUSE=0)": {"MYCEL_FUSE": "0"}}
    steps = {}
    for name, env in variants.items():
        os.environ.update(env)
        try:
            fwd, bwd = Chain(), ms.grad(Chain(), grad_position=(0, 1, 2))
            fwd(x, a, b), bwd(x, a, b)  # compile now, under this setting
        finally:
            for k in env:
                os.environ.pop(k)
        steps[name] = (fwd, bwd)
    times = {k: ([], []) for k in steps}
    for _ in range(rounds):
        for k, (fwd, bwd) in steps.items():
            times[k][0].append(best(lambda: fwd(x, a, b), 5))
            times[k][1].append(best(lambda: bwd(x, a, b), 5))
    ms.set_context(mode=ms.PYNATIVE_MODE)
    print(f"\nelementwise chain over {n} float32, graph mode (median of {rounds} rounds)")
    print("fusion                          forward ms  forward+backward ms")
    for k, (f, g) in times.items():
        print(f"{k:32s}{statistics.median(f):10.3f}{statistics.median(g):21.3f}")
    tf, tg = torch_row("chain", 5), torch_row("chain_grad", 5)
    print(f"{'PyTorch eager (own process)':32s}{fmt(tf, 10)}{fmt(tg, 21)}")


def reduce_fusion_table(rows=4096, cols=256, rounds=5):
    """Chains feeding reductions in graph mode, forward and backward: softmax and layer norm
    written with ops (max, exp, sum; mean, variance), each step compiled with the default fusion
    (elementwise chains only, reductions as their own ops), with MYCEL_TE_FUSION=1 (chains and
    the sums / means they feed as TE kernels) and unfused."""
    from mycel import nn

    class Softmax(nn.Cell):
        def construct(self, x):
            e = ops.exp(x - ops.max(x, axis=-1, keep_dims=True))
            return (e / ops.sum(e, axis=-1, keep_dims=True) * x).sum()

    class Norm(nn.Cell):
        def construct(self, x):
            d = x - ops.mean(x, axis=-1, keep_dims=True)
            return (d / ops.sqrt(ops.mean(d * d, axis=-1, keep_dims=True) + 1e-5) * x).sum()
    x = ms.Tensor(np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32))
    ms.set_context(mode=ms.GRAPH_MODE)
    variants = {"interpreter fused (MYCEL_TE_FUSION=0)": {"MYCEL_TE_FUSION": "0"},
                "TE fused (MYCEL_TE_FUSION=1)": {"MYCEL_TE_FUSION": "1"},
                "unfused (MYCEL_FUSE=0)": {"MYCEL_FUSE": "0"}}
    print(f"\nchains feeding reductions over ({rows}, {cols}) float32, graph mode (median of {rounds} rounds)")
    print("net      fusion                          forward ms  forward+backward ms")
    for cls in (Softmax, Norm):
        steps = {}
        for name, env in variants.items():
            os.environ.update(env)
            try:
                fwd, bwd = cls(), ms.grad(cls())
                fwd(x), bwd(x)  # compile now, under this setting
            finally:
                for k in env:
                    os.environ.pop(k)
            steps[name] = (fwd, bwd)
        times = {k: ([], []) for k in steps}
        for _ in range(rounds):
            for k, (fwd, bwd) in steps.items():
                times[k][0].append(best(lambda: fwd(x), 5))
                times[k][1].append(best(lambda: bwd(x), 5))
        for k, (f, g) in times.items():
            print(f"{cls.__name__:9s}{k:32s}{statistics.median(f):10.3f}{statistics.median(g):21.3f}")
        if cls is Softmax and rows == 4096 and cols == 256:
            print(f"{'Softmax':9s}{'PyTorch eager (own process)':32s}{'':10s}"
                  f"{fmt(torch_row('softmax_grad', 5), 21)}")
    ms.set_context(mode=ms.PYNATIVE_MODE)


def main():
    os.environ["MYCEL_TE_CACHE"] = tempfile.mkdtemp(prefix="te_bench_")
    # table names (summary, matmul, conv, padded_conv, blur, blur_tanh, fusion, reduce_fusion);
    # all by default
    only = sys.argv[1:]
    tables = {"summary": summary_table, "matmul": matmul_table, "conv": conv_table,
              "padded_conv": padded_conv_table, "blur": blur_table,
              "blur_tanh": lambda: blur_table(tanh=True), "fusion": fusion_table,
              "reduce_fusion": reduce_fusion_table}
    for name in only or tables:
        tables[name]()


def summary_table():
    """Compile time (cold, cached) and the simple kernels against ops, numpy and PyTorch."""
    rng = np.random.default_rng(0)
    print("kernel                      cold compile s  cached load s")
    for name, make in [("sigmoid 1M", lambda: sigmoid_chain(1 << 20)),
                       ("row sum 1024x1024", lambda: row_sum(1024, 1024)),
                       ("matmul 256^3", lambda: matmul(256))]:
        ins, outs = make()
        t0 = time.perf_counter()
        te.build(ins, outs)
        cold = time.perf_counter() - t0
        ins2, outs2 = make()
        t0 = time.perf_counter()
        f = te.build(ins2, outs2)
        warm = time.perf_counter() - t0
        print(f"{name:28s}{cold:14.3f}{warm:15.4f}  cached={f.cached}")

    print("\nkernel                      te ms   mycel ops ms   numpy ms   PyTorch ms")
    n = 1 << 20
    xv = rng.standard_normal(n).astype(np.float32)
    ins, outs = sigmoid_chain(n)
    f = te.build(ins, outs)
    xt = ms.Tensor(xv)
    print(f"{'sigmoid chain 1M':28s}{best(lambda: f(xt)):6.3f}{best(lambda: ops.sigmoid(xt)):15.3f}"
          f"{best(lambda: 1 / (1 + np.exp(-xv))):11.3f}{fmt(torch_row('sigmoid'), 13)}")
    mv = rng.standard_normal((1024, 1024)).astype(np.float32)
    ins, outs = row_sum(1024, 1024)
    f = te.build(ins, outs)
    mt = ms.Tensor(mv)
    print(f"{'row sum 1024x1024':28s}{best(lambda: f(mt)):6.3f}{best(lambda: mt.sum(1)):15.3f}"
          f"{best(lambda: mv.sum(1)):11.3f}{fmt(torch_row('rowsum'), 13)}")
    av = rng.standard_normal((256, 256)).astype(np.float32)
    ins, outs = matmul(256)
    f = te.build(ins, outs)
    at = ms.Tensor(av)
    print(f"{'matmul 256^3':28s}{best(lambda: f(at, at), 5):6.3f}"
          f"{best(lambda: ops.matmul(at, at), 5):15.3f}{best(lambda: av @ av, 5):11.3f}")


if __name__ == "__main__":
    main()
