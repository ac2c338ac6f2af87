// Reductions (sum, mean, max, var, argmax, ...) and scans (cumsum). Output dtypes follow numpy:
// sums and products of bools and integers are int64 (numpy gives uint64 for uint8; we have no
// uint64), means, variances and logsumexp of integers are float64, max/min keep the dtype.
#include "mycel/kernels/cpu/reduce.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

using DTypeRule = DType (*)(DType);
DType keep_dtype(DType t) { return t; }
DType int64_if_integral(DType t) { return is_floating(t) ? t : DType::int64; }
DType float64_if_integral(DType t) { return is_floating(t) ? t : DType::float64; }
DType bool_dtype(DType) { return DType::bool_; }

// Output shape of reducing `axes` (normalized, sorted) of shape.
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keep_dims) {
  Shape out;
  size_t k = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced = k < axes.size() && axes[k] == static_cast<int64_t>(d);
    if (reduced) ++k;
    if (!reduced) out.push_back(shape[d]);
    else if (keep_dims) out.push_back(1);
  }
  return out;
}

// Elements each output reduces over (throws for ops without an identity when there are none).
void check_nonempty(const InferContext& c, const Shape& shape, const std::vector<int64_t>& axes,
                    const char* what) {
  int64_t count = 1;
  for (int64_t a : axes) count *= shape[a];
  if (count == 0)
    MYCEL_THROW(ValueError, "[", c.op.name, "] cannot compute the ", what,
                " over an empty axis: input 'x' has shape ", shape_str(shape));
}

// Infer for axis-list reductions; `what` != nullptr marks ops with no identity (max, min).
InferFn reduce_infer(DTypeRule rule, const char* what = nullptr) {
  return [rule, what](const InferContext& c) -> std::vector<TensorMeta> {
    const TensorMeta& x = c.in(0);
    auto axes = normalize_axes(c.attrs.get_ints("axis"), static_cast<int64_t>(x.shape.size()),
                               c.op.name);
    if (what) check_nonempty(c, x.shape, axes, what);
    return {{reduced_shape(x.shape, axes, c.attrs.get_bool("keep_dims")), rule(x.dtype)}};
  };
}

// The one axis of argmax/argmin/cumsum; a 0-d input acts as a 1-element vector (axis 0 or -1).
std::vector<int64_t> single_axis(const InferContext& c) {
  int64_t nd = static_cast<int64_t>(c.in(0).shape.size()), axis = c.attrs.get_int("axis");
  if (nd > 0) return {normalize_axis(axis, nd, c.op.name.c_str())};
  if (axis != 0 && axis != -1)
    MYCEL_THROW(ValueError, "[", c.op.name, "] axis ", axis, " is out of range for a tensor of rank 0",
                " (expected axis 0 or -1)");
  return {};
}

std::vector<TensorMeta> arg_infer(const InferContext& c) {
  const TensorMeta& x = c.in(0);
  auto axes = single_axis(c);
  check_nonempty(c, x.shape, axes, c.op.name == "argmax" ? "argmax" : "argmin");
  return {{reduced_shape(x.shape, axes, c.attrs.get_bool("keep_dims")), DType::int64}};
}

std::vector<TensorMeta> cumsum_infer(const InferContext& c) {
  single_axis(c);
  return {{c.in(0).shape, int64_if_integral(c.in(0).dtype)}};
}

std::vector<AttrDef> axes_attrs() {
  return {{"axis", AttrKind::kInts, std::vector<int64_t>{}, false, {"dim"}},
          {"keep_dims", AttrKind::kBool, false, false, {"keepdims", "keepdim"}}};
}

OpDef reduction(std::string name, std::string cls, std::string doc, InferFn infer, KernelFn kernel,
                std::string grad = "todo") {
  return make_op(std::move(name), std::move(cls), std::move(doc), {{"x"}}, axes_attrs(),
                 std::move(infer), std::move(kernel), all_dtypes(), std::move(grad));
}

}  // namespace

MYCEL_REGISTER_OPS(reduce) {
  using namespace cpu;
  r.add(reduction("sum", "ReduceSum", "Sum over axes (all if axis is empty); ints sum to int64.",
                  reduce_infer(int64_if_integral), sum_kernel));
  r.add(reduction("mean", "ReduceMean", "Mean over axes (all if axis is empty); ints give float64.",
                  reduce_infer(float64_if_integral), mean_kernel));
  r.add(reduction("prod", "ReduceProd", "Product over axes (all if axis is empty); ints give int64.",
                  reduce_infer(int64_if_integral), prod_kernel));
  r.add(reduction("max", "ReduceMax", "Maximum over axes (all if axis is empty); NaN propagates.",
                  reduce_infer(keep_dtype, "maximum"), max_kernel));
  r.add(reduction("min", "ReduceMin", "Minimum over axes (all if axis is empty); NaN propagates.",
                  reduce_infer(keep_dtype, "minimum"), min_kernel));
  r.add(reduction("all", "ReduceAll", "Whether every element over axes is nonzero.",
                  reduce_infer(bool_dtype), all_kernel, "none"));
  r.add(reduction("any", "ReduceAny", "Whether some element over axes is nonzero.",
                  reduce_infer(bool_dtype), any_kernel, "none"));
  r.add(reduction("logsumexp", "LogSumExp", "log(sum(exp(x))) over axes, computed stably.",
                  reduce_infer(float64_if_integral), logsumexp_kernel));
  OpDef var = reduction("var", "Var", "Variance over axes with divisor count - ddof (numpy's var).",
                        reduce_infer(float64_if_integral), var_kernel);
  var.attrs.push_back({"ddof", AttrKind::kInt, int64_t{0}, false, {"correction"}});
  OpDef std_ = reduction("std", "Std", "Standard deviation over axes, divisor count - ddof.",
                         reduce_infer(float64_if_integral), std_kernel);
  std_.attrs = var.attrs;
  r.add(std::move(var));
  r.add(std::move(std_));

  for (bool is_max : {true, false}) {
    OpDef d = reduction(is_max ? "argmax" : "argmin", is_max ? "Argmax" : "Argmin",
                        is_max ? "Index (int64) of the first maximum along axis; NaN counts as largest."
                               : "Index (int64) of the first minimum along axis; NaN counts as smallest.",
                        arg_infer, is_max ? argmax_kernel : argmin_kernel, "none");
    d.attrs = {{"axis", AttrKind::kInt, int64_t{-1}, false, {"dim"}},
               {"keep_dims", AttrKind::kBool, false, false, {"keepdims", "keepdim"}}};
    r.add(std::move(d));
  }

  OpDef cumsum = reduction("cumsum", "CumSum",
                           "Cumulative sum along axis (exclusive / reverse as in MindSpore's CumSum).",
                           cumsum_infer, cumsum_kernel);
  cumsum.attrs = {{"axis", AttrKind::kInt, std::monostate{}, false, {"dim"}},
                  {"exclusive", AttrKind::kBool, false, false, {}},
                  {"reverse", AttrKind::kBool, false, false, {}}};
  r.add(std::move(cumsum));
}

}  // namespace mycel
