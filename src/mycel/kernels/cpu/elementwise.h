// The elementwise loop family: unary maps and broadcasting binary/ternary maps. Ops supply a
// scalar functor; vectorization (contiguous inner loops) and threading live here, once.
#pragma once
#include <cstdint>
#include <vector>

#include "mycel/core/parallel.h"
#include "mycel/core/tensor.h"

namespace mycel::cpu {

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
  Shape shape;                             // collapsed output shape (at least 1-d)
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

/// out = f(a, b, c) with broadcasting (select, clip): the general strided path only.
template <class A, class B, class C, class Out, class F>
void ternary_map(const Tensor& a, const Tensor& b, const Tensor& c, Tensor& out, F f) {
  if (out.numel() == 0) return;
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  const C* pc = c.data<C>();
  Out* po = out.data<Out>();
  BroadcastPlan plan = plan_broadcast(out.shape(), {&a.shape(), &b.shape(), &c.shape()});
  const int64_t sa = plan.strides[0].back(), sb = plan.strides[1].back(), sc = plan.strides[2].back();
  for_each_broadcast_run<3>(plan, 1, [&](int64_t o, const int64_t* off, int64_t len) {
    for (int64_t i = 0; i < len; ++i)
      po[o + i] = static_cast<Out>(f(compute_t<A>(pa[off[0] + i * sa]), compute_t<B>(pb[off[1] + i * sb]),
                                     compute_t<C>(pc[off[2] + i * sc])));
  });
}

}  // namespace mycel::cpu
