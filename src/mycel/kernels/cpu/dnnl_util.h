// oneDNN plumbing shared by the dense/conv kernels: the process-wide engine, a per-thread stream,
// dtype mapping, and the primitive cache (a repeated call with the same shapes builds nothing).
#pragma once
#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>
#include <string>
#include <unordered_map>

#include "mycel/core/parallel.h"
#include "mycel/core/tensor.h"

namespace mycel::cpu::dnnl_util {

/// The one CPU engine.
dnnl::engine& engine();
/// This thread's stream on engine() (a CPU stream is cheap; per-thread keeps callers independent).
dnnl::stream& stream();
/// oneDNN's data type for a Mycel dtype (float16, bfloat16, float32 only).
dnnl::memory::data_type to_dnnl(DType t);
/// Attributes every cached primitive uses: user-managed scratchpad, so concurrent calls are safe.
dnnl::primitive_attr default_attr();

/// Base of a cached computation: primitives, descriptors and reorders built for one key.
struct Entry {
  virtual ~Entry() = default;
  bool ok = true;  // false: oneDNN has no implementation here (e.g. bf16 below AVX-512); use f32
};

/// Returns the entry for `key`, building it with `build` on a miss (LRU, guarded by a mutex).
std::shared_ptr<Entry> lookup(const std::string& key,
                              const std::function<std::shared_ptr<Entry>()>& build);
/// Typed form of lookup.
template <class E, class Build>
std::shared_ptr<E> cached(const std::string& key, Build&& build) {
  return std::static_pointer_cast<E>(
      lookup(key, [&]() -> std::shared_ptr<Entry> { return build(); }));
}
/// Number of primitive builds so far (cache misses); tests use it to check that hits build nothing.
int64_t build_count();
/// Entries now held.
size_t cache_size();

/// Builds a cache key from streamed parts: key("matmul", dims, dtype, ...). The thread count
/// comes first: oneDNN fixes a primitive's work split for the thread count at creation, so a
/// primitive built for 1 thread must not serve a run with 2 (set_context(num_threads=...)).
template <class... Args>
std::string key(const Args&... args) {
  std::ostringstream os;
  os << 't' << num_threads() << '|';
  ((os << args << '|'), ...);
  return os.str();
}
std::ostream& operator<<(std::ostream& os, const dnnl::memory::dims& d);

/// True when `e` is oneDNN saying it has no implementation (not a real failure).
bool is_unimplemented(const dnnl::error& e);
/// A scratchpad buffer for pd (user scratchpad mode); hold the returned tensor until execution
/// ends.
Tensor scratchpad(const dnnl::primitive_desc_base& pd);
/// A per-thread buffer of at least n bytes for a reorder to or from a primitive's layout, one per
/// slot (0-3) so one primitive call can stage its source, weights and destination at once; like
/// the scratchpad it is reused by the next call, so warm runs allocate nothing.
Tensor staging_buffer(int slot, size_t n);
/// The buffers of scratchpad() and staging_buffer() as raw pointers (no tensor copied: a prepared
/// launch allocates nothing).
void* scratchpad_data(size_t n);
void* staging_data(int slot, size_t n);

/// One oneDNN primitive call prepared for an instruction (graph mode): memory objects made once,
/// whose data handles change only when a buffer moved, and the C argument array, so a launch
/// builds no key, takes no lock and allocates nothing of ours. (oneDNN's own execute still builds
/// an argument map inside the library.)
class PreparedExec {
 public:
  PreparedExec() = default;
  /// Prepares `prim`; with `pd`, a user scratchpad of pd's size is passed from scratchpad_data().
  explicit PreparedExec(dnnl::primitive prim, const dnnl::primitive_desc_base* pd = nullptr);
  bool defined() const { return static_cast<bool>(prim_); }
  /// Adds an argument; returns its index for set().
  int add(int arg, const dnnl::memory::desc& md);
  /// Points argument i at p (a no-op when it is there already).
  void set(int i, const void* p) {
    if (ptr_[i] != p) rebind(i, p);
  }
  /// Executes on this thread's stream (the caller waits once for the launch's calls).
  void run();

 private:
  void rebind(int i, const void* p);
  dnnl::primitive prim_;
  std::vector<dnnl::memory> mem_;
  std::vector<const void*> ptr_;
  std::vector<dnnl_exec_arg_t> args_;
  int scratch_ = -1;
  size_t scratch_bytes_ = 0;
};

/// Wraps a tensor's buffer (no copy).
inline dnnl::memory wrap(const dnnl::memory::desc& md, const Tensor& t) {
  return dnnl::memory(md, engine(), t.data());
}

/// A cached single primitive on plain layouts (pooling, softmax, normalization).
struct PrimEntry : Entry {
  dnnl::primitive_desc_base pd;
  dnnl::primitive prim;
};
/// Runs e's primitive on args plus a scratchpad of its own, and waits for it.
inline void execute(const PrimEntry& e, std::unordered_map<int, dnnl::memory> args) {
  Tensor pad = scratchpad(e.pd);
  args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(e.pd.scratchpad_desc(), engine(), pad.data());
  e.prim.execute(stream(), args);
  stream().wait();
}

}  // namespace mycel::cpu::dnnl_util
