// One oneDNN float32 matmul primitive over three memory descriptors, kept in a cache entry: the
// shared part of the kernels that run a plain matmul of their own (the weight gradient of a
// convolution through a matrix of columns, the chained weight-gradient-and-update launch).
#pragma once
#include <dnnl.hpp>

#include "mycel/kernels/cpu/dnnl_util.h"

namespace mycel::cpu::dnnl_util {

struct PlainMatmulEntry : Entry {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  dnnl::memory::desc a_md, b_md, c_md;

  /// Builds pd and prim from a_md, b_md and c_md (set them first); where oneDNN has no
  /// implementation, ok becomes false and the caller takes its fallback.
  void build_primitive() {
    try {
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), default_attr(),
                                        engine());
      prim = dnnl::matmul(pd);
    } catch (const dnnl::error& err) {
      if (!is_unimplemented(err)) throw;
      ok = false;
    }
  }
};

/// A PlainMatmulEntry's call prepared for one instruction: its three arguments bound once, so a
/// warm launch only sets their addresses (the small-plane convolution GEMMs).
struct PlainMatmulCall {
  std::shared_ptr<PlainMatmulEntry> e;
  PreparedExec exec;
  int a_a = -1, a_b = -1, a_c = -1;

  /// Takes entry and, where it has a primitive, binds its arguments.
  void bind(std::shared_ptr<PlainMatmulEntry> entry) {
    e = std::move(entry);
    if (!e->ok) return;
    exec = PreparedExec(e->prim, &e->pd);
    a_a = exec.add(DNNL_ARG_SRC, e->a_md);
    a_b = exec.add(DNNL_ARG_WEIGHTS, e->b_md);
    a_c = exec.add(DNNL_ARG_DST, e->c_md);
  }

  /// c = a x b, complete on return.
  void run(const void* a, const void* b, void* c) {
    exec.set(a_a, a);
    exec.set(a_b, b);
    exec.set(a_c, c);
    exec.run();
    stream().wait();
  }
};

}  // namespace mycel::cpu::dnnl_util
