"""The harness's bf16 O2 training rows (issue 19: "bf16 O2: ResNet-18 and the transformer >= 3x
PyTorch float32 eager and >= 2x PyTorch autocast bf16, at equal accuracy"): Mycel's
`amp.build_train_network(net, opt, loss, level="O2")` in graph mode (bfloat16 compute, float32
master weights, batch-norm/softmax/loss in float32) against PyTorch float32 eager and PyTorch's
forward under `torch.autocast("cpu", dtype=torch.bfloat16)`, same weights and batch, a fresh
process per run, A B C A B C. Before timing, Mycel's first losses must agree with both PyTorch
runs within bfloat16's tolerance (common.BF16_LOSS_RTOL). Also the bf16 matmul peak through
Mycel's ops (oneDNN's bf16 primitive on bf16 tensors), beside the float32 one."""
import statistics

from common import BF16_LOSS_RTOL, BF16_STEPS, STEPS

VARIANTS = (("mycel", "O2"), ("torch", "fp32"), ("torch_autocast", "autocast"))


def loss_diff(name, mine, theirs, what):
    """The largest relative difference of the first losses; raises past the bf16 tolerance."""
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(mine, theirs))
    if worst > BF16_LOSS_RTOL:
        raise AssertionError(f"{name}: Mycel O2's losses {mine} differ from {what}'s {theirs} "
                             f"(relative {worst:.2e} > {BF16_LOSS_RTOL})")
    return worst


def rows(worker, names, policies, rounds, warmup, steps, torch_ok, tmp):
    """The bf16 rows of `names` (keys of BF16_STEPS); worker(framework, args, policy) runs one
    process and returns its JSON."""
    out = []
    for name in names:
        base = BF16_STEPS[name]
        init = f"{tmp}/{base}.npz"
        worker("mycel", ["init", base, init], "default")
        variants = VARIANTS if torch_ok else VARIANTS[:1]
        for policy in policies:
            row = {"workload": name, "base": base, "policy": policy, "batch": STEPS[base][1],
                   "unit": STEPS[base][2]}
            runs = {k: [] for k, _ in variants}
            for r in range(rounds):
                for key, mode in variants:
                    res = worker(key.split("_")[0], ["step", base, init, warmup, steps, mode], policy)
                    runs[key].append(res)
                    print(f"{name} [{policy}] round {r + 1} {key}: median step {res['median_s'] * 1e3:.2f} ms "
                          f"(threads {res['threads']['num_threads']})", flush=True)
                if torch_ok:  # every round's losses, not only the first
                    mine = runs["mycel"][-1]["losses"]
                    row["loss_rel_diff_fp32"] = max(row.get("loss_rel_diff_fp32", 0.0), loss_diff(
                        name, mine, runs["torch"][-1]["losses"], "PyTorch float32"))
                    row["loss_rel_diff_autocast"] = max(row.get("loss_rel_diff_autocast", 0.0), loss_diff(
                        name, mine, runs["torch_autocast"][-1]["losses"], "PyTorch autocast bf16"))
                    row["flops_per_step"] = runs["torch"][-1]["flops_per_step"]
            for key, rs in runs.items():
                meds = [x["median_s"] for x in rs]
                row[key] = {"median_s": statistics.median(meds), "run_medians_s": meds,
                            "threads": rs[0]["threads"]}
            row["mycel"]["compile_s"] = statistics.median(x["compile_s"] for x in runs["mycel"])
            row["mycel"]["losses"] = runs["mycel"][0]["losses"]
            out.append(row)
    return out


def matmul_peak(worker, info, n=2048):
    """float32 and bfloat16 matmul n^3 through Mycel's ops (best GFLOP/s of the runs so far)."""
    for dtype in ("float32", "bfloat16"):
        res = worker("mycel", ["matmul", n, dtype], "default")
        key = f"mycel_matmul_{dtype}_gflops"
        info[key] = max(res["gflops"], info.get(key, 0.0))


