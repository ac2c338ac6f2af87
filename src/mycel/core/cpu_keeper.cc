#include "mycel/core/cpu_keeper.h"

#include <pthread.h>
#include <sched.h>
#include <strings.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include "mycel/core/parallel.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define MYCEL_KEEPER_PAUSE() _mm_pause()
#else
#define MYCEL_KEEPER_PAUSE() std::this_thread::yield()
#endif

namespace mycel {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Config {
  bool on = false;
  int64_t linger_ns = 2'000'000;
  int max_keepers = 0;  // one per CPU beyond the caller's
};

Config read_config() {
  Config c;
  // Opt-in: on this 2-vCPU machine they cost the long steps more than they saved the short ones
  // (ResNet-18's step 600 against 534 ms with them; the MLP's even or slower, alternating).
  if (const char* s = std::getenv("MYCEL_CPU_KEEPER"); s && *s && std::atoi(s) != 0) c.on = true;
  if (const char* s = std::getenv("OMP_WAIT_POLICY"); s && strcasecmp(s, "passive") == 0)
    c.on = false;
  if (const char* s = std::getenv("MYCEL_CPU_KEEPER_US"); s && *s) {
    char* end = nullptr;
    const long long us = std::strtoll(s, &end, 10);
    if (end != s && us >= 0) c.linger_ns = us * 1000;
  }
  c.max_keepers = static_cast<int>(std::thread::hardware_concurrency()) - 1;
  if (c.max_keepers <= 0) c.on = false;
  return c;
}

// Never destroyed: the detached keepers may still read it while the process exits.
struct State {
  std::atomic<int64_t> until{0};  // spin while now_ns() < until
  std::atomic<int> sleepers{0};
  std::atomic<int> started{0};
  std::mutex m;
  std::condition_variable cv;
};

std::atomic<State*> g_state{nullptr};

// A forked child has none of the keepers, and a mutex one of them held is locked for good in
// it: the child starts over with a fresh state (the old one is leaked, as above).
void reset_in_child() { g_state.store(new State); }

State& state() {
  static const bool once = [] {
    g_state.store(new State);
    pthread_atfork(nullptr, nullptr, reset_in_child);
    return true;
  }();
  (void)once;
  return *g_state.load(std::memory_order_acquire);
}

void keeper_loop(State& s) {
  sched_param p{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &p);
  for (;;) {
    while (now_ns() < s.until.load(std::memory_order_relaxed))
      for (int i = 0; i < 32; ++i) MYCEL_KEEPER_PAUSE();
    std::unique_lock<std::mutex> lock(s.m);
    s.sleepers.fetch_add(1);  // seq_cst: keep_cpus_awake sees it or this sees its new `until`
    s.cv.wait(lock, [&] { return now_ns() < s.until.load(); });
    s.sleepers.fetch_sub(1);
  }
}

}  // namespace

void keep_cpus_awake(bool run_starts) {
  static const Config config = read_config();
  if (!config.on) return;
  const int want = std::min(num_threads() - 1, config.max_keepers);
  if (want <= 0) return;
  State& s = state();
  s.until.store(run_starts ? std::numeric_limits<int64_t>::max() : now_ns() + config.linger_ns);
  if (s.started.load(std::memory_order_relaxed) < want) {
    std::lock_guard<std::mutex> lock(s.m);
    while (s.started.load() < want) {
      std::thread(keeper_loop, std::ref(s)).detach();
      s.started.fetch_add(1);
    }
  }
  if (s.sleepers.load() > 0) {
    std::lock_guard<std::mutex> lock(s.m);
    s.cv.notify_all();
  }
}

int cpu_keepers_started() { return state().started.load(); }

}  // namespace mycel
