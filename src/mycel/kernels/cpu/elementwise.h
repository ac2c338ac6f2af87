// The elementwise loop family: unary maps and broadcasting binary/ternary maps. Ops supply a
// scalar functor; vectorization (contiguous inner loops) and threading live here, once.
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "mycel/core/parallel.h"
#include "mycel/core/tensor.h"

namespace mycel::cpu {

// ---- Scalar helpers shared by the op functors ----

template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

/// x + y, x - y, x * y with two's-complement wrapping for integers (no signed-overflow UB).
template <class T>
inline T wrap_add(T x, T y) {
  if constexpr (is_int_v<T>) {
    using U = std::make_unsigned_t<decltype(x + y)>;
    return static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
  } else {
    return x + y;
  }
}
template <class T>
inline T wrap_sub(T x, T y) {
  if constexpr (is_int_v<T>) {
    using U = std::make_unsigned_t<decltype(x - y)>;
    return static_cast<T>(static_cast<U>(x) - static_cast<U>(y));
  } else {
    return x - y;
  }
}

/// Wrapping negation for integers (INT_MIN stays INT_MIN, as in numpy); plain -x otherwise.
template <class T>
inline T wrap_neg(T x) {
  if constexpr (is_int_v<T>)
    return static_cast<T>(0u - static_cast<std::make_unsigned_t<T>>(x));
  else
    return -x;
}

/// Wrapping integer product (no signed-overflow UB); plain product for floats.
template <class T>
inline T wrap_mul(T x, T y) {
  if constexpr (is_int_v<T>) {
    using U = std::make_unsigned_t<decltype(x * y)>;
    return static_cast<T>(static_cast<U>(x) * static_cast<U>(y));
  } else if constexpr (std::is_same_v<T, bool>) {
    return x && y;
  } else {
    return x * y;
  }
}

/// True for NaN of floating types; always false for integers and bool.
template <class T>
inline bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>)
    return x != x;
  else
    return false;
}

// ---- Loops ----

/// y[i] = f(x[i]) for contiguous x, y; f takes and returns compute types.
template <class In, class Out, class F>
void unary_map(const Tensor& x, Tensor& y, F f) {
  const In* a = x.data<In>();
  Out* o = y.data<Out>();
  parallel_for(x.numel(), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) o[i] = static_cast<Out>(f(static_cast<compute_t<In>>(a[i])));
  });
}

/// Strides of each operand in the output's index space, with broadcast dims at stride 0 and
/// adjacent dims merged where every operand allows it (so most cases become one flat loop).
struct BroadcastPlan {
  Shape shape;                                // collapsed output shape (at least 1-d)
  std::vector<std::vector<int64_t>> strides;  // per operand, collapsed
};
BroadcastPlan plan_broadcast(const Shape& out, const std::vector<const Shape*>& operands);

/// Runs body(offsets..., out_index, count, inner_strides...) over the plan in parallel: for each
/// run of the innermost dimension it calls inner(out_offset, off_0, ..., n) with the per-operand
/// element offsets; innermost strides are plan.strides[k].back().
template <size_t N, class Inner>
void for_each_broadcast_run(const BroadcastPlan& plan, int64_t cost, Inner inner) {
  const int64_t nd = static_cast<int64_t>(plan.shape.size());
  const int64_t inner_n = plan.shape.back();
  int64_t outer = 1;
  for (int64_t d = 0; d + 1 < nd; ++d) outer *= plan.shape[d];
  if (inner_n == 0 || outer == 0) return;
  parallel_for(outer, inner_n * cost, [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(nd > 1 ? nd - 1 : 1, 0);
    int64_t off[N] = {};
    // Decompose b into a multi-index over the outer dims.
    int64_t rem = b;
    for (int64_t d = nd - 2; d >= 0; --d) {
      idx[d] = rem % plan.shape[d];
      rem /= plan.shape[d];
    }
    for (size_t k = 0; k < N; ++k)
      for (int64_t d = 0; d + 1 < nd; ++d) off[k] += idx[d] * plan.strides[k][d];
    for (int64_t o = b; o < e; ++o) {
      inner(o * inner_n, off, inner_n);
      for (int64_t d = nd - 2; d >= 0; --d) {  // increment the outer multi-index
        for (size_t k = 0; k < N; ++k) off[k] += plan.strides[k][d];
        if (++idx[d] < plan.shape[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= plan.strides[k][d] * plan.shape[d];
        idx[d] = 0;
      }
    }
  });
}

/// out = f(a, b) with numpy broadcasting; A, B are element types, f works on compute types.
template <class A, class B, class Out, class F>
void binary_map(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  Out* po = out.data<Out>();
  using CA = compute_t<A>;
  using CB = compute_t<B>;
  const int64_t n = out.numel();
  if (a.numel() == n && b.numel() == n) {  // same shape: one flat loop
    parallel_for(n, 1, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = static_cast<Out>(f(CA(pa[i]), CB(pb[i])));
    });
    return;
  }
  if (b.numel() == 1 && a.numel() == n) {
    const CB vb = CB(pb[0]);
    parallel_for(n, 1, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = static_cast<Out>(f(CA(pa[i]), vb));
    });
    return;
  }
  if (a.numel() == 1 && b.numel() == n) {
    const CA va = CA(pa[0]);
    parallel_for(n, 1, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = static_cast<Out>(f(va, CB(pb[i])));
    });
    return;
  }
  BroadcastPlan plan = plan_broadcast(out.shape(), {&a.shape(), &b.shape()});
  const int64_t sa = plan.strides[0].back(), sb = plan.strides[1].back();
  for_each_broadcast_run<2>(plan, 1, [&](int64_t o, const int64_t* off, int64_t len) {
    const A* xa = pa + off[0];
    const B* xb = pb + off[1];
    Out* y = po + o;
    if (sa == 1 && sb == 1)
      for (int64_t i = 0; i < len; ++i) y[i] = static_cast<Out>(f(CA(xa[i]), CB(xb[i])));
    else if (sa == 1)
      for (int64_t i = 0; i < len; ++i) y[i] = static_cast<Out>(f(CA(xa[i]), CB(xb[0])));
    else if (sb == 1)
      for (int64_t i = 0; i < len; ++i) y[i] = static_cast<Out>(f(CA(xa[0]), CB(xb[i])));
    else
      for (int64_t i = 0; i < len; ++i) y[i] = static_cast<Out>(f(CA(xa[0]), CB(xb[0])));
  });
}

