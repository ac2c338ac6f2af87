#include "mycel/kernels/cpu/dnnl_util.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>

#include "mycel/core/error.h"
#include "mycel/kernels/cpu/dnnl_isa.h"
#include "mycel/kernels/cpu/dnnl_ops.h"

namespace mycel::cpu::dnnl_util {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

dnnl::memory::data_type to_dnnl(DType t) {
  switch (t) {
    case DType::float16:
      return dnnl::memory::data_type::f16;
    case DType::bfloat16:
      return dnnl::memory::data_type::bf16;
    case DType::float32:
      return dnnl::memory::data_type::f32;
    default:
      break;
  }
  MYCEL_THROW(TypeError, "oneDNN has no data type for ", dtype_name(t));
}

dnnl::primitive_attr default_attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

namespace {
// Entries kept (MYCEL_DNNL_CACHE, default 256). Each holds a primitive's JIT code and descriptors,
// roughly 0.1-0.2 MB: 1024 of them held ~150 MB once a few hundred input shapes had passed.
// oneDNN's own primitive cache (1024 by default) would keep the primitives we evict alive, so it
// gets the same bound.
size_t capacity() {
  static const size_t c = [] {
    size_t n = 256;
    if (const char* v = std::getenv("MYCEL_DNNL_CACHE"); v && *v) {
      char* end = nullptr;
      const long long x = std::strtoll(v, &end, 10);
      MYCEL_CHECK(end && *end == '\0' && x >= 1 && x <= (1 << 20), ValueError,
                  "MYCEL_DNNL_CACHE must be an integer in [1, 1048576], got '", v, "'");
      n = static_cast<size_t>(x);
    }
    dnnl::set_primitive_cache_capacity(static_cast<int>(n));
    return n;
  }();
  return c;
}

struct Cache {
  std::mutex mu;
  std::list<std::pair<std::string, std::shared_ptr<Entry>>> lru;  // most recent first
  std::unordered_map<std::string, decltype(lru)::iterator> index;
  std::atomic<int64_t> builds{0};
};

Cache& cache() {
  static auto* c = new Cache();  // leaked: primitives must outlive static destructors that use them
  return *c;
}
}  // namespace

std::shared_ptr<Entry> lookup(const std::string& key,
                              const std::function<std::shared_ptr<Entry>()>& build) {
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> g(c.mu);
    auto it = c.index.find(key);
    if (it != c.index.end()) {
      c.lru.splice(c.lru.begin(), c.lru, it->second);
      return it->second->second;
    }
  }
  // Build outside the lock (it can take milliseconds); a racing builder of the same key only wastes
  // work.
  std::shared_ptr<Entry> e = build();
  c.builds.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(c.mu);
  auto it = c.index.find(key);
  if (it != c.index.end()) return it->second->second;
  c.lru.emplace_front(key, e);
  c.index[key] = c.lru.begin();
  if (c.lru.size() > capacity()) {
    c.index.erase(c.lru.back().first);
    c.lru.pop_back();
  }
  return e;
}

int64_t build_count() { return cache().builds.load(std::memory_order_relaxed); }

size_t cache_size() {
  std::lock_guard<std::mutex> g(cache().mu);
  return cache().lru.size();
}

std::ostream& operator<<(std::ostream& os, const dnnl::memory::dims& d) {
  for (auto v : d) os << v << ',';
  return os;
}

bool is_unimplemented(const dnnl::error& e) { return e.status == dnnl_unimplemented; }

namespace {
// One growing buffer per thread: primitives run synchronously and need their scratchpad only
// during execute, so reusing it keeps warm graph-mode runs free of allocator calls.
Tensor& scratchpad_tensor(size_t n) {
  thread_local Tensor pad;
  if (!pad.defined() || pad.nbytes() < n)
    pad = Tensor::empty({static_cast<int64_t>(n > 0 ? n : 1)}, DType::uint8);
  return pad;
}

Tensor& staging_tensor(int slot, size_t n) {
  constexpr int kSlots = 4;
  MYCEL_CHECK(slot >= 0 && slot < kSlots, RuntimeError, "[dnnl] staging buffer slot ", slot,
              " out of range");
  thread_local Tensor bufs[kSlots];
  Tensor& b = bufs[slot];
  if (!b.defined() || b.nbytes() < n)
    b = Tensor::empty({static_cast<int64_t>(n > 0 ? n : 1)}, DType::uint8);
  return b;
}
}  // namespace

Tensor scratchpad(const dnnl::primitive_desc_base& pd) {
  return scratchpad_tensor(pd.scratchpad_desc().get_size());
}
Tensor staging_buffer(int slot, size_t n) { return staging_tensor(slot, n); }
void* scratchpad_data(size_t n) { return scratchpad_tensor(n).data(); }
void* staging_data(int slot, size_t n) { return staging_tensor(slot, n).data(); }

PreparedExec::PreparedExec(dnnl::primitive prim, const dnnl::primitive_desc_base* pd)
    : prim_(std::move(prim)) {
  if (pd) {
    scratch_bytes_ = pd->scratchpad_desc().get_size();
    scratch_ = add(DNNL_ARG_SCRATCHPAD, pd->scratchpad_desc());
  }
}

int PreparedExec::add(int arg, const dnnl::memory::desc& md) {
  mem_.emplace_back(md, engine(), static_cast<void*>(DNNL_MEMORY_NONE));
  ptr_.push_back(nullptr);
  args_.push_back({arg, mem_.back().get()});
  return static_cast<int>(mem_.size()) - 1;
}

void PreparedExec::rebind(int i, const void* p) {
  mem_[i].set_data_handle(const_cast<void*>(p));
  ptr_[i] = p;
}

void PreparedExec::run() {
  if (scratch_ >= 0) set(scratch_, scratchpad_data(scratch_bytes_));
  const dnnl_status_t st = dnnl_primitive_execute(prim_.get(), stream().get(),
                                                  static_cast<int>(args_.size()), args_.data());
  if (st != dnnl_success) throw dnnl::error(st, "could not execute a prepared primitive");
}

}  // namespace mycel::cpu::dnnl_util

namespace mycel::cpu {
namespace {
std::atomic<NnBackend>& backend_choice() {
  static std::atomic<NnBackend> b = [] {
    const char* v = std::getenv("MYCEL_NN_BACKEND");
    if (v && std::strcmp(v, "dnnl") == 0) return NnBackend::kDnnl;
    if (v && std::strcmp(v, "ref") == 0) return NnBackend::kRef;
    return NnBackend::kAuto;
  }();
  return b;
}
}  // namespace

NnBackend nn_backend() { return backend_choice().load(std::memory_order_relaxed); }
void set_nn_backend(NnBackend b) { backend_choice().store(b, std::memory_order_relaxed); }

bool onednn_uses_amx() {
  static const bool amx = [] {
    const auto isa = static_cast<int>(dnnl::get_effective_cpu_isa());
    return (isa & static_cast<int>(dnnl::cpu_isa::avx512_core_amx)) ==
           static_cast<int>(dnnl::cpu_isa::avx512_core_amx);
  }();
  return amx;
}

}  // namespace mycel::cpu
