// Kernel factories and scalar math for unary elementwise ops: an op supplies a scalar functor
// written once over compute types; these pick the element type at run time and run unary_map.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "mycel/kernels/cpu/elementwise.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// e**x for float32 without branches or library calls, so that loops over it auto-vectorize
/// (glibc's expf does not). Cephes' polynomial on [-ln2/2, ln2/2]; max error about 2 ulp.
/// Overflows to inf, underflows to 0 (through subnormals), propagates NaN.
inline float fast_exp(float x) {
  x = x > 89.0f ? 89.0f : x;  // NaN fails both tests and flows through
  x = x < -104.0f ? -104.0f : x;
  const float shifter = 12582912.0f;  // 1.5 * 2**23: adding it rounds to an integer in the mantissa
  float t = x * 1.44269504088896341f + shifter;
  float n = t - shifter;
  int32_t ni = static_cast<int32_t>(std::bit_cast<uint32_t>(t) & 0x7fffffu) - 0x400000;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2**n as two factors so that n in [-150, 129] never leaves the normal exponent range.
  int32_t n1 = ni >> 1, n2 = ni - n1;
  float s1 = std::bit_cast<float>(static_cast<uint32_t>(n1 + 127) << 23);
  float s2 = std::bit_cast<float>(static_cast<uint32_t>(n2 + 127) << 23);
  return p * s1 * s2;
}
inline double fast_exp(double x) { return std::exp(x); }

/// tanh for float32 as a branch-free rational function (Eigen's coefficients), so loops vectorize;
/// max relative error about 4e-7. NaN propagates; |x| > 7.9 gives +-1.
inline float fast_tanh(float x) {
  const float c = 7.90531110763549805f;
  float xc = x > c ? c : x;
  xc = xc < -c ? -c : xc;
  float x2 = xc * xc;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * xc;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return std::fabs(x) < 0.0004f ? x : p / q;
}
inline double fast_tanh(double x) { return std::tanh(x); }

/// 1 / (1 + e**-x).
template <class T>
inline T sigmoid(T x) {
  return T(1) / (T(1) + fast_exp(-x));
}

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

/// Like float_unary, with a functor built from the attributes once per call: make(attrs) -> f.
template <class Make>
KernelFn float_unary_attrs(Make make) {
  return [make](const KernelContext& ctx) {
    Tensor x = ctx.in(0).to(ctx.out(0).dtype());
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
