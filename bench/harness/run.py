"""The benchmark harness (issue 19 item 1): Mycel against PyTorch eager, each framework alone in
its own process with its own default thread settings, on the same weights and batch; Mycel's
loss must agree with PyTorch's over the first steps before any timing runs. Timed runs
alternate the frameworks (A B A B, `--rounds` rounds, a fresh process each) and report the
median of the per-run medians; the machine's measured float32 peak (an FMA loop,
bench/harness/fma_peak.c) gives each row's fraction of peak. Writes JSON and the markdown of
docs/performance.md.

    .venv/bin/python bench/harness/run.py [--quick] [--passive] [--only lenet5 ...] \
        [--json docs/performance.json] [--markdown docs/performance.md]
    .venv/bin/python bench/harness/run.py --render docs/performance.json   # markdown from the JSON
    .venv/bin/python bench/harness/run.py --only infer --json /tmp/p.json --markdown /tmp/p.md

The inference rows (`--only infer`, or one of their names) time a batch-1 forward in eval mode:
Mycel in graph mode, PyTorch under torch.no_grad() (its eager column) and torch.inference_mode(),
from the same weights and batch-norm statistics; the outputs must agree before timing.

The bf16 O2 rows (bench/harness/bf16.py; `--only bf16` for all four, or `resnet18_bf16` ...;
resnet18_bf16 and transformer_bf16 run by default where /proc/cpuinfo lists avx512_bf16 or
amx_bf16) time Mycel's amp O2 step against PyTorch float32 eager and PyTorch autocast bf16; there
the bf16 peak (bench/harness/bf16_peak.c) and Mycel's bf16 matmul are measured beside the float32
peak.

--passive adds, for both frameworks, rows run with OMP_WAIT_POLICY=PASSIVE (the default rows run
with the variable removed from the environment). PyTorch is a peer for benchmarks only; without
it the Mycel rows are still measured, with no agreement check.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import BF16_STEPS, INFER, INFER_RTOL, ROOT, STEPS  # noqa: E402
import bf16  # noqa: E402

PY = sys.executable
# PyTorch's side may run in an interpreter of its own (MYCEL_BENCH_TORCH_PYTHON): a machine whose
# PyTorch lives in another Python than Mycel's build, e.g. a bundle of Mycel's Python carried to a
# machine with AMX. That interpreter gets none of the variables that point at Mycel's.
TORCH_PY = os.environ.get("MYCEL_BENCH_TORCH_PYTHON", PY)
MYCEL_ONLY_ENV = ("PYTHONHOME", "PYTHONPATH", "LD_LIBRARY_PATH")


def torch_env(env):
    """env for a process of TORCH_PY: Mycel's interpreter variables dropped when it is another."""
    env = dict(env)
    if TORCH_PY != PY:
        for key in MYCEL_ONLY_ENV:
            env.pop(key, None)
    return env
LOSS_RTOL, LOSS_ATOL = 1e-3, 1e-4  # agreement of the first losses, Mycel vs PyTorch (float32)


