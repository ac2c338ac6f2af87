// Kernel factories for unary elementwise ops: an op supplies a scalar functor written once over
// compute types; these pick the element type at run time and run unary_map.
#pragma once
#include "mycel/kernels/cpu/elementwise.h"
#include "mycel/ops/registry.h"

namespace mycel::cpu {

/// Output dtype == input dtype; f must compile for every compute type.
template <class F>
KernelFn same_dtype_unary(F f) {
  return [f](const KernelContext& ctx) {
    visit_dtype(ctx.in(0).dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      unary_map<T, T>(ctx.in(0), ctx.out(0), f);
    });
  };
}

/// Output is floating point (int/bool inputs are converted first, as numpy does for exp, sin...).
template <class F>
KernelFn float_unary(F f) {
  return [f](const KernelContext& ctx) {
    Tensor x = ctx.in(0).to(ctx.out(0).dtype());
    visit_float_dtype(x.dtype(), ctx.op.name.c_str(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      unary_map<T, T>(x, ctx.out(0), f);
    });
  };
}

/// Output is bool (isnan, logical_not): f(x) -> bool.
template <class F>
KernelFn predicate_unary(F f) {
  return [f](const KernelContext& ctx) {
    visit_dtype(ctx.in(0).dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      unary_map<T, bool>(ctx.in(0), ctx.out(0), f);
    });
  };
}

}  // namespace mycel::cpu
