"""Batch-1 inference latency: Mycel's lite runtime (mycel_lite_benchmark on a MINDIR file) vs ONNX
Runtime (the same network exported to ONNX) vs PyTorch eager (a twin network), each in its own
process, alternating, median of the per-round p50s. Also prints libmycel_lite's size.

int8 (all three): the net PTQ'd (min-max, 7-bit weights) on synthetic calibration
data, exported as int8 MINDIR (lite int8 kernels) and as QDQ ONNX (ONNX Runtime's int8 path).

    .venv/bin/python bench/bench_lite.py [--threads 1] [--rounds 3] [--iters 200] [--models lenet5,...]
        [--torch-python /path/to/python-with-torch] [--passive] [--lite-spin N] [--ort-no-spin]

By default each runtime runs with its own default wait policy, as a user gets it: no
OMP_WAIT_POLICY or GOMP_SPINCOUNT in any process's environment, so the OpenMP runtimes (the lite
runtime's libgomp, PyTorch's) spin about 300,000 rounds before a pool thread sleeps, and ONNX
Runtime's own pool spins between its parallel sections (session.intra_op.allow_spinning, on by
default). `--passive` measures them all without spinning: OMP_WAIT_POLICY=PASSIVE for the OpenMP
runtimes and allow_spinning=0 for ONNX Runtime. At two threads the wait policy decides the
comparison (docs/edge.md, "Two threads"). `--lite-spin N` runs the lite runtime with
GOMP_SPINCOUNT=N instead (about 26 ns per spin round on Zen 4); `--ort-no-spin` turns ONNX
Runtime's spinning off alone. Each runtime's threads and wait policy are printed first.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "dev")
SHAPES = {"lenet5": (1, 1, 32, 32), "resnet18": (1, 3, 32, 32), "mobilenet_v2": (1, 3, 224, 224)}
INT8 = ("lenet5", "resnet18", "mobilenet_v2")

EXPORT = r"""
import sys, numpy as np, mycel
sys.path.insert(0, {tests!r})
from edge_helpers import randomize, LeNet5, resnet18_cifar, mobilenet_v2
make = {{"lenet5": LeNet5, "resnet18": resnet18_cifar, "mobilenet_v2": lambda: mobilenet_v2(num_classes=1000)}}
from mycel.lite import quant
for name, shape in {shapes!r}.items():
    net = randomize(make[name]())
    x = mycel.Tensor(np.zeros(shape, np.float32))
    for fmt in ("MINDIR", "ONNX"):
        mycel.export(net, x, file_name={out!r} + "/" + name, file_format=fmt)
    if name in {int8!r}:
        rng = np.random.default_rng(0)
        calib = [mycel.Tensor(rng.standard_normal((8,) + shape[1:]).astype(np.float32)) for _ in range(4)]
        quant.quantize(net, calib, method="minmax")
        for fmt in ("MINDIR", "ONNX"):
            mycel.export(net, x, file_name={out!r} + "/" + name + "_int8", file_format=fmt)
print("{{}}")
"""

ORT = r"""
import json, time, numpy as np, onnxruntime as ort
so = ort.SessionOptions(); so.intra_op_num_threads = {threads}; so.inter_op_num_threads = 1
if not {spin}: so.add_session_config_entry("session.intra_op.allow_spinning", "0")
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
s = ort.InferenceSession({path!r}, so, providers=["CPUExecutionProvider"])
x = np.random.default_rng(0).standard_normal({shape!r}).astype(np.float32)
name = s.get_inputs()[0].name
for _ in range(20): s.run(None, {{name: x}})
lat = []; c0 = time.process_time()
for _ in range({iters}):
    t = time.perf_counter(); s.run(None, {{name: x}}); lat.append((time.perf_counter() - t) * 1e3)
cpu = (time.process_time() - c0) / {iters} * 1e3
print(json.dumps({{"p50": float(np.percentile(lat, 50)), "p90": float(np.percentile(lat, 90)), "cpu": cpu,
                  "threads": so.intra_op_num_threads}}))
"""

TORCH = r"""
import json, sys, time, numpy as np, torch
from torch import nn
sys.path.insert(0, {bench!r})
torch.set_num_threads({threads})
from torch_models import LeNet5, ResNet18Cifar

def cbr(i, o, k=3, s=1, g=1):
    return nn.Sequential(nn.Conv2d(i, o, k, s, (k - 1) // 2, groups=g, bias=False), nn.BatchNorm2d(o), nn.ReLU6())

class IR(nn.Module):
    def __init__(self, i, o, s, t):
        super().__init__()
        h = i * t
        self.res = s == 1 and i == o
        layers = ([cbr(i, h, 1)] if t != 1 else []) + [cbr(h, h, 3, s, h), nn.Conv2d(h, o, 1, bias=False), nn.BatchNorm2d(o)]
        self.conv = nn.Sequential(*layers)
    def forward(self, x):
        return x + self.conv(x) if self.res else self.conv(x)

class MobileNetV2(nn.Module):  # examples/models/mobilenet.py at width 1.0
    def __init__(self):
        super().__init__()
        c, f = 32, [cbr(3, 32, 3, 2)]
        for t, o, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
            for i in range(n):
                f.append(IR(c, o, s if i == 0 else 1, t)); c = o
        f.append(cbr(c, 1280, 1))
        self.features = nn.Sequential(*f)
        self.classifier = nn.Linear(1280, 1000)
    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))

