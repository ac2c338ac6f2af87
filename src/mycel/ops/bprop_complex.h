// Gradients through complex values, PyTorch's convention: for a real loss L of z = x + iy the
// gradient is dL/dx + i dL/dy (the conjugate Wirtinger derivative, times 2), so a rule for a
// holomorphic f multiplies the output's sensitivity by conj(f'(z)). The rules that follow it
// (docs/autodiff.md "Complex values") use these helpers; other ops leave complex inputs without
// a gradient (bprop::is_float).
#pragma once
#include "mycel/ops/bprop_util.h"

namespace mycel::bprop {

/// Whether forward value v carries a gradient in the complex-aware rules: float or complex.
inline bool is_diff(const BpropBuilder& g, const GradVar& v) {
  return v.defined() && (is_floating(g.meta(v).dtype) || is_complex(g.meta(v).dtype));
}

/// conj(v) when v (a forward value of meta m) is complex; v itself when real.
inline GradVar conj_if_complex(BpropBuilder& g, GradVar v, DType t) {
  return is_complex(t) ? g.call("conj", {v}) : v;
}

/// dx summed back to input i's shape, then given input i's dtype: a real input of a complex
/// result keeps the real part (a cast from complex does); empty when input i has no gradient.
inline GradVar to_input_c(BpropBuilder& g, GradVar dx, size_t i, DType dx_dtype) {
  GradVar x = g.input(i);
  if (!is_diff(g, x)) return {};
  dx = g.reduce_to(dx, x);
  DType t = g.meta(x).dtype;
  return dx_dtype == t ? dx : g.cast(dx, t);
}

}  // namespace mycel::bprop
