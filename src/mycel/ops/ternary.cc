// Ternary elementwise ops with numpy broadcasting: select (the `where` of numpy) and clip.
#include "mycel/kernels/cpu/ternary.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

// cond must be bool; x and y promote to a common dtype; all three broadcast together.
std::vector<TensorMeta> select_infer(const InferContext& c) {
  if (!is_bool(c.in(0).dtype))
    MYCEL_THROW(TypeError, "[select] input 'cond' must be bool, got ", dtype_name(c.in(0).dtype));
  return {infer_broadcast(c, promote_types(c.in(1).dtype, c.in(2).dtype))};
}

// Inputs arrive promoted to one dtype; at least one bound must be given.
std::vector<TensorMeta> clip_infer(const InferContext& c) {
  if (!c.has_input(1) && !c.has_input(2))
    MYCEL_THROW(ValueError,
                "[clip_by_value] 'clip_value_min' and 'clip_value_max' cannot both be None");
  return {infer_broadcast(c, c.in(0).dtype)};
}

}  // namespace

MYCEL_REGISTER_OPS(ternary) {
  OpDef select;
  select.name = "select";
  select.class_name = "Select";
  select.doc = "Elementwise cond ? x : y with broadcasting (cond bool; x, y promoted).";
  select.elementwise = true;
  select.inputs = {{"cond"}, {"x"}, {"y"}};
  select.infer = select_infer;
  select.kernel = cpu::select_kernel;
  select.dtypes = every_dtype();
  select.dtype_input = 1;
  select.grad = "bprop";
  r.add(std::move(select));

  OpDef clip;
  clip.name = "clip_by_value";
  clip.class_name = "ClipByValue";
  clip.doc = "Elementwise min(max(x, clip_value_min), clip_value_max) with broadcasting.";
  clip.elementwise = true;
  clip.inputs = {{"x"}, {"clip_value_min", true}, {"clip_value_max", true}};
  clip.infer = clip_infer;
  clip.kernel = cpu::clip_kernel;
  clip.dtypes = all_dtypes();
  for (DType t : {DType::uint16, DType::uint32, DType::uint64}) clip.dtypes.push_back(t);
  clip.promote_inputs = true;
  clip.grad = "bprop";
  r.add(std::move(clip));
}

// Backward rules: dout is routed to whichever input produced each output element, then summed
// back over broadcasting (bprop::to_input); the bool condition gets no gradient.
MYCEL_REGISTER_BPROPS(ternary) {
  b.add("select", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar cond = g.input(0), zero = g.zeros_like(g.dout());
    return {GradVar(), bprop::to_input(g, g.call("select", {cond, g.dout(), zero}), 1),
            bprop::to_input(g, g.call("select", {cond, zero, g.dout()}), 2)};
  });
  b.add("clip_by_value", [](BpropBuilder& g) -> std::vector<GradVar> {
    // out = min(max(x, lo), hi), differentiated as that composition: at a bound exactly, x keeps
    // the gradient (max and min pass ties to their first argument here); where lo > hi, hi wins.
    DType t = g.out_meta(0).dtype;
    auto promoted = [&](size_t i) {
      GradVar v = g.input(i);
      return g.meta(v).dtype == t ? v : g.cast(v, t);
    };
    GradVar x = promoted(0), zero = g.zeros_like(g.dout());
    GradVar lo = g.input(1).defined() ? promoted(1) : GradVar();
    GradVar hi = g.input(2).defined() ? promoted(2) : GradVar();
    GradVar d_max = g.dout(), d_lo, d_hi;
    if (hi) {
      GradVar m = lo ? g.call("maximum", {x, lo}) : x;
      GradVar over = g.call("greater", {m, hi});
      d_hi = g.call("select", {over, g.dout(), zero});
      d_max = g.call("select", {over, zero, g.dout()});
    }
    GradVar d_x = d_max;
    if (lo) {
      GradVar below = g.call("less", {x, lo});
      d_lo = g.call("select", {below, d_max, zero});
      d_x = g.call("select", {below, zero, d_max});
    }
    return {bprop::to_input(g, d_x, 0), d_lo ? bprop::to_input(g, d_lo, 1) : GradVar(),
            d_hi ? bprop::to_input(g, d_hi, 2) : GradVar()};
  });
}

}  // namespace mycel
