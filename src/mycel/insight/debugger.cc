// The debugger's hook: while on, each launch is handed to the callback the Python glue set,
// which evaluates the watchpoints (and may block the run there: "pause"). The callback returns a
// message to stop the run: the launch raises RuntimeError with it, and the executor names the
// user's source line, as for any error of a compiled step.
#include <mutex>

#include "mycel/core/error.h"
#include "mycel/insight/insight.h"

namespace mycel::insight::debugger {

namespace {
struct State {
  std::mutex mu;
  std::shared_ptr<const Callback> on_launch;
  std::shared_ptr<const StepCallback> on_step;
};
State& state() {
  static State* s = new State;  // never destroyed: its callbacks may hold Python objects
  return *s;
}
}  // namespace

void start(Callback on_launch, StepCallback on_step_end) {
  State& st = state();
  {
    std::lock_guard lock(st.mu);
    st.on_launch = std::make_shared<const Callback>(std::move(on_launch));
    st.on_step = std::make_shared<const StepCallback>(std::move(on_step_end));
  }
  g_hooks.fetch_or(kDebugHook);
}

void stop() {
  g_hooks.fetch_and(static_cast<uint8_t>(~kDebugHook));
  State& st = state();
  std::lock_guard lock(st.mu);
  st.on_launch.reset();
  st.on_step.reset();
}

std::vector<Tensor> inputs_before(const std::vector<Tensor>& inputs,
                                  const std::vector<Tensor>& outputs) {
  std::vector<Tensor> r = inputs;
  for (Tensor& t : r) {
    if (!t.defined() || t.nbytes() == 0) continue;
    const auto* a = static_cast<const std::byte*>(t.data());
    for (const Tensor& o : outputs) {
      if (!o.defined() || o.nbytes() == 0) continue;
      const auto* b = static_cast<const std::byte*>(o.data());
      if (a < b + o.nbytes() && b < a + t.nbytes()) {
        t = t.clone();
        break;
      }
    }
  }
  return r;
}

void check(const Launch& l) {
  std::shared_ptr<const Callback> cb;
  {
    State& st = state();
    std::lock_guard lock(st.mu);
    cb = st.on_launch;  // a copy: stop() on another thread cannot free it under us
  }
  if (!cb || !*cb) return;
  std::string msg = (*cb)(l);
  if (!msg.empty()) MYCEL_THROW(RuntimeError, msg);
}

void step_end() {
  std::shared_ptr<const StepCallback> cb;
  {
    State& st = state();
    std::lock_guard lock(st.mu);
    cb = st.on_step;
  }
  if (cb && *cb) (*cb)();
}

}  // namespace mycel::insight::debugger
