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

}  // namespace mycel::cpu::dnnl_util
