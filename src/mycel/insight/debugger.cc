// The debugger's watch: each kernel output is scanned for NaN, infinity and |x| > max_abs while
// the debugger is on; hits are kept (and raise, by default) with the op and its source line.
#include <cmath>
#include <mutex>

#include "mycel/core/error.h"
#include "mycel/insight/insight.h"

namespace mycel::insight::debugger {

namespace {
std::mutex& mu() {
  static std::mutex m;
  return m;
}
Watch& watch() {
  static Watch w;
  return w;
}
std::vector<Hit>& hits() {
  static std::vector<Hit> h;
  return h;
}

// Counts of NaN, infinite and too-large elements (scanned serially: the debugger is a slow mode).
void scan(const Tensor& t, double max_abs, int64_t* nan, int64_t* inf, int64_t* big) {
  if (!is_floating(t.dtype()) && max_abs <= 0) return;
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = static_cast<double>(static_cast<compute_t<T>>(p[i]));
      if (std::isnan(v))
        ++*nan;
      else if (std::isinf(v))
        ++*inf;
      else if (max_abs > 0 && std::fabs(v) > max_abs)
        ++*big;
    }
  });
}
}  // namespace

void start(const Watch& w) {
  std::lock_guard lock(mu());
  watch() = w;
  hits().clear();
  g_hooks.fetch_or(kDebugHook);
}

void stop() { g_hooks.fetch_and(static_cast<uint8_t>(~kDebugHook)); }

std::vector<Hit> take() {
  std::lock_guard lock(mu());
  std::vector<Hit> r;
  r.swap(hits());
  return r;
}

void check(const std::string& op, const std::vector<Tensor>& outputs,
           const std::function<std::string()>& where) {
  Watch w;
  {
    std::lock_guard lock(mu());
    w = watch();
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& t = outputs[k];
    if (!t.defined()) continue;
    int64_t nan = 0, inf = 0, big = 0;
    scan(t, w.max_abs, &nan, &inf, &big);
    std::vector<std::pair<std::string, int64_t>> found;
    if (w.nan && nan) found.push_back({"NaN", nan});
    if (w.inf && inf) found.push_back({"inf", inf});
    if (big) found.push_back({mycel::detail::concat("|x| > ", w.max_abs), big});
    if (found.empty()) continue;
    const std::string loc = where ? where() : "";
    {
      std::lock_guard lock(mu());
      for (const auto& [cond, n] : found)
        hits().push_back({op, loc, cond, static_cast<int>(k), n, t.numel()});
    }
    if (w.raise)
      MYCEL_THROW(RuntimeError, "[debugger] ", op, " output ", k, " has ", found[0].first, " (",
                  found[0].second, " of ", t.numel(), " elements)",
                  loc.empty() ? "" : " at " + loc);
  }
}

}  // namespace mycel::insight::debugger
