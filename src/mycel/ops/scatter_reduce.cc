// The N-d scatter reductions of MindSpore other than add: tensor_scatter_mul/div/max/min
// (TensorScatterMul, ...): input with each updates slice combined into the slice that an index
// row of `indices` (..., K) addresses, in order. Gradients are MindSpore's (exact for distinct
// indices): mul/div scale dout by the updates, max/min share dout among the tied candidates.
#include "mycel/kernels/cpu/scatter_reduce.h"
#include "mycel/core/dynamic_dims.h"
#include "mycel/kernels/cpu/index.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/shape_common.h"

namespace mycel {
namespace {

using cpu::ScatterReduce;

std::vector<TensorMeta> infer_scatter_reduce(const InferContext& c) {
  for (size_t i : {size_t{1}})
    if (c.in(i).dtype != DType::int32 && c.in(i).dtype != DType::int64)
      MYCEL_THROW(TypeError, "[", c.op.name, "] input 'indices' must be int32 or int64, got ",
                  dtype_name(c.in(i).dtype));
  const Shape &x = c.in(0).shape, &idx = c.in(1).shape;
  const int64_t nd = static_cast<int64_t>(x.size());
  if (!idx.empty() && is_dynamic_placeholder(idx.back())) {  // depth known when it runs
    check_same_dtype(c, 0, 2);
    return {c.in(0)};
  }
  if (idx.empty() || idx.back() < 1 || idx.back() > nd)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input 'indices' shape ", shape_str(idx),
                ": the last dimension (index depth) must be in [1, ", nd,
                "], the rank of 'input' shape ", shape_str(x));
  check_same_dtype(c, 0, 2);
  Shape want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), x.begin() + idx.back(), x.end());
  if (!shapes_agree(c.in(2).shape, want))
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'updates' shape ", shape_str(c.in(2).shape),
                " must be ", shape_str(want), " for 'input' shape ", shape_str(x),
                " and 'indices' shape ", shape_str(idx));
  return {c.in(0)};
}

KernelFn scatter_reduce_kernel(ScatterReduce op) {
  return [op](const KernelContext& c) {
    const Shape& x = c.in(0).shape();
    const int64_t k = c.in(1).shape().back();
    auto rows =
        cpu::linear_indices(c.in(1), Shape(x.begin(), x.begin() + k), true, c.op.name.c_str());
    cpu::scatter_reduce_blocks(c.in(0), c.in(2), rows, numel(Shape(x.begin() + k, x.end())), op,
                               c.out(0));
  };
}

OpDef scatter_reduce_op(std::string name, std::string cls, std::string doc, ScatterReduce op) {
  return make_op(std::move(name), std::move(cls), std::move(doc),
                 {{"input"}, {"indices"}, {"updates"}}, {}, infer_scatter_reduce,
                 scatter_reduce_kernel(op), numeric_dtypes(), "bprop");
}

}  // namespace

MYCEL_REGISTER_OPS(scatter_reduce) {
  r.add(scatter_reduce_op("tensor_scatter_mul", "TensorScatterMul",
                          "input with its slices at indices[..., :K] multiplied by updates "
                          "(duplicates compound).",
                          ScatterReduce::kMul));
  r.add(scatter_reduce_op("tensor_scatter_div", "TensorScatterDiv",
                          "input with its slices at indices[..., :K] divided by updates "
                          "(duplicates compound).",
                          ScatterReduce::kDiv));
  r.add(scatter_reduce_op("tensor_scatter_max", "TensorScatterMax",
                          "input with its slices at indices[..., :K] replaced by their maximum "
                          "with updates.",
                          ScatterReduce::kMax));
  r.add(scatter_reduce_op("tensor_scatter_min", "TensorScatterMin",
                          "input with its slices at indices[..., :K] replaced by their minimum "
                          "with updates.",
                          ScatterReduce::kMin));
}

MYCEL_REGISTER_BPROPS(scatter_reduce) {
  // d input = the op applied to dout (the same scaling); d updates from the gathered values.
  b.add("tensor_scatter_mul", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar x = g.input(0), idx = g.input(1), u = g.input(2);
    if (!bprop::is_float(g, x)) return {GradVar(), GradVar(), GradVar()};
    GradVar dx = g.call("tensor_scatter_mul", {g.dout(), idx, u});
    GradVar du = g.mul(g.call("gather_nd", {x, idx}), g.call("gather_nd", {g.dout(), idx}));
    return {dx, GradVar(), du};
  });
  b.add("tensor_scatter_div", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar x = g.input(0), idx = g.input(1), u = g.input(2);
    if (!bprop::is_float(g, x)) return {GradVar(), GradVar(), GradVar()};
    GradVar dx = g.call("tensor_scatter_div", {g.dout(), idx, u});
    // d (x / u) / du = -x / u^2
    GradVar num = g.mul(g.call("gather_nd", {x, idx}), g.call("gather_nd", {g.dout(), idx}));
    return {dx, GradVar(), g.neg(g.div(num, g.mul(u, u)))};
  });
  // max/min: dout goes to the candidates equal to the result (input element and updates),
  // shared evenly among ties.
  for (const char* name : {"tensor_scatter_max", "tensor_scatter_min"}) {
    b.add(name, [](BpropBuilder& g) -> std::vector<GradVar> {
      GradVar x = g.input(0), idx = g.input(1), u = g.input(2), out = g.out();
      if (!bprop::is_float(g, x)) return {GradVar(), GradVar(), GradVar()};
      const DType t = g.meta(x).dtype;
      GradVar x_hit = bprop::as_mask(g, g.call("equal", {x, out}), t);
      GradVar u_hit = bprop::as_mask(g, g.call("equal", {u, g.call("gather_nd", {out, idx})}), t);
      GradVar hits = g.add(x_hit, g.call("tensor_scatter_add", {g.zeros_like(x), idx, u_hit}));
      GradVar share = g.div(g.dout(), hits);  // hits >= 1 wherever out came from a candidate
      return {g.mul(share, x_hit), GradVar(), g.mul(g.call("gather_nd", {share, idx}), u_hit)};
    });
  }
}

}  // namespace mycel
