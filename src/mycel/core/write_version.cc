#include "mycel/core/write_version.h"

#include <atomic>

#include "mycel/core/storage.h"

namespace mycel {
namespace {

// Numbers are handed out from one counter, so they are unique across storages, including a new
// storage at a freed one's address; 64 bits never wrap.
std::atomic<uint64_t> next_version{1};

}  // namespace

uint64_t write_version(const Storage& s) {
  Storage::WriteState& w = s.write_state();
  if (w.exports.load(std::memory_order_acquire) > 0 || w.borrowed.load(std::memory_order_relaxed))
    return 0;
  uint64_t v = w.version.load(std::memory_order_acquire);
  if (v != 0) return v;
  const uint64_t fresh = next_version.fetch_add(1, std::memory_order_relaxed);
  // Another thread may number it first; both then see the same number.
  return w.version.compare_exchange_strong(v, fresh, std::memory_order_acq_rel) ? fresh : v;
}

void note_write(const Storage& s) {
  std::atomic<uint64_t>& version = s.write_state().version;
  // Load first: a storage no cache has asked about keeps its cache line clean.
  if (version.load(std::memory_order_relaxed) != 0) version.store(0, std::memory_order_release);
}

void begin_export(const Storage& s) {
  s.write_state().exports.fetch_add(1, std::memory_order_acq_rel);
}

void end_export(const Storage& s) {
  Storage::WriteState& w = s.write_state();
  w.version.store(0, std::memory_order_release);  // the view may have written
  w.exports.fetch_sub(1, std::memory_order_acq_rel);
}

void mark_borrowed(const Storage& s) {
  s.write_state().borrowed.store(true, std::memory_order_relaxed);
}

}  // namespace mycel
