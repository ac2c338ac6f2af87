// Kernel factories for broadcasting binary elementwise ops (inputs already promoted to one dtype).
#pragma once
#include "mycel/kernels/cpu/elementwise.h"
#include "mycel/ops/registry.h"

namespace mycel::cpu {

/// Output dtype == the (promoted) input dtype.
template <class F>
KernelFn same_dtype_binary(F f) {
  return [f](const KernelContext& ctx) {
    visit_dtype(ctx.in(0).dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_map<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(0), f);
    });
  };
}

/// Output is floating point (true division, atan2): integer inputs convert to the output dtype.
template <class F>
KernelFn float_binary(F f) {
  return [f](const KernelContext& ctx) {
    DType od = ctx.out(0).dtype();
    Tensor a = ctx.in(0).to(od), b = ctx.in(1).to(od);
    visit_float_dtype(od, ctx.op.name.c_str(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_map<T, T, T>(a, b, ctx.out(0), f);
    });
  };
}

/// Output is bool (comparisons, logical ops).
template <class F>
KernelFn predicate_binary(F f) {
  return [f](const KernelContext& ctx) {
    visit_dtype(ctx.in(0).dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_map<T, T, bool>(ctx.in(0), ctx.in(1), ctx.out(0), f);
    });
  };
}

}  // namespace mycel::cpu
