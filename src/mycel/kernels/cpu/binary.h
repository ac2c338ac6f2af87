// Kernel factories and scalar math for broadcasting binary elementwise ops (inputs already
// promoted to one dtype). Integer math wraps and never traps, as numpy's does.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "mycel/kernels/cpu/as_dtype.h"
#include "mycel/kernels/cpu/elementwise.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// numpy's floor_divide: floats via fmod (exact, NaN/inf like numpy); integers round toward
/// -inf, x // 0 == 0 and INT_MIN // -1 == INT_MIN (numpy's results) without trapping.
template <class T>
inline T floor_div(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    if (y == T(0)) return x / y;
    T mod = std::fmod(x, y);
    T div = (x - mod) / y;
    if (mod != T(0) && ((y < T(0)) != (mod < T(0)))) div -= T(1);
    if (div == T(0)) return std::copysign(T(0), x / y);
    T fl = std::floor(div);
    return div - fl > T(0.5) ? fl + T(1) : fl;
  } else if constexpr (std::is_unsigned_v<T>) {
    T ys = y == T(0) ? T(1) : y;
    return y == T(0) ? T(0) : static_cast<T>(x / ys);
  } else {
    const bool special = y == T(0) || y == T(-1);
    T ys = special ? T(1) : y;
    T q = static_cast<T>(x / ys);
    if (static_cast<T>(x % ys) != T(0) && ((x < T(0)) != (ys < T(0)))) q = static_cast<T>(q - 1);
    if (!special) return q;
    using U = std::make_unsigned_t<T>;
    return y == T(0) ? T(0) : static_cast<T>(U(0) - static_cast<U>(x));  // x // -1 wraps
  }
}

/// numpy's remainder (FloorMod): the result has the divisor's sign; integer x % 0 == 0.
template <class T>
inline T floor_mod(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    T mod = std::fmod(x, y);
    if (y == T(0)) return mod;  // NaN
    if (mod == T(0)) return std::copysign(T(0), y);
    return (y < T(0)) != (mod < T(0)) ? mod + y : mod;
  } else if constexpr (std::is_unsigned_v<T>) {
    T ys = y == T(0) ? T(1) : y;
    return y == T(0) ? T(0) : static_cast<T>(x % ys);
  } else {
    const bool special = y == T(0) || y == T(-1);
    T ys = special ? T(1) : y;
    T r = static_cast<T>(x % ys);
    if (r != T(0) && ((r < T(0)) != (ys < T(0)))) r = static_cast<T>(r + ys);
    return special ? T(0) : r;
  }
}

/// x ** y for integers with y >= 0, by squaring, wrapping on overflow (as numpy does).
template <class T>
inline T int_pow(T x, T y) {
  uint64_t base = static_cast<uint64_t>(static_cast<int64_t>(x)), result = 1;
  for (uint64_t e = static_cast<uint64_t>(y); e; e >>= 1) {
    if (e & 1) result *= base;
    base *= base;
  }
  return static_cast<T>(result);
}

/// numpy's maximum/minimum: a NaN in either operand gives NaN.
template <class T>
inline T nan_max(T x, T y) {
  if constexpr (std::is_floating_point_v<T>)
    if (x != x) return x;
  return x > y ? x : y;
}
template <class T>
inline T nan_min(T x, T y) {
  if constexpr (std::is_floating_point_v<T>)
    if (x != x) return x;
  return x < y ? x : y;
}

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

/// Like same_dtype_binary for ops that do not claim bool (f need not compile for bool).
template <class F>
KernelFn numeric_binary(F f) {
  return [f](const KernelContext& ctx) {
    visit_dtype(ctx.in(0).dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>)
        MYCEL_THROW(TypeError, "[", ctx.op.name, "] does not support bool inputs");
      else
        binary_map<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(0), f);
    });
  };
}

/// Output is floating point (true division, atan2): integer inputs convert to the output dtype.
template <class F>
KernelFn float_binary(F f) {
  return [f](const KernelContext& ctx) {
    DType od = ctx.out(0).dtype();
    Tensor ca, cb;
    const Tensor &a = as_dtype(ctx.in(0), od, ca), &b = as_dtype(ctx.in(1), od, cb);
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
