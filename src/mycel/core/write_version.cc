#include "mycel/core/write_version.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace mycel {
namespace {

struct Entry {
  uint64_t version = 0;
  int exports = 0;        // numpy/DLPack views alive
  bool borrowed = false;  // memory of another owner
};

struct Table {
  std::mutex mu;
  std::unordered_map<const Storage*, Entry> entries;
  std::atomic<size_t> size{0};  // read without the lock by the hot paths (empty: nothing to do)
  uint64_t counter = 0;         // under mu; 64 bits never wrap

  Entry& at(const Storage* s) {  // under mu
    auto [it, added] = entries.try_emplace(s);
    if (added) {
      it->second.version = ++counter;
      size.store(entries.size(), std::memory_order_relaxed);
    }
    return it->second;
  }
};

Table& table() {
  static Table* t = new Table;  // never destroyed: storages may die during static destruction
  return *t;
}

}  // namespace

uint64_t write_version(const Storage& s) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  const Entry& e = t.at(&s);
  return e.exports > 0 || e.borrowed ? 0 : e.version;
}

void note_write(const Storage& s) {
  Table& t = table();
  if (t.size.load(std::memory_order_relaxed) == 0) return;  // nobody caches anything
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.entries.find(&s);
  if (it != t.entries.end()) it->second.version = ++t.counter;
}

void begin_export(const Storage& s) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  ++t.at(&s).exports;
}

void end_export(const Storage& s) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.entries.find(&s);
  if (it == t.entries.end()) return;
  --it->second.exports;
  it->second.version = ++t.counter;  // the view may have written
}

void mark_borrowed(const Storage& s) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.at(&s).borrowed = true;
}

void forget_write_version(const Storage* s) {
  Table& t = table();
  if (t.size.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.entries.erase(s)) t.size.store(t.entries.size(), std::memory_order_relaxed);
}

}  // namespace mycel
