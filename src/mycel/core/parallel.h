// The one intra-op thread pool: OpenMP, shared with oneDNN so the two never oversubscribe.
#pragma once
#include <cstdint>

#include <omp.h>

namespace mycel {

/// Elements below which a loop runs on the calling thread (spawning costs more than it saves).
inline constexpr int64_t kParallelGrain = 32768;

/// Number of threads the pool uses (1 inside a SerialScope that took effect).
int num_threads();
/// Sets the pool size (context.set_context(num_threads=...)).
void set_num_threads(int n);

/// Multiply-add equivalents below which a library primitive (oneDNN) runs on the calling thread
/// alone: 64K, a few µs of one core's work, where a parallel region's fork and join cost about
/// as much as they save. Measured on LeNet5 (bench/bench_contention.py): 64K equals "always
/// parallel" on an idle machine, 512K was 15% slower. MYCEL_SERIAL_WORK overrides it (0: always
/// parallel).
int64_t serial_work_threshold();

/// While alive, kernels of this thread run on one thread if `work` (multiply-add equivalents) is
/// below serial_work_threshold(): num_threads() reads 1, so oneDNN primitives are built, keyed and
/// run for one thread. Costs two ICV writes when it takes effect, nothing otherwise.
class SerialScope {
 public:
  explicit SerialScope(int64_t work);
  ~SerialScope();
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;

 private:
  int restore_ = 0;  // the OpenMP pool size to restore; 0 when this scope changed nothing
};

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
