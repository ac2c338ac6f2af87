#include "mycel/core/denormals.h"

#include <omp.h>

#include <algorithm>
#include <atomic>

#include "mycel/core/parallel.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define MYCEL_HAS_MXCSR 1
#else
#define MYCEL_HAS_MXCSR 0
#endif

namespace mycel {
namespace {

std::atomic<bool> g_on{false};  // the last set_flush_denormal's setting

#if MYCEL_HAS_MXCSR
constexpr unsigned kFtzDaz = 0x8040;  // MXCSR bit 15 (FTZ) and bit 6 (DAZ)

void set_this_thread(bool on) {
  const unsigned m = _mm_getcsr();
  _mm_setcsr(on ? (m | kFtzDaz) : (m & ~kFtzDaz));
}
#endif

}  // namespace

bool set_flush_denormal(bool on) {
#if MYCEL_HAS_MXCSR
  g_on.store(on, std::memory_order_relaxed);
  set_this_thread(on);
  // Every pool thread, also those beyond the current team size (a smaller set_num_threads keeps
  // the larger team's threads for later).
  const int team = std::max(num_threads(), omp_get_max_threads());
#pragma omp parallel num_threads(team)
  set_this_thread(on);
  return true;
#else
  (void)on;
  return false;
#endif
}

bool flush_denormal() {
#if MYCEL_HAS_MXCSR
  return (_mm_getcsr() & kFtzDaz) == kFtzDaz;
#else
  return false;
#endif
}

void refresh_flush_denormal() {
  if (g_on.load(std::memory_order_relaxed)) set_flush_denormal(true);
}

}  // namespace mycel
