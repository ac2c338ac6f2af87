// The one intra-op thread pool: OpenMP, shared with oneDNN so the two never oversubscribe.
#pragma once
#include <cstdint>

#include <omp.h>

namespace mycel {

/// Elements below which a loop runs on the calling thread (spawning costs more than it saves).
inline constexpr int64_t kParallelGrain = 32768;

/// Number of threads the pool uses.
int num_threads();
/// Sets the pool size (context.set_context(num_threads=...)).
void set_num_threads(int n);

/// Runs fn(begin, end) over [0, n) split in contiguous chunks; serial when n*cost < grain.
template <class Fn>
void parallel_for(int64_t n, int64_t cost_per_item, Fn&& fn) {
  if (n <= 0) return;
  int nt = num_threads();
  if (nt <= 1 || n * cost_per_item < kParallelGrain || omp_in_parallel()) {
    fn(int64_t(0), n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num(), T = omp_get_num_threads();
    int64_t chunk = (n + T - 1) / T;
    int64_t b = t * chunk, e = b + chunk < n ? b + chunk : n;
    if (b < e) fn(b, e);
  }
}

}  // namespace mycel
