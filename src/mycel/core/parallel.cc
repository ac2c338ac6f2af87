#include "mycel/core/parallel.h"

#include <pthread.h>

#include <atomic>
#include <cstdlib>

#include "mycel/core/denormals.h"
#include "mycel/core/error.h"

namespace mycel {
namespace {
std::atomic<int> g_threads{0};
thread_local int t_serial_depth = 0;  // > 0 inside a SerialScope that took effect
std::atomic<bool> g_forked_child{false};

// After fork() the child has only the forking thread, but libgomp still counts its pool's
// threads as there: the child's next parallel region waits for them forever (a multiprocessing
// worker forked from a training process hung on its first op). The child runs on one thread,
// as PyTorch's forked children do.
void one_thread_in_child() {
  g_forked_child.store(true, std::memory_order_relaxed);
  g_threads.store(1, std::memory_order_relaxed);
  omp_set_num_threads(1);
}

const bool g_fork_handler = [] {
  pthread_atfork(nullptr, nullptr, one_thread_in_child);
  return true;
}();

int64_t read_threshold() {
  if (const char* s = std::getenv("MYCEL_SERIAL_WORK")) {
    char* end = nullptr;
    long long v = std::strtoll(s, &end, 10);
    if (end != s && v >= 0) return v;
  }
  return int64_t(1) << 16;
}
}  // namespace

int num_threads() {
  if (t_serial_depth > 0) return 1;
  int n = g_threads.load(std::memory_order_relaxed);
  if (n == 0) {
    n = omp_get_max_threads();
    g_threads.store(n, std::memory_order_relaxed);
  }
  return n;
}

void set_num_threads(int n) {
  if (n < 1) n = 1;
  MYCEL_CHECK(n == 1 || !g_forked_child.load(std::memory_order_relaxed), RuntimeError,
              "set_num_threads(", n,
              "): this process was forked from one that uses OpenMP threads, and libgomp "
              "cannot start a pool in a forked child; it runs on one thread (start workers "
              "with multiprocessing's 'spawn' or 'forkserver' method to use more)");
  g_threads.store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);
  refresh_flush_denormal();  // a larger team's new threads take the pool's FTZ/DAZ setting
}

int64_t serial_work_threshold() {
  static const int64_t threshold = read_threshold();
  return threshold;
}

SerialScope::SerialScope(int64_t work) {
  if (t_serial_depth > 0) {  // already serial: stay so, restore nothing
    ++t_serial_depth;
    return;
  }
  if (work >= serial_work_threshold() || num_threads() <= 1) return;
  restore_ = omp_get_max_threads();
  omp_set_num_threads(1);
  t_serial_depth = 1;
}

SerialScope::~SerialScope() {
  if (t_serial_depth == 0) return;
  if (--t_serial_depth == 0 && restore_ > 0) omp_set_num_threads(restore_);
}

}  // namespace mycel
