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

std::shared_ptr<BackgroundBuild> BackgroundBuild::start(
    std::function<std::shared_ptr<Function>()> make) {
  auto b = std::shared_ptr<BackgroundBuild>(new BackgroundBuild());
  BackgroundBuild* self = b.get();  // the thread is joined before *self goes
  self->thread_ = std::thread([self, make = std::move(make)] {
    std::shared_ptr<Function> fn;
    std::string error;
    try {
      std::lock_guard<std::mutex> turn(compiler_turn());
      if (!self->dropped_.load(std::memory_order_acquire)) fn = make();
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::lock_guard<std::mutex> lock(self->mutex_);
    self->fn_ = std::move(fn);
    self->error_ = std::move(error);
    self->done_.store(true, std::memory_order_release);
  });
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto& r = registry();
  r.erase(std::remove_if(r.begin(), r.end(), [](auto& w) { return w.expired(); }), r.end());
  r.push_back(b);
  return b;
}

// Nobody can ask for the result any more (a program freed, the process exiting): a build still
// queued for the compiler is dropped, so an exit waits for at most the one build under way.
BackgroundBuild::~BackgroundBuild() {
  dropped_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<Function> BackgroundBuild::ready() const {
  if (!done_.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  return fn_;
}

std::string BackgroundBuild::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
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
