// Kernels compiled off the critical path (MYCEL_TE_FUSION=async): a graph step starts with the
// fused-elementwise interpreter and switches to the generated kernel once the system compiler has
// built it, so a cold kernel never makes a step wait. One build runs at a time (the compiler
// already uses a core); wait_background_builds() joins them all (deterministic tests, benches).
// Builds nobody holds any more are dropped before they start (the destructor).
#include <algorithm>
#include <mutex>
#include <thread>

#include "mycel/te/te.h"

namespace mycel::te {
namespace {

std::mutex& compiler_turn() {  // one compiler process at a time
  static std::mutex m;
  return m;
}

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::vector<std::weak_ptr<BackgroundBuild>>& registry() {
  static std::vector<std::weak_ptr<BackgroundBuild>> r;
  return r;
}

}  // namespace

struct BackgroundBuild::State {
  std::atomic<bool> done{false};
  mutable std::mutex mutex;
  bool started = false, dropped = false;  // under mutex
  std::shared_ptr<Function> fn;
  std::string error;
};

std::shared_ptr<BackgroundBuild> BackgroundBuild::start(
    std::function<std::shared_ptr<Function>()> make) {
  auto b = std::shared_ptr<BackgroundBuild>(new BackgroundBuild());
  b->state_ = std::make_shared<State>();
  b->thread_ = std::thread([st = b->state_, make = std::move(make)] {
    std::shared_ptr<Function> fn;
    std::string error;
    {
      std::lock_guard<std::mutex> turn(compiler_turn());
      {
        std::lock_guard<std::mutex> lock(st->mutex);
        if (st->dropped) return;  // nobody wants it any more: no compile
        st->started = true;
      }
      try {
        fn = make();
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    std::lock_guard<std::mutex> lock(st->mutex);
    st->fn = std::move(fn);
    st->error = std::move(error);
    st->done.store(true, std::memory_order_release);
  });
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto& r = registry();
  r.erase(std::remove_if(r.begin(), r.end(), [](auto& w) { return w.expired(); }), r.end());
  r.push_back(b);
  return b;
}

// Nobody can ask for the result any more (a program freed, the process exiting). A build still
// waiting for its turn is dropped and its thread let go (it ends without compiling, touching only
// the shared state), so freeing a program with many queued builds, or exiting, waits for at most
// the one build under way.
BackgroundBuild::~BackgroundBuild() {
  if (!thread_.joinable()) return;
  bool started;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->dropped = true;
    started = state_->started;
  }
  if (started)
    thread_.join();
  else
    thread_.detach();
}

std::shared_ptr<Function> BackgroundBuild::ready() const {
  if (!state_->done.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->fn;
}

std::string BackgroundBuild::error() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->error;
}

void BackgroundBuild::wait() {
  std::lock_guard<std::mutex> lock(join_mutex_);
  if (thread_.joinable()) thread_.join();
}

int wait_background_builds() {
  std::vector<std::shared_ptr<BackgroundBuild>> live;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (auto& w : registry())
      if (auto b = w.lock()) live.push_back(std::move(b));
  }
  int built = 0;
  for (auto& b : live) {
    b->wait();
    built += b->ready() != nullptr;
  }
  return built;
}

}  // namespace mycel::te