def needed_fractions(rs, peak):
    """The fraction of the bf16 peak each default-policy row's step would need for 2x PyTorch's
    autocast step and for 3x its float32 eager step (PyTorch's FLOP count of the step)."""
    out = []
    for r in rs:
        if r.get("policy") != "default" or not peak or "flops_per_step" not in r:
            continue
        need = lambda s, k: (f"{r['flops_per_step'] / (s['median_s'] / k) / 1e9 / peak * 100:.0f}%"
                             if s else "-")
        out.append(f"{r['base']}: {r['flops_per_step'] / 1e9:.1f} GFLOP a step, so 2x autocast needs "
                   f"{need(r.get('torch_autocast'), 2)} of the bf16 peak and 3x float32 eager "
                   f"{need(r.get('torch'), 3)} (Mycel: "
                   f"{r['flops_per_step'] / r['mycel']['median_s'] / 1e9 / peak * 100:.0f}%)")
    return (" Measured here: " + "; ".join(out) + "; a target above 100% is out of this CPU's "
            "reach.") if out else ""


def markdown(result):
    """The bf16 section of docs/performance.md. Its rows may come from another machine than the
    float32 ones (bf16_machine/bf16_date: a CPU with AVX512-BF16, merged into the results JSON)."""
    m, rs = result.get("bf16_machine", result["machine"]), result.get("bf16", [])
    if not rs and "bf16_peak_gflops" not in m:
        return []
    out = ["", "## Training steps, bf16 O2 (fixed batch, momentum SGD, float32 master weights)", ""]
    if "bf16_machine" in result:
        out += [f"Measured {result['bf16_date']} on {m.get('cpu', '?')}, {m['cores']} cores (AVX-512: "
                f"{'yes' if m['avx512f'] else 'no'}; bf16 hardware: {'yes' if m['bf16_hardware'] else 'no'}), "
                f"float32 peak {m['fp32_peak_gflops']:.1f} GFLOP/s. {result.get('bf16_note', '')} "
                f"Command: `{result.get('bf16_command', '')}`", ""]
    if "bf16_peak_gflops" in m:
        out.append(f"Measured bfloat16 peak (vdpbf16ps loop, bench/harness/bf16_peak.c, all cores): "
                   f"**{m['bf16_peak_gflops']:.1f} GFLOP/s** ({m['bf16_peak_gflops_1thread']:.1f} on one "
                   f"core), against {m['fp32_peak_gflops']:.1f} float32." +
                   (f" Mycel's matmul 2048^3: {m['mycel_matmul_float32_gflops']:.1f} GFLOP/s float32, "
                    f"{m['mycel_matmul_bfloat16_gflops']:.1f} bfloat16 (oneDNN's primitives)."
                    if "mycel_matmul_bfloat16_gflops" in m else ""))
        out.append("")
    out += ["Mycel: `amp.build_train_network(net, opt, loss, level=\"O2\")`, graph mode (convs, "
            "matmuls, activations, batch norm and layer norm in bfloat16, the norms with float32 "
            "statistics and parameters; the loss in float32; the optimizer updates float32 "
            "weights). PyTorch: the float32 eager step (the same as the "
            "float32 rows) and the forward under `torch.autocast(\"cpu\", dtype=torch.bfloat16)`. "
            "Same weights and batch; before timing, Mycel's first 3 losses must agree with both "
            f"within {BF16_LOSS_RTOL} relative (bfloat16's precision). Rows alternate the three "
            "A B C; figures as above. % of peak: PyTorch's FLOP count of the step over Mycel's "
            "step time, against the bfloat16 peak.", "",
            "How the step runs: convs and matmuls are oneDNN's native bf16 primitives "
            "(`ONEDNN_VERBOSE=1`: `brgconv:avx512_core_bf16` forward, `jit_bf16:avx512_core_bf16` "
            "backward, `brg:avx512_core_bf16` matmul). The bf16 weight gradient does not use oneDNN's "
            "threading: its jit_bf16 backward-weights kernel joins its threads with spin barriers and "
            "ran 4-6x slower on two threads than on one whenever another job held a core; each "
            "thread instead runs a one-thread primitive on its share of the batch into a float32 "
            "partial, added and rounded once (`dnnl_conv.cc`, ConvBwdSplitPrepared; the partials "
            "added, rounded and written into the plain bf16 weights in one pass of AVX-512 register "
            "tiles, `conv_weight_reorder.cc`, the same bits as oneDNN's reorder, which took 2.2 ms "
            "of a 512x512x3x3 gradient: 1.6-1.8 now; the weights' reorder into the forward layout "
            "likewise, 512x512x3x3 2.5-2.8 -> 0.7-1.5 ms on one core; the step's launch minima "
            "312 -> 308 and 334 -> 320 ms in two alternating runs, MYCEL_CONV_WEIGHT_LOOPS=0 for "
            "oneDNN's). The activations are NHWC from the stem to the mean pool and back: the "
            "convolutions' gradients, batch norm and its gradient, the mean pool's broadcast back "
            "and every elementwise op read and write it (docs/graph_mode_internals.md, Layouts; "
            "`norm_nhwc.cc` for the norms, channels in vector lanes, which suits the 4x4 planes "
            "where the NCHW loops walked 16 elements per channel), so oneDNN runs 24 reorders a "
            "step instead of 215, and batch norm and its gradient take 9.6 ms instead of 21.6 "
            "(alternating A/B, MYCEL_BF16_NHWC=0 for NCHW: launch minima 297.6 -> 265.8 ms, step "
            "median 357 -> 313). Batch norm and "
            "layer norm read and write bf16 activations with float32 statistics, parameters and "
            "sums (`norm_fast.cc`; layer norm's forward rows in AVX-512 lanes, `layer_norm_rows.cc`, "
            "the statistics of a block of 8 rows overlapping: 2048x128 on one core 97 -> 75 us in "
            "bf16 and 79 -> 60 in float32 against oneDNN's primitive, and no cache key, lock or "
            "heap allocation per launch; MYCEL_LAYER_NORM_ROWS=0 for oneDNN's): no cast on either "
            "side, where the "
            "float32 black-list norms cost 4 casts of each activation per step (84 of ResNet-18's "
            "431 launches, 16 of the transformer's 216). A relu's bf16 backward dy * (y > 0) is one "
            "pass over the bf16 activation and gradient (`fuse_mask_product.cc`: no bool mask, "
            "no cast). Each weight's bf16 copy is kept between steps: the optimizer's chain writes "
            "it in the pass that updates the float32 master weight and reads the bf16 gradient "
            "uncast, and the step's casts only check the weight's write version "
            "(`keep_master_copies.cc`: two launches and 12 bytes per element less per weight and "
            "step; the same bits; the copy is rounded in AVX2 lanes, `bf16_round_row.cc`, a "
            "128x512 weight's 26 -> 18 us on one core, MYCEL_EW_ROUND_ROW=0 for the scalar loop). "
            "A bf16 dense followed by relu is one oneDNN primitive with the "
            "relu post-op, and a bf16 weight gradient (x^T dy, K >= 1024 rows) splits along K "
            "over one-thread primitives into float32 partials, summed and rounded once in vector "
            "lanes, as the float32 ones do (`dnnl_matmul.cc`; oneDNN's own two-thread bf16 matmul "
            "ran 3-4x slower whenever another job held a core; the sum took 45 us of each FFN "
            "weight gradient's ~790 as a scalar loop, 8.5 now, `MYCEL_MATMUL_SPLIT_SUM=scalar` "
            "for A/B). Giving each thread a block of the product's rows over the whole K instead "
            "ran faster alone (512x2048x128 0.88 -> 0.72 ms) but slower in the step, where each "
            "thread's K rows of x and dy are the ones it wrote, still in its own cache. A dense "
            "layer's bias gradient (dy summed over the rows) runs in its weight gradient's launch, "
            "each thread summing the rows of dy its part has just read (`fuse_bias_grad.cc`, "
            "`matmul+sum`: 13 launches fewer in the transformer; `MYCEL_FUSE_BIAS_GRAD=0` for "
            "A/B); with the vector sum, the 13 weight gradients and their sums went from 4.93 to "
            "4.72-4.77 ms of launch minima (two threads, alternating A/B, load 5.7-6.1). Where the "
            "CPU has AVX512-BF16 a thread's share of a weight gradient with N <= M runs Mycel's "
            "own vdpbf16ps kernel, not a one-thread oneDNN primitive (`matmul_bf16_atb.cc`: rows "
            "of dy and x packed in pairs, a 12 x 32 float register tile, dy's column sums taken "
            "while it packs, and the next block's rows prefetched towards L2 while a block "
            "computes, "
            "as x and the relu output come cold from the forward pass: the FFN's 512x128 "
            "gradients 745-804 -> 727-749 us of minima, `MYCEL_MATMUL_BF16_ATB_PREFETCH=0`). "
            "Against oneDNN's primitives in the step (two threads, alternating A/B, loads 2-4.5): "
            "the eight 128x128 projections' gradients 1.69-1.71 -> 1.53-1.55 ms of minima "
            "(medians 4.11-4.20 -> 3.87-3.89), the two 512x128 780-816 -> 726-776 us; on one core "
            "with hot operands it runs 1-6% behind oneDNN's (88-92% of the core's bf16 peak), so "
            "128x512 (N > M, 6% behind, in the step within the A/B's noise) stays on oneDNN's "
            "(`MYCEL_MATMUL_BF16_ATB=0` for A/B). A relu mask product whose dy is the FFN's "
            "second dense layer's dx folds into that matmul: each thread runs a one-thread "
            "primitive on its block of rows and masks them while they are in its cache, the mask "
            "in AVX-512 lanes (`matmul+mask_product`, the same bits; 2 launches less, 53-97 us of "
            "minima a step (medians ~90), the mask no longer a 2 MiB pass of its own; "
            "`MYCEL_FUSE_MASK_MATMUL=0` for A/B; loads 3-4.5). A bf16 dense layer's dx = dy W "
            "(plain or so masked) and its weight and bias gradients dy^T x, sum(dy) run as one "
            "launch that reads dy once (`fuse_dense_grad_pair.cc`, `dense_grad_pair*`: each "
            "thread takes its rows in blocks of 256, runs dx's one-thread primitive on a block, "
            "then adds the block's share of dW into its float32 partial with the vdpbf16ps kernel "
            "while dy's rows are in its L2; the partials summed and rounded once; dx the same "
            "bits, dW and db within bf16's rounding of the unfused; 9 pairs, 18 launches less). "
            "Two threads, alternating A/B at loads 3.2-7: the nine pairs' launches 7.83-8.37 -> "
            "7.61-8.03 ms of minima in six of seven runs, the step's sum of launch minima "
            "0.02-1.8 ms less in all, its median (2-5x the minima on that host) less in 5 of 7; "
            "an FFN pair "
            "1.29-1.42 ms against 1.38-1.47 for its two launches, near what the two kernels give "
            "on hot operands (oneDNN's product at 93% of the bf16 peak, the weight gradient's "
            "at 87%), so the x and dy that came cold cost less than expected; the projections' "
            "pairs on par; on one thread the pairs' launches 15.97 -> 15.38 ms of minima (load "
            "4.5). Blocks of 512 rows did the same, 128 worse; prefetching the next "
            "block's rows gained nothing. A FFN's two pairs as one launch, each block of rows "
            "through both layers so dH is not read back from memory "
            "(`MYCEL_FUSE_DENSE_GRAD_CHAIN=1`, `dense_grad_chain{...}`, the same bits), was not "
            "faster (the two FFN launches 11.1 -> 11.0 ms and 7.0 -> 8.6 of minima at loads 5-6, "
            "28% slower in a third run): two 256 KiB partials and the blocks overflow a core's "
            "1 MiB L2; off by default. `MYCEL_FUSE_DENSE_GRAD_PAIR=0` for A/B, "
            "`MYCEL_DENSE_GRAD_PAIR_ROWS` for the block. The transformer's attention weights: "
            "softmax and its gradient read and write bf16 on the last axis and compute in float "
            "lanes (`softmax_bf16.cc`, AVX-512 where the CPU has it: the gradient 0.49 -> 0.28 ms "
            "a launch on one core, the forward 0.59 -> 0.31 ms, oneDNN's 0.60: its exp is 2^t "
            "by VREDUCEPS, a degree-4 polynomial and VSCALEFPS (`exp512_bf16.h`, at most 6.5e-6 "
            "relative over every float of its range, 300x under half a bf16 ulp: each weight "
            "within 1 ulp of the float64 softmax's rounding, 0.03% of them 1 ulp off), a row of "
            "up to 256 stays in registers between its three passes (0.44 ms) and, where the CPU "
            "has AVX512-BF16, VCVTNE2PS2BF16 rounds 32 weights in one instruction (0.40 -> 0.31 "
            "ms; a weight below 2^-126 becomes 0, MYCEL_SOFTMAX_BF16_CVT=0 for the integer "
            "rounding); the gradient's rows of up to 128 are widened once and rounded so too, "
            "0.28 -> 0.13 ms), q's 1/sqrt(d) scale "
            "multiplies its 128x128 weight and bias instead of the 2048x128 projection (0.11 ms "
            "a layer forward and backward), layer norm's backward sums dgamma and dbeta in float "
            "over blocks of 16 rows before its double sums and rounds its dx rows in AVX2 lanes "
            "(`bf16_round_row.cc`; 0.90 -> 0.80 ms for the four), then runs a row whose length "
            "is a multiple of 8 in two passes instead of eight (`layer_norm_grad_row_bf16.cc`: "
            "widen x and dy, the residual's add rounded, xhat, the two row sums and the dgamma/dbeta "
            "partials in AVX2 lanes, dx in the second pass, in AVX-512 lanes where the CPU has "
            "them; the same bits, MYCEL_LN_GRAD_ROWS=0 for the generic loop: 2048x128 on one core "
            "192 -> 145 (AVX2) -> 126 us; in the step on two threads, alternating A/B at load 2-3, "
            "medians 329-341 -> 242-259 us for the three with the add and 257-271 -> 193-205 "
            "for the plain one); the residual adds' same-shape bf16 operands are added in vector "
            "lanes with the scalar loop's bits (`binary_bf16.cc`, also sub and mul; "
            "MYCEL_BF16_BINARY_LANES=0 for A/B: 2048x128 on one core 64 -> 37 us, the step's six "
            "120-122 -> 95-102 us of medians), and "
            "the step's float32 -> bf16 input cast is a branch-free loop (0.25 -> 0.08 ms). "
            "Attention's head split and merge are strides, not copies: (N, L, heads, d) -> "
            "transpose (0, 2, 1, 3) next to a batched bf16 matmul becomes the matmul's 4-D "
            "memory descriptor (`fold_head_transposes.cc`; brgemm reads and writes the strided "
            "views at the contiguous speed), so q, k, v, the output and their gradients lose 8 "
            "transposes a layer (16 launches: 0.52 ms of one core's 33 ms of launch minima, "
            "1.08 ms of minima and 1.87 of medians on two threads of a loaded host, where the "
            "12 batched matmuls stayed at 5.1-5.4 ms of minima and 7.3 of medians either way). "
            "Where the CPU has AVX512-BF16 the per-head products whose b and c rows are "
            "contiguous run Mycel's own vdpbf16ps kernel, not oneDNN's brgemm "
            "(`matmul_heads_bf16.cc`: P.V forward, dV = P^T dO, dQ = dS K and dK = dS^T Q, 64 "
            "heads of 128x128 @ 128x32 a launch; each thread a range of heads; per head b packed "
            "in K-pairs once, a's pairs broadcast straight from its rows or, for P^T and dS^T, "
            "packed in 32-row blocks with in-lane unpacks; a 12 x 32 float register tile over all"
            " of K, rounded once by vcvtne2ps2bf16 into the strided output; q k^T and dO V^T stay"
            " on oneDNN). With a's 2 MiB in cache (the kernel's disabled bench test, alternating "
            "with oneDNN, load 7.5): one core 310 against 310 us (a's rows) and 357 against 398 "
            "(transposed), two threads 164 against 242 and 191 against 434 (88% and 76% of the "
            "bf16 peak; oneDNN's two-thread runs scaled poorly); in the step (two threads, "
            "alternating A/B, load 7.7) the eight launches' minima 2.05 -> 1.73 ms (P.V 195-201 "
            "-> 178-179 us, dQ 199 -> 187-188, dK 273-289 -> 216-250, dV 303-391 -> 221-314: P "
            "comes cold from the forward pass, and packing P^T is bound by its reads). "
            "`MYCEL_MATMUL_HEADS_BF16=0` for oneDNN's (A/B). "
            "A residual's gradient is summed inside the layer norm's backward "
            "(`fuse_add_norm_grad.cc`, the add's bf16 rounding kept: 3 launches less; a wash on "
            "one core, 2.62 -> 2.30 ms of medians for the adds and norms on two threads), and "
            "the mean pool's gradient divides before it broadcasts (0.07 -> 0.035 ms). "
            "MYCEL_FOLD_HEAD_TRANSPOSES=0 and MYCEL_FUSE_ADD_NORM_GRAD=0 turn the two passes "
            "off (A/B; the same bits either way). Each layer's scores product and its softmax, "
            "and the backward's dP = dO V^T and softmax's gradient, run as one launch each "
            "(`fuse_heads_softmax.cc`, `matmul_heads+softmax`, `matmul_heads+softmax_grad`): "
            "each thread multiplies its block of heads (a one-thread `matmul_strided` on the "
            "block's sub-views, at most 1 MiB of scores) and runs the row op on those rows while "
            "they are in its L2, the same bits as the two launches, only where the product has "
            "no other reader (MYCEL_FUSE_HEADS_SOFTMAX=0 for A/B; two threads, alternating A/B at "
            "load 3.8-4.1: the four launches 3.35-3.37 -> 3.13-3.17 ms of medians, 1.95 -> 1.56 "
            "of minima, the step's median 38.3-38.4 -> 37.8-38.1 ms on that loaded host; blocks "
            "of 256 KiB, several a thread, gained nothing). "
            "Each layer's attention backward then runs as one launch (`fuse_attention_heads.cc`, "
            "`attention_heads_grad`): each thread takes a range of heads and, per head, computes "
            "dP = dO V^T in Mycel's kernel (V^T packed in K-pairs by 16x16 transposes of 32-bit "
            "pairs), dS = P * (dP - rowsum(P * dP)) into a 32 KiB buffer of its own, dV = P^T dO "
            "(P now in L1/L2), dQ = dS K and dK = dS^T Q: dS never goes to memory and P comes "
            "from L3 once (MYCEL_FUSE_ATTENTION_HEADS=0 for the four launches; the tests found "
            "their bits; two threads, alternating A/B, 9 runs of 300 steps at loads 1.3-6.6: the "
            "backward attention's minima within -6..+4% of the four launches' (1664-1777 -> "
            "1674-1786 us for the two layers at load 1.3-2.1), its medians lower in 7 runs (by "
            "1-11%), and the minimum of the per-step launch sums 80-580 us lower in all 9, the "
            "other launches gaining from 2 MiB less written to L3; dV before the rows, reading P "
            "from L3, ran 3-5% slower). The forward's scores, softmax and P.V fuse likewise only "
            "with MYCEL_FUSE_ATTENTION_FWD=1 (`attention_heads`): it ran 8-10% slower than its "
            "two launches (960-969 -> 1039-1065 us of minima for the two layers), not understood "
            "yet: q k^T in Mycel's kernel (b transposed, K = 32) is 8% behind oneDNN's brgemm on "
            "one core (the 64 heads 336 against 311 us, 17 us of it the transposing pack) and on "
            "par on two (171 against 174), yet as launches of their own q k^T and dO V^T ran "
            "faster on oneDNN in the step (313 -> 336-349 us for the scores with their softmax; "
            "they stay there, MYCEL_MATMUL_HEADS_BF16_BT=1 moves them), and P.V read P from L3 at"
            " nearly its in-cache speed. The gains are small because these per-head products are "
            "compute bound (78-88% of the bf16 peak with operands in cache), not bound by the "
            "trip of P and dS to L3. "
            "What is left is matmuls: on one core "
            "they are "
            "25.2 of the step's 33.5 ms of launches, the forward projections at 92-94% of the "
            "core's bf16 peak, the weight gradients (a transposed operand) at 73-79% and the "
            "per-head attention matmuls (64 x 128x128x32) at 50-90%. A fused attention "
            "(`ops.flash_attention_score`, vdpbf16ps on bf16 pairs, the scores never stored; "
            "MultiheadAttention takes it with MYCEL_FLASH_ATTENTION=1) is not faster at these "
            "sizes yet: per layer on one core 1.15-1.3 ms forward against 1.23-1.4 for the "
            "composed matmul, softmax, matmul, and 2.6-3.0 backward against 1.74-2.1 (its "
            "backward recomputes the scores: five products against four), so the step keeps the "
            "composed attention (docs/nn.md, \"Fused attention\"). `bench/bench_step_ops.py "
            "<workload> --amp O2` lists the step launch by launch.",
            "",
            "The ceiling: this CPU's bf16 dot products (vdpbf16ps) reach about twice its float32 FMA "
            "rate (Zen 4 runs AVX-512 as two 256-bit halves, so float32 AVX-512 is no faster than "
            "AVX2), so a bf16 step is at most ~2x a float32 step that runs at the same fraction of "
            "peak; \"3x PyTorch float32 eager\" needs PyTorch's float32 step below 2/3 of Mycel's "
            "fraction of the bf16 peak." + needed_fractions(rs, m.get("bf16_peak_gflops")) +
            " On a CPU with AMX (the issue's kind) oneDNN's bf16 kernels run on tiles and Mycel's "
            "own AVX512-BF16 matmul kernels stand aside (`kernels/cpu/dnnl_isa.h`): measured on "
            "two cores of a Xeon with AMX, the transformer's O2 step ran 13.9 ms against PyTorch's "
            "54.8 float32 (3.95x) and 63.6 autocast (4.58x), ResNet-18's 503 against 752 and 480 "
            "on a host whose neighbours made every figure bimodal ([performance_amx.md]"
            "(performance_amx.md)).", "",
            "| workload | batch | policy | threads mycel/torch | Mycel O2 ms | PyTorch f32 eager ms | "
            "PyTorch autocast bf16 ms | vs f32 eager | vs autocast | Mycel % of bf16 peak | "
            "loss diff f32/autocast | Mycel compile s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rng = lambda s: (f"{s['median_s'] * 1e3:.2f} [{min(s['run_medians_s']) * 1e3:.2f}-"
                     f"{max(s['run_medians_s']) * 1e3:.2f}]") if s else "-"
    peak = m.get("bf16_peak_gflops")
    for r in rs:
        my, f32, ac = r["mycel"], r.get("torch"), r.get("torch_autocast")
        frac = (f"{r['flops_per_step'] / my['median_s'] / 1e9 / peak * 100:.0f}%"
                if peak and "flops_per_step" in r else "-")
        ratio = lambda s: f"{s['median_s'] / my['median_s']:.2f}x" if s else "-"
        diff = (f"{r['loss_rel_diff_fp32']:.1e}/{r['loss_rel_diff_autocast']:.1e}"
                if "loss_rel_diff_fp32" in r else "-")
        out.append(f"| {r['base']} bf16-O2 | {r['batch']} | {r['policy']} | {my['threads']['num_threads']}/"
                   f"{f32['threads']['num_threads'] if f32 else '-'} | {rng(my)} | {rng(f32)} | {rng(ac)} | "
                   f"{ratio(f32)} | {ratio(ac)} | {frac} | {diff} | {my['compile_s']:.2f} |")
    return out
