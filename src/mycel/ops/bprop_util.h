// Small helpers shared by the backward rules of the elementwise, reduction and data-movement
// families. Everything here composes registry ops through the builder, so the rules built with
// them stay differentiable (higher-order gradients).
#pragma once
#include <algorithm>
#include <vector>

#include "mycel/ops/bprop.h"

namespace mycel::bprop {

/// Whether forward value v is a floating tensor (integer and bool inputs get no gradient).
inline bool is_float(const BpropBuilder& g, const GradVar& v) {
  return v.defined() && is_floating(g.meta(v).dtype);
}

/// A bool tensor as 0/1 in dtype t (masks that select where a gradient flows).
inline GradVar as_mask(BpropBuilder& g, GradVar b, DType t) { return g.cast(b, t); }

/// Sums dx (shaped and typed like the op's output 0) back to input i's shape and casts it to that
/// input's dtype (inputs may have been promoted); empty when input i is absent or not floating.
inline GradVar to_input(BpropBuilder& g, GradVar dx, size_t i) {
  GradVar x = g.input(i);
  if (!is_float(g, x)) return {};
  dx = g.reduce_to(dx, x);
  DType t = g.meta(x).dtype;
  return g.out_meta(0).dtype == t ? dx : g.cast(dx, t);
}

/// Reinserts the reduced axes (sorted, normalized) of a keep_dims=false reduction result, so
/// that it broadcasts against the input; uses expand_dims, which needs no concrete sizes.
inline GradVar unreduce(BpropBuilder& g, GradVar v, std::vector<int64_t> axes, bool keep_dims) {
  if (keep_dims) return v;
  std::sort(axes.begin(), axes.end());
  for (int64_t a : axes) v = g.call("expand_dims", {v}, {{"axis", a}});
  return v;
}

/// v broadcast to the shape of forward value `like` (dims may be dynamic).
inline GradVar broadcast_like(BpropBuilder& g, GradVar v, GradVar like) {
  return g.call("broadcast_like", {v, like});
}

}  // namespace mycel::bprop
