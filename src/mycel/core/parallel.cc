#include "mycel/core/parallel.h"

#include <atomic>
#include <cstdlib>

namespace mycel {
namespace {
std::atomic<int> g_threads{0};
thread_local int t_serial_depth = 0;  // > 0 inside a SerialScope that took effect

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
  g_threads.store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);
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
