// Kernel factories and scalar math for unary elementwise ops: an op supplies a scalar functor
// written once over compute types; these pick the element type at run time and run unary_map.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "mycel/kernels/cpu/as_dtype.h"
#include "mycel/kernels/cpu/elementwise.h"
#include "mycel/kernels/cpu/vmath.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// e**x for float32 without branches or library calls, so that loops over it auto-vectorize
/// (glibc's expf does not); max error 1.02 ulp (vmath.h). The TE code generator pastes the same
/// function into generated kernels, so their results equal these bit for bit.
inline float fast_exp(float x) { return vm::vm_exp(x); }
inline double fast_exp(double x) { return std::exp(x); }

/// tanh for float32 as a branch-free rational function (vmath.h), so loops vectorize; max error
/// 4.8 ulp. NaN propagates; |x| >= 9.1 gives +-1.
inline float fast_tanh(float x) { return vm::vm_tanh(x); }
inline double fast_tanh(double x) { return std::tanh(x); }

/// erf for float32 without branches (vmath.h), so loops vectorize; max error in vmath.h.
inline float fast_erf(float x) { return vm::vm_erf(x); }
inline double fast_erf(double x) { return std::erf(x); }

/// 1 / (1 + e**-x) (float32: vmath.h's, through e**-|x|, so a large negative x gives e**x, not 0).
template <class T>
inline T sigmoid(T x) {
  return T(1) / (T(1) + fast_exp(-x));
}
inline float sigmoid(float x) { return vm::vm_sigmoid(x); }

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
    Tensor cx;
    const Tensor& x = as_dtype(ctx.in(0), ctx.out(0).dtype(), cx);
    visit_float_dtype(x.dtype(), ctx.op.name.c_str(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      unary_map<T, T>(x, ctx.out(0), f);
    });
  };
}

/// Like float_unary, with a functor built from the attributes once per call: make(attrs) -> f.
template <class Make>
KernelFn float_unary_attrs(Make make) {
  return [make](const KernelContext& ctx) {
    Tensor cx;
    const Tensor& x = as_dtype(ctx.in(0), ctx.out(0).dtype(), cx);
    visit_float_dtype(x.dtype(), ctx.op.name.c_str(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      unary_map<T, T>(x, ctx.out(0), make(ctx.attrs, compute_t<T>{}));
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