net = {{"lenet5": LeNet5, "resnet18": ResNet18Cifar, "mobilenet_v2": MobileNetV2}}[{name!r}]().eval()
x = torch.randn({shape!r})
with torch.inference_mode():
    for _ in range(20): net(x)
    lat = []; c0 = time.process_time()
    for _ in range({iters}):
        t = time.perf_counter(); net(x); lat.append((time.perf_counter() - t) * 1e3)
    cpu = (time.process_time() - c0) / {iters} * 1e3
print(json.dumps({{"p50": float(np.percentile(lat, 50)), "p90": float(np.percentile(lat, 90)), "cpu": cpu,
                  "threads": torch.get_num_threads()}}))
"""


def wait_env(policy=None, spin=0):
    """This environment without any OpenMP wait setting, then `policy` or `spin` if given.

    `import mycel` sets GOMP_SPINCOUNT=1000 in the environment of this script's children when the
    user set neither variable, and a user's own settings would make the comparison depend on their
    shell: every process starts from none and gets only what its mode gives it."""
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("GOMP_SPINCOUNT", None)
    if spin:
        env["GOMP_SPINCOUNT"] = str(spin)
    elif policy:
        env["OMP_WAIT_POLICY"] = policy
    return env


def omp_wait(env):
    if "GOMP_SPINCOUNT" in env:
        return f"GOMP_SPINCOUNT={env['GOMP_SPINCOUNT']}"
    if "OMP_WAIT_POLICY" in env:
        return f"OMP_WAIT_POLICY={env['OMP_WAIT_POLICY']}"
    return "libgomp default (spins ~300000 rounds, then sleeps)"


def run_py(code, python=None, env=None):
    out = subprocess.run([python or sys.executable, "-c", code], capture_output=True, text=True, env=env or wait_env(),
                         timeout=900)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_lite(path, threads, iters, env):
    out = subprocess.run([os.path.join(BUILD, "mycel_lite_benchmark"), path, "--threads", str(threads),
                          "--iters", str(iters)], capture_output=True, text=True, env=env, timeout=900)
    if out.returncode:
        raise RuntimeError(out.stderr)
    m = re.search(r"p50 ([\d.]+) p90 ([\d.]+)", out.stdout)
    info = {"p50": float(m.group(1)), "p90": float(m.group(2))}
    info["load_ms"] = float(re.search(r"load_ms: ([\d.]+)", out.stdout).group(1))
    info["rss"] = float(re.search(r"peak_rss_mb: ([\d.]+)", out.stdout).group(1))
    info["cpu"] = float(re.search(r"cpu_ms_per_run: ([\d.]+)", out.stdout).group(1))
    info["threads"] = int(re.search(r"threads: (\d+)", out.stdout).group(1))
    return info


ALIASES = {"mobilenetv2": "mobilenet_v2"}


def med(rows, key):
    return statistics.median(r[key] for r in rows) if rows else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--models", default=",".join(SHAPES))
    ap.add_argument("--torch-python", default=sys.executable,
                    help="a Python that has torch (the eager baseline runs in its own process)")
    ap.add_argument("--passive", action="store_true",
                    help="no runtime spins: OMP_WAIT_POLICY=PASSIVE (lite, PyTorch), allow_spinning=0 (ONNX Runtime)")
    ap.add_argument("--lite-spin", type=int, default=0,
                    help="GOMP_SPINCOUNT for the lite runtime (0: the mode's policy, as the others)")
    ap.add_argument("--ort-no-spin", action="store_true",
                    help="ONNX Runtime without spinning (session.intra_op.allow_spinning=0)")
    a = ap.parse_args()
    omp_env = wait_env("PASSIVE" if a.passive else None)  # PyTorch's (and the export's)
    lite_env = wait_env("PASSIVE" if a.passive else None, a.lite_spin)
    ort_spin = not (a.passive or a.ort_no_spin)
    models = [ALIASES.get(m, m) for m in a.models.split(",")]
    check = subprocess.run([a.torch_python, "-c", "import torch"], capture_output=True)
    have_torch = check.returncode == 0  # not imported here: its own process
    with tempfile.TemporaryDirectory() as d:
        run_py(EXPORT.format(tests=os.path.join(ROOT, "tests", "python"),
                             shapes={m: SHAPES[m] for m in models}, out=d, int8=INT8))
        lib, tool = os.path.join(BUILD, "libmycel_lite.so"), os.path.join(BUILD, "mycel_lite_benchmark")
        stripped = os.path.join(d, "tool.stripped")  # the library links stripped (-s); the tool is stripped here
        tool_size = os.path.getsize(tool)
        if subprocess.run(["strip", "-o", stripped, tool], capture_output=True).returncode == 0:
            tool_size = os.path.getsize(stripped)
        print(f"libmycel_lite.so: {os.path.getsize(lib) / 2**20:.2f} MiB (stripped); "
              f"mycel_lite_benchmark: {tool_size / 1024:.0f} KiB (stripped)")
        waits = {"lite": omp_wait(lite_env), "ort": "its own pool, " + (
            "spins (allow_spinning, default)" if ort_spin else "no spinning (allow_spinning=0)"),
            "torch": omp_wait(omp_env)}
        for k, name in (("lite", "lite runtime"), ("ort", "ONNX Runtime"), ("torch", "PyTorch eager")):
            print(f"{name}: {a.threads} thread(s) requested; wait: {waits[k]}")
        seen = {"lite": set(), "ort": set(), "torch": set()}  # the thread counts each process reported
        print(f"threads {a.threads}, {a.rounds} rounds x {a.iters} runs, batch 1; median over rounds of each "
              "round's wall p50 and CPU ms per run (process CPU time / runs: on a loaded machine the cost "
              "without preemption; meaningful with --threads 1)\n")
        print("| model | lite p50 | lite p90 | lite cpu | load ms | peak RSS MiB | ort p50 | ort cpu | torch p50 | "
              "torch cpu | lite/ort (cpu) | lite/torch (cpu) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        int8_rows = []
        for m in models:
            lite, ort_, tor, lite8, ort8 = [], [], [], [], []
            for _ in range(a.rounds):
                lite.append(run_lite(f"{d}/{m}.mindir", a.threads, a.iters, lite_env))
                ort_.append(run_py(ORT.format(threads=a.threads, path=f"{d}/{m}.onnx", shape=SHAPES[m], iters=a.iters,
                                              spin=ort_spin)))
                if m in INT8:
                    lite8.append(run_lite(f"{d}/{m}_int8.mindir", a.threads, a.iters, lite_env))
                    ort8.append(run_py(ORT.format(threads=a.threads, path=f"{d}/{m}_int8.onnx", shape=SHAPES[m],
                                                  iters=a.iters, spin=ort_spin)))
                if have_torch:
                    tor.append(run_py(TORCH.format(bench=os.path.join(ROOT, "bench"), threads=a.threads, name=m,
                                                   shape=SHAPES[m], iters=a.iters), a.torch_python, omp_env))
            for k, rows in (("lite", lite), ("ort", ort_), ("torch", tor)):
                seen[k].update(r["threads"] for r in rows)
            lp, lc, op, oc = med(lite, "p50"), med(lite, "cpu"), med(ort_, "p50"), med(ort_, "cpu")
            tp, tc = med(tor, "p50"), med(tor, "cpu")
            print(f"| {m} | {lp:.3f} | {med(lite, 'p90'):.3f} | {lc:.3f} | {lite[0]['load_ms']:.1f} | "
                  f"{lite[0]['rss']:.0f} | {op:.3f} | {oc:.3f} | {tp:.3f} | {tc:.3f} | {lp / op:.2f} ({lc / oc:.2f}) | "
                  f"{lp / tp:.2f} ({lc / tc:.2f}) |", flush=True)
            if lite8:
                l8, l8c, o8, o8c = med(lite8, "p50"), med(lite8, "cpu"), med(ort8, "p50"), med(ort8, "cpu")
                int8_rows.append(f"| {m} | {l8:.3f} | {l8c:.3f} | {lc:.3f} | {o8:.3f} | {o8c:.3f} | {oc:.3f} | "
                                 f"{tc:.3f} | {lc / l8c:.2f} | {l8c / o8c:.2f} | {l8c / tc:.2f} |")
        print("\nthreads each process ran with: " + "; ".join(
            f"{k} {', '.join(map(str, sorted(v))) or '-'}" for k, v in seen.items()))
        if int8_rows:
            print("\nint8 (PTQ, min-max, 7-bit weights): lite int8 MINDIR vs lite fp32, ONNX Runtime on the QDQ "
                  "export and on fp32, torch fp32 eager; ms (cpu: CPU ms per run)")
            print("| model | lite int8 p50 | lite int8 cpu | lite fp32 cpu | ort int8 p50 | ort int8 cpu | ort fp32 cpu | "
                  "torch fp32 cpu | int8 speed-up (cpu) | lite int8/ort int8 (cpu) | lite int8/torch (cpu) |")
            print("|---|---|---|---|---|---|---|---|---|---|---|")
            print("\n".join(int8_rows), flush=True)


if __name__ == "__main__":
    main()
