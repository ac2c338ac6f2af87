// Keeps the intra-op pool's other CPUs awake around graph runs, without spinning on them.
//
// Between two steps of a training loop (Python, reading the loss back: 50-100 µs) OpenMP's
// worker threads stop spinning (GOMP_SPINCOUNT, python/mycel/__init__.py) and sleep, and the CPUs
// under them go idle (a VM's vCPU halts). The next step's first parallel launch then waits for a
// worker whose CPU must first be woken: 12-40 µs at the median, up to 200 µs (a quiet 2-CPU
// loop, docs/performance.md). A longer spin would keep the workers ready but takes the CPUs from
// whatever else runs (the data pipeline's threads in Model.train epochs). Keeper threads spin at
// SCHED_IDLE instead: any other thread that wants the CPU preempts them at once, but a CPU
// running one does not halt, so a worker's wake-up is an ordinary context switch (~5 µs).
// They spin while a Program runs and for a short linger after it, then sleep until the next run.
#pragma once

namespace mycel {

/// A Program run starts (run_starts true) or ends: keeper threads, one per pool thread beyond
/// the caller's (at most one per other CPU), spin from the start until a linger after the end
/// (MYCEL_CPU_KEEPER_US, default 2000), then sleep. Opt-in with MYCEL_CPU_KEEPER=1 (measured
/// slower on the harness's long steps, docs/perf_mlp.md); never under OMP_WAIT_POLICY=PASSIVE
/// (the user asked for no spinning) or with one pool thread. An atomic store and a clock read
/// when warm.
void keep_cpus_awake(bool run_starts);

/// Keeper threads started so far (tests).
int cpu_keepers_started();

}  // namespace mycel
