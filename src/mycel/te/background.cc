// Kernels compiled off the critical path (the default MYCEL_TE_FUSION=async): a graph step starts
// with the fused-elementwise interpreter and switches to the generated kernel once it is built,
// so a cold kernel never makes a step wait. One worker thread takes builds in order from a
// bounded queue (the compiler already uses a core; a second would take the one the steps run
// on), its compiler niced (compiler_process.h). A build nobody holds any more leaves the queue;
// at exit the queue is dropped, the compiler under way killed and the worker joined, so a short
// process neither waits for compiles nor leaves a compiler or half-written files behind.
// The exit hook runs only after the statics built later than its registration are destroyed,
// and the worker builds some of them itself (jit.cc's first compile), so everything a build
// touches is never destroyed: a destroyed map under a build still running at exit corrupted the
// heap (CI, on a disk-cached kernel whose build ended during teardown).
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

#include "mycel/core/error.h"
#include "mycel/te/compiler_process.h"
#include "mycel/te/te.h"

namespace mycel::te {

struct BackgroundBuild::State {
  std::function<std::shared_ptr<Function>()> make;  // released once taken
  std::string cache;  // the kernel cache folder when it was queued (tests switch it per module)
  std::atomic<bool> done{false};
  std::shared_ptr<Function> fn;  // set before done
  std::string error;
};

namespace {

size_t queue_capacity() {
  const char* e = std::getenv("MYCEL_TE_BACKGROUND_QUEUE");
  if (!e || !*e) return 64;
  char* end = nullptr;
  const long long n = std::strtoll(e, &end, 10);
  MYCEL_CHECK(*end == 0 && n >= 0, ValueError,
              "[te fusion] MYCEL_TE_BACKGROUND_QUEUE must be a count >= 0, got '", e, "'");
  return static_cast<size_t>(n);
}

// Never destroyed (it may be used by destructors running at exit); a process forked from one
// that had a worker gets a fresh one, since threads do not survive fork.
struct Worker {
  pid_t pid = ::getpid();
  std::mutex mu;
  std::condition_variable work, idle;
  std::deque<std::shared_ptr<BackgroundBuild::State>> queue;
  bool running = false, stopping = false;
  BackgroundStats stats;
  std::thread thread;

  void loop() {
    detail::set_background_thread();
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      work.wait(lock, [&] { return stopping || !queue.empty(); });
      if (stopping) return;
      auto st = std::move(queue.front());
      queue.pop_front();
      running = true;
      auto make = std::move(st->make);
      detail::set_thread_cache_dir(st->cache);
      lock.unlock();
      std::shared_ptr<Function> fn;
      std::string error;
      try {
        fn = make();
      } catch (const std::exception& e) {
        error = e.what();
      }
      make = nullptr;  // its captures go outside the lock
      lock.lock();
      ++(fn ? stats.built : stats.failed);
      st->fn = std::move(fn);
      st->error = std::move(error);
      st->done.store(true, std::memory_order_release);
      running = false;
      idle.notify_all();
    }
  }
};

std::mutex worker_mu;
Worker* worker_ptr = nullptr;

void stop_at_exit() {
  Worker* w;
  {
    std::lock_guard<std::mutex> g(worker_mu);
    w = worker_ptr;
  }
  if (!w || w->pid != ::getpid()) return;
  {
    std::lock_guard<std::mutex> lock(w->mu);
    w->stopping = true;
    for (auto& st : w->queue) {
      st->error = "dropped at exit";
      st->done.store(true, std::memory_order_release);
    }
    w->queue.clear();
  }
  w->work.notify_all();
  w->idle.notify_all();
  detail::cancel_background_compile();
  if (w->thread.joinable()) w->thread.join();
}

// The worker, started on first use.
Worker& worker() {
  std::lock_guard<std::mutex> g(worker_mu);
  if (!worker_ptr || worker_ptr->pid != ::getpid()) {
    static bool registered = false;
    if (!registered) {
      std::atexit(stop_at_exit);
      registered = true;
    }
    worker_ptr = new Worker();
    worker_ptr->thread = std::thread([w = worker_ptr] { w->loop(); });
  }
  return *worker_ptr;
}

}  // namespace

std::shared_ptr<BackgroundBuild> BackgroundBuild::start(
    std::function<std::shared_ptr<Function>()> make) {
  auto b = std::shared_ptr<BackgroundBuild>(new BackgroundBuild());
  b->state_ = std::make_shared<State>();
  b->state_->cache = cache_directory();
  const size_t capacity = queue_capacity();
  Worker& w = worker();
  {
    std::lock_guard<std::mutex> lock(w.mu);
    if (w.stopping || w.queue.size() >= capacity) {
      ++w.stats.refused;
      b->state_->error = w.stopping ? "the process is exiting"
                                    : "the background queue is full (MYCEL_TE_BACKGROUND_QUEUE=" +
                                          std::to_string(capacity) + ")";
      b->state_->done.store(true, std::memory_order_release);
      return b;
    }
    b->state_->make = std::move(make);
    w.queue.push_back(b->state_);
  }
  w.work.notify_one();
  return b;
}

// Nobody can ask for the result any more (a program freed): a queued build leaves the queue; one
// under way finishes (its kernel lands in the disk cache) without anyone waiting for it.
BackgroundBuild::~BackgroundBuild() {
  if (state_->done.load(std::memory_order_acquire)) return;
  Worker& w = worker();
  std::lock_guard<std::mutex> lock(w.mu);
  for (auto it = w.queue.begin(); it != w.queue.end(); ++it)
    if (*it == state_) {
      w.queue.erase(it);
      ++w.stats.dropped;
      state_->make = nullptr;
      state_->error = "dropped";
      state_->done.store(true, std::memory_order_release);
      w.idle.notify_all();
      break;
    }
}

std::shared_ptr<Function> BackgroundBuild::ready() const {
  if (!state_->done.load(std::memory_order_acquire)) return nullptr;
  return state_->fn;  // written before done, never after
}

std::string BackgroundBuild::error() const {
  if (!state_->done.load(std::memory_order_acquire)) return "";
  return state_->error;
}

void BackgroundBuild::wait() {
  if (state_->done.load(std::memory_order_acquire)) return;
  Worker& w = worker();
  std::unique_lock<std::mutex> lock(w.mu);
  w.idle.wait(lock, [&] { return state_->done.load() || w.stopping; });
}

int wait_background_builds() {
  Worker& w = worker();
  std::unique_lock<std::mutex> lock(w.mu);
  w.idle.wait(lock, [&] { return w.stopping || (w.queue.empty() && !w.running); });
  return static_cast<int>(w.stats.built);
}

BackgroundStats background_stats() {
  Worker& w = worker();
  std::lock_guard<std::mutex> lock(w.mu);
  BackgroundStats s = w.stats;
  s.queued = static_cast<int64_t>(w.queue.size());
  s.compiles = detail::background_compiles();
  return s;
}

}  // namespace mycel::te