def worker(framework, args, policy, timeout=1800):
    """Runs a worker in a fresh process; its last stdout line is its JSON result."""
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if policy == "passive":
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    script = os.path.join(HERE, f"worker_{framework}.py")
    py = PY
    if framework == "torch":
        py, env = TORCH_PY, torch_env(env)
    p = subprocess.run([py, script] + [str(a) for a in args], env=env, capture_output=True, text=True,
                       timeout=timeout, cwd=ROOT)
    if p.returncode != 0:
        raise RuntimeError(f"{framework} {' '.join(map(str, args))} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def have_torch():
    return subprocess.run([TORCH_PY, "-c", "import torch"], capture_output=True,
                          env=torch_env(os.environ)).returncode == 0


def machine_has_bf16():
    return any(f in flags_of_cpu() for f in (" avx512_bf16", " amx_bf16"))


def machine():
    """CPU model, cores, flags that matter, and the measured FMA peak."""
    info = {"python": platform.python_version(), "cores": len(os.sched_getaffinity(0))}
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and "cpu" not in info:
                    info["cpu"] = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    flags = line
    except OSError:
        pass
    info["avx512f"] = " avx512f" in flags
    info["bf16_hardware"] = any(f in flags for f in (" avx512_bf16", " amx_bf16"))
    measure_peak(info)
    if info["bf16_hardware"]:
        bf16.matmul_peak(worker, info)
    return info


def measure_peak(info):
    """The FMA loop's best of 3 runs, kept as the best so far in info (the harness measures at its
    start and again at its end: on a shared machine, other jobs only ever lower the figure)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "fma_peak")
        subprocess.run([cc, "-O3", "-mavx2", "-mfma", "-fopenmp", os.path.join(HERE, "fma_peak.c"), "-o", exe],
                       check=True)
        runs = [json.loads(subprocess.run([exe], capture_output=True, text=True, check=True).stdout)
                for _ in range(3)]
    # fp32_*: the faster of the AVX2 and the AVX-512 loop (fma_peak.c); the two kept beside it.
    for key in ("fp32_gflops", "fp32_gflops_1thread", "avx2_gflops", "avx2_gflops_1thread",
                "avx512_gflops", "avx512_gflops_1thread"):
        name = key.replace("gflops", "peak_gflops")
        info[name] = max([r[key] for r in runs] + [info.get(name, 0)])
    if " avx512_bf16" in flags_of_cpu():  # the vdpbf16ps loop: needs the instruction, and gcc >= 10
        with tempfile.TemporaryDirectory() as d:
            exe = os.path.join(d, "bf16_peak")
            subprocess.run([cc, "-O3", "-mavx512f", "-mavx512bf16", "-fopenmp",
                            os.path.join(HERE, "bf16_peak.c"), "-o", exe], check=True)
            runs = [json.loads(subprocess.run([exe], capture_output=True, text=True, check=True).stdout)
                    for _ in range(3)]
        for key in ("bf16_gflops", "bf16_gflops_1thread"):
            info[key.replace("gflops", "peak_gflops")] = max([r[key] for r in runs]
                                                             + [info.get(key.replace("gflops", "peak_gflops"), 0)])


def flags_of_cpu():
    try:
        with open("/proc/cpuinfo") as f:
            return next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return ""


def check_agreement(name, mine, theirs):
    """Mycel's first losses must match PyTorch's from the same weights and batch."""
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(mine["losses"], theirs["losses"]))
    for a, b in zip(mine["losses"], theirs["losses"]):
        if abs(a - b) > LOSS_ATOL + LOSS_RTOL * abs(b):
            raise AssertionError(f"{name}: Mycel's losses {mine['losses']} differ from PyTorch's "
                                 f"{theirs['losses']} (tolerance {LOSS_RTOL} relative)")
    return worst


def summarize(runs):
    meds = [r["median_s"] for r in runs]
    return {"median_s": statistics.median(meds), "run_medians_s": meds, "threads": runs[0]["threads"]}


def step_rows(names, policies, rounds, warmup, steps, torch_ok, tmp):
    rows = []
    for name in names:
        init = os.path.join(tmp, f"{name}.npz")
        worker("mycel", ["init", name, init], "default")
        for policy in policies:
            print(f"{name} [{policy}]: checking agreement", flush=True)
            check = {"mycel": worker("mycel", ["step", name, init, 0, 1], policy)}
            row = {"workload": name, "policy": policy, "batch": STEPS[name][1], "unit": STEPS[name][2]}
            if torch_ok:
                check["torch"] = worker("torch", ["step", name, init, 0, 1], policy)
                row["loss_max_rel_diff"] = check_agreement(name, check["mycel"], check["torch"])
                row["flops_per_step"] = check["torch"]["flops_per_step"]
            runs = {k: [] for k in check}
            for r in range(rounds):  # A B A B: both see the same drift in machine load
                for fw in runs:
                    res = worker(fw, ["step", name, init, warmup, steps], policy)
                    if torch_ok:  # every timed run must agree too, not only the check runs
                        check_agreement(name, res if fw == "mycel" else check["mycel"],
                                        check["torch"] if fw == "mycel" else res)
                    runs[fw].append(res)
                    print(f"  round {r + 1} {fw}: median step {res['median_s'] * 1e3:.2f} ms "
                          f"(threads {res['threads']['num_threads']})", flush=True)
            for fw, rs in runs.items():
                row[fw] = summarize(rs)
            row["mycel"]["compile_s"] = statistics.median(r["compile_s"] for r in runs["mycel"])
            rows.append(row)
    return rows


def check_outputs(name, mine, theirs):
    """Mycel's inference output must match PyTorch's from the same weights and input."""
    import numpy as np
    a, b = np.asarray(mine["output"]), np.asarray(theirs["output"])
    scale = max(float(np.abs(b).max()), 1e-6)
    err = float(np.abs(a - b).max()) / scale
    if a.shape != b.shape or err > INFER_RTOL:
        raise AssertionError(f"{name}: Mycel's output differs from PyTorch's ({theirs.get('mode')}): "
                             f"max |diff| / max |ref| = {err:.2e} > {INFER_RTOL}")
    return err


def infer_rows(names, policies, rounds, warmup, iters, torch_ok, tmp):
    """Batch-1 eval forward: Mycel graph mode against PyTorch no_grad and inference_mode,
    alternating, a fresh process each; outputs checked against PyTorch's in every run."""
    rows = []
    for name in names:
        init = os.path.join(tmp, f"{name}.npz")
        worker("mycel", ["init_infer", name, init], "default")
        variants = [("mycel", ["infer", name, init, warmup, iters])]
        if torch_ok:
            variants += [(f"torch_{m}", ["infer", name, init, warmup, iters, m])
                         for m in ("no_grad", "inference_mode")]
        for policy in policies:
            runs = {k: [] for k, _ in variants}
            row = {"workload": name, "batch": 1, "input": list(INFER[name][0]), "policy": policy}
            for r in range(rounds):
                for key, args in variants:
                    res = worker(key.split("_")[0], args, policy)
                    runs[key].append(res)
                    print(f"{name} [{policy}] round {r + 1} {key}: median {res['median_s'] * 1e3:.3f} ms "
                          f"({res['n']} calls, threads {res['threads']['num_threads']})", flush=True)
                if torch_ok:  # every run's output, against the no_grad run of the same round
                    ref = runs["torch_no_grad"][-1]
                    row["output_max_rel_diff"] = max(row.get("output_max_rel_diff", 0.0),
                                                     check_outputs(name, runs["mycel"][-1], ref),
                                                     check_outputs(name, runs["torch_inference_mode"][-1], ref))
            for key, rs in runs.items():
                row[key] = summarize(rs)
            row["mycel"]["compile_s"] = statistics.median(r["compile_s"] for r in runs["mycel"])
            rows.append(row)
    return rows


def epoch_rows(policies, rounds, torch_ok, tmp, sink_size, limit, data_workers=0):
    init = os.path.join(tmp, "lenet5.npz")
    if not os.path.exists(init):
        worker("mycel", ["init", "lenet5", init], "default")
    rows = []
    for policy in policies:
        variants = [("mycel", ["epoch", init, -1, limit, data_workers]),
                    ("mycel_sink", ["epoch", init, sink_size, limit, data_workers])]
        if torch_ok:
            variants.append(("torch", ["epoch", init, limit]))
        runs = {k: [] for k, _ in variants}
        for r in range(rounds):
            for key, args in variants:
                res = worker(key.split("_")[0], args, policy)
                runs[key].append(res)
                print(f"fashion epoch [{policy}] round {r + 1} {key}: {res['images_per_s']:.0f} img/s"
                      + (f" (fixed-batch step {res['step_images_per_s']:.0f} img/s, as a throughput "
                         f"{res['step_throughput_images_per_s']:.0f})" if "step_images_per_s" in res else ""),
                      flush=True)
        row = {"workload": "fashion_epoch", "policy": policy, "batch": 64, "sink_size": sink_size,
               "batches": limit or None}
        for key, rs in runs.items():
            row[key] = {"images_per_s": statistics.median(r["images_per_s"] for r in rs),
                        "run_images_per_s": [r["images_per_s"] for r in rs], "threads": rs[0]["threads"],
                        "data_workers": rs[0].get("data_workers")}
            for f in ("step_images_per_s", "step_throughput_images_per_s"):
                if f in rs[0]:
                    row[key][f] = statistics.median(r[f] for r in rs)
            if "step_throughput_images_per_s" in rs[0]:
                # each run's epoch over its own process's step (not another process's: on a
                # shared host two processes can run at different speeds), then the median
                row[key]["epoch_over_step_throughput"] = statistics.median(
                    r["images_per_s"] / r["step_throughput_images_per_s"] for r in rs)
        rows.append(row)
    return rows


def markdown(result):
    m = result["machine"]
    peak = m["fp32_peak_gflops"]
    out = ["# Performance", "",
           "Generated by `bench/harness/run.py` (do not edit by hand; rerun it). "
           f"Measured {result['date']} on {m.get('cpu', '?')}, {m['cores']} cores "
           f"(AVX-512: {'yes' if m['avx512f'] else 'no'}; bf16 hardware: "
           f"{'yes' if m['bf16_hardware'] else 'no'}), PyTorch {result.get('torch_version', 'not installed')} CPU. "
           f"{result['note']}", "",
           f"Measured float32 peak (FMA loop, all cores): **{peak:.1f} GFLOP/s** "
           f"({m['fp32_peak_gflops_1thread']:.1f} on one core; best of the runs at the start and the end, "
           "so a loaded machine lowers it and raises the fractions of peak"
           + (f"; the faster of AVX2 {m['avx2_peak_gflops']:.1f} and AVX-512 {m['avx512_peak_gflops']:.1f} "
              "GFLOP/s, bench/harness/fma_peak.c" if m.get("avx512_peak_gflops") else
              "; AVX2" if "avx2_peak_gflops" in m else "; AVX2 only, the harness of that run") +
           "). bfloat16 peak: "
           + (f"{m['bf16_peak_gflops']:.1f} GFLOP/s (see the bf16 section)." if "bf16_peak_gflops" in m else
              "see the bf16 section." if m["bf16_hardware"] else
              "not measurable on this CPU (no AVX512-BF16 or AMX: oneDNN emulates bfloat16)."), "",
           "Each framework runs alone in a fresh process with its own default thread settings (the "
           "thread counts below are read back from each framework); `passive` rows set "
           "OMP_WAIT_POLICY=PASSIVE for both. Rows alternate the frameworks A B A B over "
           f"{result['rounds']} rounds; a figure is the median of the per-run median step times "
           "(the range of the runs in brackets). Before timing, Mycel's first "
           f"3 losses from the shared weights and batch must match PyTorch's (relative {LOSS_RTOL}).", ""]
    if result["steps"]:
        out += ["## Training steps (fixed batch, float32, momentum SGD)", "",
                "Where a step spends its time, launch by launch: [perf_lenet5.md](perf_lenet5.md) "
                "(lenet5), [perf_mlp.md](perf_mlp.md) (mlp), [perf_resnet.md](perf_resnet.md) "
                "(resnet18), [perf_transformer.md](perf_transformer.md) (transformer). Between steps the OpenMP workers sleep and their CPUs go idle; "
                "`MYCEL_CPU_KEEPER=1` keeps those CPUs from halting with SCHED_IDLE keeper threads "
                "(`src/mycel/core/cpu_keeper.h`: a step's first parallel launch waits 4-8 µs for the "
                "worker instead of 12-40 µs), off by default: on this machine ResNet-18's step took "
                "600 against 534 ms with them and the MLP's was no faster "
                "([perf_mlp.md](perf_mlp.md), perf24). Momentum's update runs as one register loop, "
                "also on each weight gradient's tile in the MLP's fused dW launches "
                "(`MYCEL_MOMENTUM_LANES=0`: the chain interpreter, for A/B; perf_mlp.md, perf39).", "",
                "| workload | batch | policy | threads mycel/torch | Mycel graph ms | PyTorch eager ms | "
                "speed-up | Mycel % of peak | loss diff | Mycel compile s |",
                "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["steps"]:
        my, th = r["mycel"], r.get("torch")
        rng = lambda s: f"{s['median_s'] * 1e3:.2f} [{min(s['run_medians_s']) * 1e3:.2f}-{max(s['run_medians_s']) * 1e3:.2f}]"
        frac = (f"{r['flops_per_step'] / my['median_s'] / 1e9 / peak * 100:.0f}%" if "flops_per_step" in r else "-")
        out.append(f"| {r['workload']} | {r['batch']} | {r['policy']} | {my['threads']['num_threads']}/"
                   f"{th['threads']['num_threads'] if th else '-'} | {rng(my)} | {rng(th) if th else '-'} | "
                   f"{th['median_s'] / my['median_s']:.2f}x | {frac} | "
                   f"{r.get('loss_max_rel_diff', float('nan')):.1e} | {my['compile_s']:.2f} |" if th else
                   f"| {r['workload']} | {r['batch']} | {r['policy']} | {my['threads']['num_threads']}/- | {rng(my)} | - | - | {frac} | - | {my['compile_s']:.2f} |")
    out += bf16.markdown(result)
    if result.get("infer"):
        out += ["", "## Batch-1 inference (eval mode, float32)", "",
                "Mycel: `net.set_train(False)`, graph mode, one call per forward (`net(x).asnumpy()`). "
                "PyTorch: `eval()` under `torch.no_grad()` (the eager column of the ratio) and under "
                "`torch.inference_mode()`. Same weights and random batch-norm statistics; the outputs "
                f"agree within {INFER_RTOL} of the largest |output| before timing. Latency: median of "
                "per-run median call times [range]; compile: the first call's extra time.", "",
                "How Mycel's eval graph runs a batch-1 forward: each conv2d -> BatchNorm2d folds into one "
                'convolution on weights w * s and bias (b - mean) * s + beta, refolded only when a source '
                'Parameter changes (docs/graph_mode_internals.md); the following ReLU/ReLU6 is the '
                "convolution's post-op; activations stay in the CPU's channel-blocked layout between "
                'convolutions (nChw8c on AVX2 and on AMD Zen 4, NHWC on other AVX-512 CPUs); on nChw8c, '
                '3x3 stride-1 convolutions run Winograd F(4x4) or F(2x2) (planes with many tiles in '
                'per-thread blocks of 256 KiB: the three steps on one thread, V and M in its L2, no '
                "barrier between them; the blocks split the tiles evenly and each block's GEMM groups of "
                'at most 6 tiles are even too, so that no block runs a 1-tile group that reads all of U '
                'for one tile, as the 49-tile planes did; per-launch minima against the old split '
                '(`MYCEL_WINOGRAD_EVEN=0`), alternating, load 2.5-7: the 256-channel layers at 14x14 '
                '0.88-0.96x on one thread and 0.80-0.88x on two (e.g. 810/646/665 -> 644/558/584 us), the '
                '128-channel ones at 28x28 0.88-1.14x, within the noise) and, on AVX2, small planes the '
                'streamed direct kernel (docs/edge.md); on Zen 4 the other 3x3 convolutions with output '
                "planes up to 16x16 (stride 2, ResNet's 512 channels at 7x7 or 4x4) run oneDNN's AVX-512 "
                'brgconv with a reorder to and from NHWC on each side (one thread, per launch: 2.51 -> '
                '2.01 ms at 7x7, 1.13 -> 0.83 at 4x4, the stride-2 ones 5-30% faster than the AVX2 jit '
                "kernel or the streamed kernel), the rest oneDNN's AVX2 jit kernels on nChw8c. "
                "`bench/bench_infer_ops.py <workload>` lists a row's launches with their times "
                '(mycel.Profiler); tests/python/test_fold_batch_norm.py checks that the whole folded '
                'ResNet-18 and MobileNetV2 graphs equal the eager forward. Each basic block\'s '
                'residual add and its ReLU are post-ops of the block\'s second convolution '
                '(`conv2d+batch_norm+add+relu`, the shortcut its last operand, read in nChw8c; with a '
                'projection shortcut the 3x3 takes it, not the 1x1): Winograd adds it in its output '
                'transform, the 512-channel brgconv in its NHWC -> nChw8c reorder loop, other kernels by '
                'one add+relu loop in the same launch; and the global average pooling reads the blocked '
                'layout (the lite runtime\'s loop), so no to_nchw precedes it. resnet18_b1 runs 23 '
                'launches instead of 32: gone are 7 add+relu launches (one thread, minima 9.7-36.9 us), '
                'the last add+relu+mean (25.4) and two to_nchw (17, 47); the mean costs 4.9 us and the '
                'fused convolutions are within the noise of the plain ones. A/B alternating '
                '(`bench/bench_infer_ops.py resnet18_b1`, fused vs `MYCEL_FUSE_RESIDUAL=0 '
                'MYCEL_MEAN_HW_BLOCKED=0`, the switches that turn each off): one thread, load 4-5, sum of '
                'launch minima 20.40-20.66 against 20.25-21.28 ms (4 pairs); two threads under '
                '`chrt -f 10`, load 6-9, the call wall minimum lower in 6 of 8 pairs (11.66-17.37 against '
                '12.48-17.66 ms); at the raised priority in a quiet moment two threads ran a call in '
                '11.3-11.5 ms (launch minima 10.9), so little is left between launches. This harness '
                '(rows resnet18_b1 and resnet18_cifar_b1) under `chrt -f 10` for both frameworks, load '
                '7-11, alternating: fused 11.91 and 11.99 ms against PyTorch no_grad 25.79 and 26.41 '
                '(0.46x, 0.45x; CIFAR 0.42x, 0.37x), both switches off 15.37 against 32.37 (0.47x; '
                'CIFAR 0.41x): within the noise of a loaded 2-vCPU machine, so the quiet machine has '
                'the last word (tests/python/test_fuse_residual.py). Tried and left: Winograd F(4x4) '
                'for the 256-channel layers at 14x14 (`MYCEL_WINOGRAD_RULE=10,6,10`, 9.4 MB of '
                'transformed weights) ran 0.98-1.30 ms against F(2x2)\'s 1.04-1.08 on one thread and '
                '621-862 us against 551-618 on two (per-launch minima, 2 alternating pairs).', "",
                "Where resnet18_b1's time goes on one thread (`bench/bench_infer_ops.py resnet18_b1 "
                '--threads 1`, per-launch minima, load 3-7, 20.4-20.9 ms in all): the 7x7 stem 2.06 ms, '
                'the four 64-channel Winograd convolutions at 56x56 0.72-0.77 each, the three 128-channel '
                'ones at 28x28 0.64-0.77, the three 256-channel ones at 14x14 (F(2x2)) 1.02-1.15, the '
                'three 512-channel ones at 7x7 (brgconv) 1.92-2.09, the stride-2 3x3 ones 1.03-1.09, the '
                '1x1 shortcuts 0.14-0.16, the classifier 0.21, max pool 0.12-0.16, every add+relu 8-40 '
                'us (now in the convolutions, above). The direct convolutions (stem, stride 2, 7x7) run at about the FMA peak of one core '
                '(115.6 MMAC in 1.92 ms), so only fewer multiplies make them faster; the 7x7 layers are '
                '29% of the forward. Tried and taken out (branch `perf26-fly`, tests pass): Winograd '
                'F(2x2) at 7x7 with the plain taps kept and transformed per call, 16 output channels at a '
                'time into an L2-sized U chunk, then an AVX-512 GEMM with all 16 tiles in 16 zmm '
                'accumulators (256 multiplies per channel pair against 441, and no more bytes than the '
                "direct kernel's, where the stored F(2x2) weights, 16.7 MB, ran at 3.2-3.8 ms). It took "
                "2.5-2.9 ms against brgconv's 2.0-2.2 (one thread, the same weights in L3, load 7): the "
                'transform alone cost about 1 ms (16 zmm stores of U per channel for 9 loads of taps, 16 '
                'MB of U written per call) and the GEMM 1.45 ms.', "",
                "| workload | input | policy | threads mycel/torch | Mycel graph ms | PyTorch no_grad ms | "
                "PyTorch inference_mode ms | Mycel / no_grad | output diff | Mycel compile s |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for r in result["infer"]:
            my, ng, im = r["mycel"], r.get("torch_no_grad"), r.get("torch_inference_mode")
            rng = lambda s: (f"{s['median_s'] * 1e3:.3f} [{min(s['run_medians_s']) * 1e3:.3f}-"
                             f"{max(s['run_medians_s']) * 1e3:.3f}]") if s else "-"
            out.append(f"| {r['workload']} | {'x'.join(map(str, r['input']))} | {r['policy']} | "
                       f"{my['threads']['num_threads']}/"
                       f"{ng['threads']['num_threads'] if ng else '-'} | {rng(my)} | {rng(ng)} | {rng(im)} | "
                       + (f"{my['median_s'] / ng['median_s']:.2f}x | {r['output_max_rel_diff']:.1e}" if ng else "- | -")
                       + f" | {my['compile_s']:.2f} |")
    if result.get("epochs"):
        first = result["epochs"][0].get("batches")
        out += ["", "## LeNet5 on Fashion-MNIST, one epoch end to end (batch 64" +
                (f", first {first} batches only" if first else "") + ")", "",
                "Mycel: `Model.train` over the MindData pipeline (MnistDataset, Resize, Rescale, "
                "Normalize, HWC2CHW, batch), graph mode, after a 20-step warm-up train; `sink` is "
                "`dataset_sink_mode=True` with the given sink_size. The fixed-batch column is the same "
                "train network's step on one batch, in the same process (the median of 50 steps, each "
                "read back; the last column: 200 more steps / their total time, the statistic of the "
                "epoch's figure, each run's epoch over its own process's step, the median of the runs). "
                "Under OMP_WAIT_POLICY=PASSIVE the batches are built one ahead on a builder thread "
                "(MYCEL_DATA_LOOKAHEAD; its OpenMP threads sleep in the step's barriers and leave the "
                "cores idle for it); with the default waits each is built on the loop's thread between "
                "two steps (docs/training.md, \"Where an epoch's time goes\"). The image chain runs as one "
                "pass per image written into the batch (Resize's bilinear taps, its uint8 rounding and the "
                "two Rescales in one kernel, the same bytes as the transforms one by one; docs/dataset.md, "
                "\"Row pass\"). PyTorch: a plain loop over "
                "the preprocessed images held in memory (no DataLoader).", "",
                "| policy | Mycel Model.train img/s | Mycel sink img/s | Mycel fixed-batch step img/s | "
                "epoch / step | PyTorch loop img/s | Mycel / PyTorch | epoch / step throughput |",
                "|---|---|---|---|---|---|---|---|"]
        for r in result["epochs"]:
            my, sk, th = r["mycel"], r["mycel_sink"], r.get("torch")
            tput = (f" {my['epoch_over_step_throughput'] * 100:.0f}% / "
                    f"{sk['epoch_over_step_throughput'] * 100:.0f}% (sink) |"
                    if "epoch_over_step_throughput" in my and "epoch_over_step_throughput" in sk else " - |")
            out.append(f"| {r['policy']} | {my['images_per_s']:.0f} | {sk['images_per_s']:.0f} | "
                       f"{my['step_images_per_s']:.0f} | {my['images_per_s'] / my['step_images_per_s'] * 100:.0f}% / "
                       f"{sk['images_per_s'] / my['step_images_per_s'] * 100:.0f}% (sink) | "
                       f"{th['images_per_s']:.0f} | {max(my['images_per_s'], sk['images_per_s']) / th['images_per_s']:.2f}x |"
                       + tput if th else f"| {r['policy']} | {my['images_per_s']:.0f} | {sk['images_per_s']:.0f} | "
                       f"{my['step_images_per_s']:.0f} | - | - | - |" + tput)
    out += ["", "Command: `" + result["command"] + "`", ""]
    return "\n".join(out)


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 round, 3 warm-up and 10 timed steps")
    ap.add_argument("--passive", action="store_true", help="add OMP_WAIT_POLICY=PASSIVE rows")
    ap.add_argument("--passive-only", action="store_true",
                    help="only OMP_WAIT_POLICY=PASSIVE rows (a loaded machine: spinning threads that "
                         "lose their core make the default rows measure the scheduler)")
    ap.add_argument("--only", action="append",
                    choices=sorted(STEPS) + ["bf16"] + sorted(BF16_STEPS) + ["epoch", "infer"] + sorted(INFER))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--infer-warmup", type=int, default=20)
    ap.add_argument("--infer-iters", type=int, default=1000,
                    help="timed batch-1 calls per run (fewer if they pass 3 s, never under 10)")
    ap.add_argument("--sink-size", type=int, default=100)
    ap.add_argument("--epoch-batches", type=int, default=0,
                    help="time only the first N batches of the epoch (0: all 937)")
    ap.add_argument("--data-workers", type=int, default=0,
                    help="Mycel's pipeline num_parallel_workers in the epoch rows (0: its default)")
    ap.add_argument("--note", default="The machine was shared with other jobs while measuring: figures are noisy.")
    ap.add_argument("--json", default=os.path.join(ROOT, "docs", "performance.json"))
    ap.add_argument("--markdown", default=os.path.join(ROOT, "docs", "performance.md"))
    ap.add_argument("--render", metavar="JSON", help="only regenerate the markdown from a results JSON")
    args = ap.parse_args(argv)
    if args.render:
        with open(args.render) as f:
            write_atomic(args.markdown, markdown(json.load(f)))
        return None
    rounds, warmup, steps = (1, 3, 10) if args.quick else (args.rounds, args.warmup, args.steps)
    policies = ["passive"] if args.passive_only else ["default"] + (["passive"] if args.passive else [])
    torch_ok = have_torch()
    bf16_default = ["resnet18_bf16", "transformer_bf16"] if machine_has_bf16() else []
    selected = args.only or sorted(STEPS) + bf16_default + ["epoch", "infer"]
    if "infer" in selected:
        selected = [n for n in selected if n != "infer"] + sorted(INFER)
    if "bf16" in selected:
        selected = [n for n in selected if n != "bf16"] + sorted(BF16_STEPS)
    result = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "command": " ".join(["bench/harness/run.py"] + (argv if argv is not None else sys.argv[1:])),
              "rounds": rounds, "warmup": warmup, "steps": steps, "note": args.note}
    result["machine"] = machine()
    print(f"machine: {result['machine']}", flush=True)
    if torch_ok:
        result["torch_version"] = subprocess.run([TORCH_PY, "-c", "import torch; print(torch.__version__)"],
                                                 env=torch_env(os.environ),
                                                 capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        result["steps"] = step_rows([n for n in selected if n in STEPS], policies, rounds, warmup, steps,
                                    torch_ok, tmp)
        result["bf16"] = bf16.rows(worker, [n for n in selected if n in BF16_STEPS], policies, rounds, warmup,
                                   steps, torch_ok, tmp)
        infer_warmup, infer_iters = (5, 50) if args.quick else (args.infer_warmup, args.infer_iters)
        result["infer"] = infer_rows([n for n in selected if n in INFER], policies, rounds, infer_warmup,
                                     infer_iters, torch_ok, tmp)
        result["epochs"] = epoch_rows(policies, rounds, torch_ok, tmp, args.sink_size,
                                      args.epoch_batches, args.data_workers) if "epoch" in selected else []
    measure_peak(result["machine"])
    write_atomic(args.json, json.dumps(result, indent=1) + "\n")
    write_atomic(args.markdown, markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
