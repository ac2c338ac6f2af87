// Kernels for broadcasting ternary elementwise ops: select(cond, x, y) and clip_by_value.
#pragma once
#include "mycel/kernels/cpu/as_dtype.h"
#include "mycel/kernels/cpu/binary.h"
#include "mycel/kernels/cpu/elementwise.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// out = cond ? x : y; x and y convert to the output dtype first. cond (bool) is read as uint8_t:
/// GCC vectorizes a select on a byte mask but not on a bool load.
inline void select_kernel(const KernelContext& ctx) {
  DType od = ctx.out(0).dtype();
  Tensor cx, cy;
  const Tensor &x = as_dtype(ctx.in(1), od, cx), &y = as_dtype(ctx.in(2), od, cy);
  visit_any_dtype(od, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    ternary_map<uint8_t, T, T, T>(ctx.in(0), x, y, ctx.out(0),
                                  [](uint8_t c, C a, C b) { return c ? a : b; });
  });
}

/// out = min(max(x, lo), hi) like numpy's clip (NaN propagates); either bound may be absent.
/// Ordered types only (the registry keeps complex values out).
inline void clip_kernel(const KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &lo = ctx.in(1), &hi = ctx.in(2);
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if constexpr (is_complex_v<T>)
      return;
    else if (lo.defined() && hi.defined())
      ternary_map<T, T, T, T>(x, lo, hi, ctx.out(0),
                              [](C v, C a, C b) { return nan_min(nan_max(v, a), b); });
    else if (lo.defined())
      binary_map<T, T, T>(x, lo, ctx.out(0), [](C v, C a) { return nan_max(v, a); });
    else
      binary_map<T, T, T>(x, hi, ctx.out(0), [](C v, C b) { return nan_min(v, b); });
  });
}

}  // namespace mycel::cpu
