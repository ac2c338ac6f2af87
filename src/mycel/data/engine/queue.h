// Bounded blocking queues (connectors) between pipeline threads, and the per-pipeline context
// that aborts every wait at once when the pipeline stops or a worker fails.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <vector>

namespace mycel::data::engine {

class QueueBase;

/// Shared by every op of one running pipeline: seed, abort flag, first error.
class ExecContext {
 public:
  explicit ExecContext(uint64_t seed) : seed_(seed) {}
  uint64_t seed() const { return seed_; }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  /// Stops every thread of the pipeline: all queue waits return false.
  void abort();
  /// Records the first worker error and aborts; the iterator rethrows it.
  void fail(std::exception_ptr e);
  std::exception_ptr error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }
  void add_queue(QueueBase* q) {
    std::lock_guard<std::mutex> lock(mu_);
    queues_.push_back(q);
  }

 private:
  uint64_t seed_;
  std::atomic<bool> aborted_{false};
  std::mutex mu_;
  std::exception_ptr error_;
  std::vector<QueueBase*> queues_;
};

/// What an abort needs from a queue: wake its waiters.
class QueueBase {
 public:
  virtual ~QueueBase() = default;
  virtual void wake_all() = 0;
};

inline void ExecContext::abort() {
  aborted_.store(true, std::memory_order_release);
  std::vector<QueueBase*> qs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    qs = queues_;
  }
  for (QueueBase* q : qs) q->wake_all();
}

inline void ExecContext::fail(std::exception_ptr e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_) error_ = std::move(e);
  }
  abort();
}

/// A FIFO of at most `capacity` items; waiters sleep (no spinning: two cores have no room for it).
/// A producer blocked on a full queue is woken once the queue has drained to half its capacity,
/// not after every pop: it then refills the queue in one run instead of sleeping and waking per
/// item (per-row wake-ups between a pipeline's threads cost more CPU than LeNet5's transforms).
template <class T>
class Queue : public QueueBase {
 public:
  enum class Status { kOk, kTimeout, kAborted };

  Queue(ExecContext* ctx, size_t capacity) : ctx_(ctx), cap_(capacity < 1 ? 1 : capacity) {
    ctx_->add_queue(this);
  }
  /// Blocks while full; false when the pipeline was aborted.
  bool push(T v) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return items_.size() < cap_ || ctx_->aborted(); });
    if (ctx_->aborted()) return false;
    items_.push_back(std::move(v));
    lock.unlock();
    not_empty_.notify_one();
    return true;
  }
  /// Blocks while empty; false when the pipeline was aborted.
  bool pop(T& out) { return pop_for(out, -1) == Status::kOk; }
  /// Like pop, giving up after timeout_ms (< 0: never) so the caller can check for signals.
  Status pop_for(T& out, int64_t timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [&] { return !items_.empty() || ctx_->aborted(); };
    if (timeout_ms < 0) {
      not_empty_.wait(lock, ready);
    } else if (!not_empty_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready)) {
      return Status::kTimeout;
    }
    if (ctx_->aborted()) return Status::kAborted;
    out = std::move(items_.front());
    items_.pop_front();
    const bool wake = items_.size() <= cap_ / 2;
    lock.unlock();
    if (wake) not_full_.notify_one();
    return Status::kOk;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return items_.size();
  }
  size_t capacity() const { return cap_; }
  void wake_all() override {
    // Taking the lock orders the abort flag before the waiters re-check it.
    { std::lock_guard<std::mutex> lock(mu_); }
    not_full_.notify_all();
    not_empty_.notify_all();
  }

 private:
  ExecContext* ctx_;
  size_t cap_;
  mutable std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<T> items_;
};

}  // namespace mycel::data::engine
