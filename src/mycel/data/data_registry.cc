// Name -> factory tables for sources and transforms, and RowRng.
#include <map>
#include <mutex>

#include "mycel/data/source.h"
#include "mycel/data/transform.h"

namespace mycel::data {
namespace {

template <class F>
struct Table {
  std::mutex mu;
  std::map<std::string, F> factories;
};

template <class F>
Table<F>& table() {
  static auto* t = new Table<F>();
  return *t;
}

template <class F>
void add(const char* what, const std::string& name, F f) {
  auto& t = table<F>();
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.factories.count(name)) MYCEL_THROW(RuntimeError, what, " '", name, "' registered twice");
  t.factories[name] = std::move(f);
}

template <class F>
F find(const char* what, const std::string& name) {
  auto& t = table<F>();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.factories.find(name);
  if (it == t.factories.end()) MYCEL_THROW(ValueError, "unknown dataset ", what, " '", name, "'");
  return it->second;
}

template <class F>
std::vector<std::string> names() {
  auto& t = table<F>();
  std::lock_guard<std::mutex> lock(t.mu);
  std::vector<std::string> out;
  for (auto& [k, v] : t.factories) out.push_back(k);
  return out;
}

}  // namespace

void register_source(const std::string& name, SourceFactory f) {
  add("source", name, std::move(f));
}
std::shared_ptr<Source> make_source(const std::string& name, const Params& p) {
  return find<SourceFactory>("source", name)(p);
}
std::vector<std::string> source_names() { return names<SourceFactory>(); }

void register_transform(const std::string& name, TransformFactory f) {
  add("transform", name, std::move(f));
}
std::shared_ptr<Transform> make_transform(const std::string& name, const Params& p,
                                          const TransformList& children) {
  return find<TransformFactory>("transform", name)(p, children);
}
std::vector<std::string> transform_names() { return names<TransformFactory>(); }

uint32_t RowRng::next_u32() {
  if (used_ == 4) {
    auto b = philox4x32_10({uint32_t(row_), uint32_t(row_ >> 32), block_++, salt_},
                           {uint32_t(seed_), uint32_t(seed_ >> 32)});
    for (int i = 0; i < 4; ++i) buf_[i] = b[i];
    used_ = 0;
  }
  return buf_[used_++];
}

double RowRng::uniform() {
  uint64_t hi = next_u32() >> 5, lo = next_u32() >> 6;  // 53 random bits
  return (hi * 67108864.0 + lo) * (1.0 / 9007199254740992.0);
}

int64_t RowRng::randint(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo +
         static_cast<int64_t>(uniform() * static_cast<double>(span)) % static_cast<int64_t>(span);
}

}  // namespace mycel::data
