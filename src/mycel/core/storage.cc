#include "mycel/core/storage.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "mycel/core/error.h"

namespace mycel {
namespace {

constexpr size_t kAlign = 64;
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
        void* p = it->second.back();
        it->second.pop_back();
        stats_.bytes_cached -= capacity;
        stats_.bytes_in_use += capacity;
        return p;
      }
      stats_.num_system_allocs++;
      stats_.bytes_in_use += capacity;
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
    if (stats_.bytes_cached + capacity > kMaxCachedBytes) {
      std::free(p);
      return;
    }
    free_[capacity].push_back(p);
    stats_.bytes_cached += capacity;
  }

  void empty() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [cap, blocks] : free_)
      for (void* p : blocks) std::free(p);
    free_.clear();
    stats_.bytes_cached = 0;
  }

  AllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
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
  if (release_) release_();
  else allocator().release(data_, capacity_);
}

AllocatorStats allocator_stats() { return allocator().stats(); }
void empty_cache() { allocator().empty(); }

}  // namespace mycel
