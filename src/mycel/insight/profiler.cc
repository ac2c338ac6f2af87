// The profiler's buffer: launch sites append (name, start, end, bytes) while profiling is on.
// One mutex: launches are microseconds apart at least, so an uncontended lock is noise.
#include <chrono>
#include <functional>
#include <thread>

#include "mycel/insight/insight.h"

namespace mycel::insight::profiler {

namespace {
std::mutex& mu() {
  static std::mutex m;
  return m;
}
std::vector<OpEvent>& events() {
  static std::vector<OpEvent> e;
  return e;
}
uint32_t thread_number() {
  static std::atomic<uint32_t> next{0};
  thread_local uint32_t mine = next.fetch_add(1);
  return mine;
}
}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void record(const std::string& name, int64_t start_ns, int64_t end_ns, int64_t bytes) {
  uint32_t t = thread_number();
  std::lock_guard lock(mu());
  events().push_back({name, start_ns, end_ns, bytes, t});
}

void start() {
  std::lock_guard lock(mu());
  events().clear();
  events().reserve(1 << 16);
  g_hooks.fetch_or(kProfileHook);
}

void stop() { g_hooks.fetch_and(static_cast<uint8_t>(~kProfileHook)); }

std::vector<OpEvent> take() {
  std::lock_guard lock(mu());
  std::vector<OpEvent> r;
  r.swap(events());
  return r;
}

}  // namespace mycel::insight::profiler