namespace detail {
// One contiguous run of a ternary map; each operand's stride is 0 (broadcast) or 1, fixed at
// compile time so the loop vectorizes.
template <int SA, int SB, int SC, class A, class B, class C, class Out, class F>
void ternary_run(const A* a, const B* b, const C* c, Out* o, int64_t n, const F& f) {
  for (int64_t i = 0; i < n; ++i)
    o[i] = static_cast<Out>(
        f(compute_t<A>(a[i * SA]), compute_t<B>(b[i * SB]), compute_t<C>(c[i * SC])));
}
template <class A, class B, class C, class Out, class F>
void ternary_run(int code, const A* a, const B* b, const C* c, Out* o, int64_t n, const F& f) {
  switch (code) {  // code = 4 * (stride_a != 0) + 2 * (stride_b != 0) + (stride_c != 0)
    case 0:
      return ternary_run<0, 0, 0>(a, b, c, o, n, f);
    case 1:
      return ternary_run<0, 0, 1>(a, b, c, o, n, f);
    case 2:
      return ternary_run<0, 1, 0>(a, b, c, o, n, f);
    case 3:
      return ternary_run<0, 1, 1>(a, b, c, o, n, f);
    case 4:
      return ternary_run<1, 0, 0>(a, b, c, o, n, f);
    case 5:
      return ternary_run<1, 0, 1>(a, b, c, o, n, f);
    case 6:
      return ternary_run<1, 1, 0>(a, b, c, o, n, f);
    default:
      return ternary_run<1, 1, 1>(a, b, c, o, n, f);
  }
}
}  // namespace detail

/// out = f(a, b, c) with numpy broadcasting (select, clip); f works on compute types.
template <class A, class B, class C, class Out, class F>
void ternary_map(const Tensor& a, const Tensor& b, const Tensor& c, Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  const C* pc = c.data<C>();
  Out* po = out.data<Out>();
  auto full = [n](const Tensor& t) { return t.numel() == n; };
  if ((full(a) || a.numel() == 1) && (full(b) || b.numel() == 1) && (full(c) || c.numel() == 1)) {
    // Each operand is whole or a single value: one flat loop, split across threads.
    const int code = 4 * full(a) + 2 * full(b) + full(c);
    parallel_for(n, 1, [&](int64_t s, int64_t e) {
      detail::ternary_run(code, pa + (full(a) ? s : 0), pb + (full(b) ? s : 0),
                          pc + (full(c) ? s : 0), po + s, e - s, f);
    });
    return;
  }
  BroadcastPlan plan = plan_broadcast(out.shape(), {&a.shape(), &b.shape(), &c.shape()});
  const int code = 4 * (plan.strides[0].back() != 0) + 2 * (plan.strides[1].back() != 0) +
                   (plan.strides[2].back() != 0);
  for_each_broadcast_run<3>(plan, 1, [&](int64_t o, const int64_t* off, int64_t len) {
    detail::ternary_run(code, pa + off[0], pb + off[1], pc + off[2], po + o, len, f);
  });
}

}  // namespace mycel::cpu
