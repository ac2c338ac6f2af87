// Reference-counted memory blocks: 64-byte aligned, from a caching allocator, or borrowed from
// another owner (numpy, DLPack) with a release callback.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace mycel {

/// One block of memory that tensors view.
class Storage {
 public:
  /// Allocates nbytes (64-byte aligned) from the caching allocator.
  static std::shared_ptr<Storage> allocate(size_t nbytes);
  /// Wraps memory owned elsewhere; `release` runs when the last tensor lets go.
  static std::shared_ptr<Storage> borrow(void* data, size_t nbytes, std::function<void()> release);

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }

  /// What caches of values derived from this memory compare (core/write_version.h reads and
  /// writes it; nothing else should). Atomics in the storage itself, so that the writers on the
  /// hot paths (every assign of a graph step) take no lock and look nothing up.
  struct WriteState {
    std::atomic<uint64_t> version{0};  // 0: no number handed out since the last tracked write
    std::atomic<int32_t> exports{0};   // numpy/DLPack views alive
    std::atomic<bool> borrowed{false};
  };
  WriteState& write_state() const { return write_state_; }

 private:
  Storage(void* data, size_t nbytes, size_t capacity, std::function<void()> release)
      : data_(data), nbytes_(nbytes), capacity_(capacity), release_(std::move(release)) {}
  void* data_;
  size_t nbytes_;
  size_t capacity_;                // size class in the allocator; 0 when borrowed
  std::function<void()> release_;  // set when borrowed
  mutable WriteState write_state_;
};

/// Allocator statistics, for tests and the profiler.
struct AllocatorStats {
  size_t bytes_in_use = 0;
  size_t bytes_cached = 0;
  size_t num_system_allocs = 0;
  size_t num_allocs = 0;  // every Storage::allocate call, cached or not (graph-mode tests)
};
AllocatorStats allocator_stats();
/// Returns every cached block to the system.
void empty_cache();

}  // namespace mycel
