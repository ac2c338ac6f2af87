// The profiler's buffers: launch sites append (site, scope, start, end, bytes) while profiling is
// on; the step trace and the data pipeline add spans. Sites (op, source line, weights read) are
// registered once per site and session, so a launch copies no strings. One mutex: launches are
// microseconds apart at least, so an uncontended lock is noise.
#include <chrono>
#include <deque>
#include <functional>
#include <thread>
#include <unordered_map>

#include "mycel/insight/insight.h"

namespace mycel::insight::profiler {

namespace {
struct State {
  std::mutex mu;
  std::vector<OpEvent> events;
  std::vector<Span> spans;
  std::deque<SiteInfo> sites;  // a deque: site(id) pointers stay valid while it grows
  std::unordered_map<const void*, int32_t> eager_sites;
  std::vector<std::string> scopes;
  std::unordered_map<std::string, int32_t> scope_ids;
  std::atomic<uint32_t> epoch{1};  // FnPlan::site_epoch starts at 0: stale
};
State& state() {
  static State s;
  return s;
}
uint32_t thread_number() {
  static std::atomic<uint32_t> next{0};
  thread_local uint32_t mine = next.fetch_add(1);
  return mine;
}
// The calling thread's Cell scopes (ids into State::scopes), innermost last.
thread_local std::vector<int32_t> t_scopes;
}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint32_t epoch() { return state().epoch.load(std::memory_order_acquire); }

int32_t add_site(SiteInfo s) {
  State& st = state();
  std::lock_guard lock(st.mu);
  st.sites.push_back(std::move(s));
  return static_cast<int32_t>(st.sites.size() - 1);
}

const SiteInfo* site(int32_t id) {
  State& st = state();
  std::lock_guard lock(st.mu);
  return id >= 0 && static_cast<size_t>(id) < st.sites.size() ? &st.sites[id] : nullptr;
}

int32_t eager_site(const void* key, const std::function<SiteInfo()>& make) {
  State& st = state();
  {
    std::lock_guard lock(st.mu);
    auto it = st.eager_sites.find(key);
    if (it != st.eager_sites.end()) return it->second;
  }
  SiteInfo s = make();
  std::lock_guard lock(st.mu);
  auto [it, fresh] = st.eager_sites.emplace(key, static_cast<int32_t>(st.sites.size()));
  if (fresh) st.sites.push_back(std::move(s));
  return it->second;
}

void record(int32_t site, int64_t start_ns, int64_t end_ns, int64_t bytes) {
  const uint32_t t = thread_number();
  const int32_t scope = t_scopes.empty() ? -1 : t_scopes.back();
  State& st = state();
  std::lock_guard lock(st.mu);
  st.events.push_back({site, scope, start_ns, end_ns, bytes, t});
}

void span(const char* track, const char* name, int64_t start_ns, int64_t end_ns, int64_t value) {
  const uint32_t t = thread_number();
  State& st = state();
  std::lock_guard lock(st.mu);
  st.spans.push_back({track, name, start_ns, end_ns, value, t});
}

void push_scope(const std::string& scope) {
  State& st = state();
  int32_t id;
  {
    std::lock_guard lock(st.mu);
    auto [it, fresh] = st.scope_ids.emplace(scope, static_cast<int32_t>(st.scopes.size()));
    if (fresh) st.scopes.push_back(scope);
    id = it->second;
  }
  t_scopes.push_back(id);
}

void pop_scope() {
  if (!t_scopes.empty()) t_scopes.pop_back();
}

void start() {
  State& st = state();
  {
    std::lock_guard lock(st.mu);
    st.events.clear();
    st.events.reserve(1 << 16);
    st.spans.clear();
    st.sites.clear();
    st.eager_sites.clear();
    st.scopes.clear();
    st.scope_ids.clear();
    st.epoch.fetch_add(1, std::memory_order_acq_rel);  // cached site ids are stale now
  }
  t_scopes.clear();
  g_hooks.fetch_or(kProfileHook);
}

void stop() { g_hooks.fetch_and(static_cast<uint8_t>(~kProfileHook)); }

std::vector<OpEvent> take() {
  State& st = state();
  std::lock_guard lock(st.mu);
  std::vector<OpEvent> r;
  r.swap(st.events);
  return r;
}

std::vector<Span> take_spans() {
  State& st = state();
  std::lock_guard lock(st.mu);
  std::vector<Span> r;
  r.swap(st.spans);
  return r;
}

std::vector<SiteInfo> sites() {
  State& st = state();
  std::lock_guard lock(st.mu);
  return {st.sites.begin(), st.sites.end()};
}

std::vector<std::string> scopes() {
  State& st = state();
  std::lock_guard lock(st.mu);
  return st.scopes;
}

}  // namespace mycel::insight::profiler
