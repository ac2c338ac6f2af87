#include "mycel/core/storage.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "mycel/core/error.h"

namespace mycel {
namespace {

constexpr size_t kAlign = 64;
// Freed blocks kept for reuse: at most the peak bytes ever in use at once (what the program has
// already shown it needs together), at least kMinCachedBytes and at most kMaxCachedBytes; past
// that the least recently freed go back to the system. A plain 2 GB bound let the arenas of
// evicted per-shape programs pile up (each shape's sizes differ), ~100 MB over 800 shapes.
constexpr size_t kMinCachedBytes = size_t(16) << 20;
constexpr size_t kMaxCachedBytes = size_t(1) << 31;

// Size classes: multiples of 64 bytes up to 4 KiB, then powers of two split in four, so a
// reused block wastes at most 25%.
size_t size_class(size_t n) {
  if (n <= 4096) return (n + kAlign - 1) / kAlign * kAlign;
  size_t p = 4096;
  while (p < n) p <<= 1;
  size_t quarter = p / 8;  // p/2 < n <= p: step through p/2 + k*p/8
  size_t c = p / 2;
  while (c < n) c += quarter;
  return c;
}

class CachingAllocator {
 public:
  void* allocate(size_t capacity) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.num_allocs++;
      auto it = free_.find(capacity);
      if (it != free_.end() && !it->second.empty()) {
        auto block = it->second.back();
        it->second.pop_back();
        void* p = block->second;
        lru_.erase(block);
        stats_.bytes_cached -= capacity;
        add_in_use(capacity);
        return p;
      }
      stats_.num_system_allocs++;
      add_in_use(capacity);
    }
    void* p = std::aligned_alloc(kAlign, capacity == 0 ? kAlign : capacity);
    if (!p) {
      empty();
      p = std::aligned_alloc(kAlign, capacity == 0 ? kAlign : capacity);
    }
    if (!p) {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.bytes_in_use -= capacity;
      MYCEL_THROW(OutOfMemory, "out of memory allocating ", capacity, " bytes");
    }
    return p;
  }

  void release(void* p, size_t capacity) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.bytes_in_use -= capacity;
    const size_t limit = std::min(kMaxCachedBytes, std::max(kMinCachedBytes, peak_in_use_));
    if (capacity > limit) {
      std::free(p);
      return;
    }
    lru_.emplace_front(capacity, p);
    free_[capacity].push_back(lru_.begin());
    stats_.bytes_cached += capacity;
    while (stats_.bytes_cached > limit) evict_oldest();
  }

  void empty() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [cap, p] : lru_) std::free(p);
    lru_.clear();
    free_.clear();
    stats_.bytes_cached = 0;
  }

  AllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  using Block = std::pair<size_t, void*>;  // capacity, pointer

  void add_in_use(size_t capacity) {
    stats_.bytes_in_use += capacity;
    peak_in_use_ = std::max(peak_in_use_, stats_.bytes_in_use);
  }

  // Frees the least recently freed cached block.
  void evict_oldest() {
    auto block = std::prev(lru_.end());
    auto& same = free_[block->first];
    same.erase(std::find(same.begin(), same.end(), block));
    if (same.empty()) free_.erase(block->first);
    stats_.bytes_cached -= block->first;
    std::free(block->second);
    lru_.erase(block);
  }

  std::mutex mu_;
  std::list<Block> lru_;                                            // cached, newest first
  std::map<size_t, std::vector<std::list<Block>::iterator>> free_;  // by capacity
  size_t peak_in_use_ = 0;
  AllocatorStats stats_;
};

CachingAllocator& allocator() {
  static auto* a = new CachingAllocator();  // never destroyed: tensors may outlive static teardown
  return *a;
}

}  // namespace

std::shared_ptr<Storage> Storage::allocate(size_t nbytes) {
  size_t cap = size_class(nbytes);
  void* p = allocator().allocate(cap);
  return std::shared_ptr<Storage>(new Storage(p, nbytes, cap, nullptr));
}

std::shared_ptr<Storage> Storage::borrow(void* data, size_t nbytes, std::function<void()> release) {
  return std::shared_ptr<Storage>(new Storage(data, nbytes, 0, std::move(release)));
}

Storage::~Storage() {
  if (release_)
    release_();
  else
    allocator().release(data_, capacity_);
}

AllocatorStats allocator_stats() { return allocator().stats(); }
void empty_cache() { allocator().empty(); }

}  // namespace mycel
