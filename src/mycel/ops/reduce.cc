// Reductions (sum, mean, max, var, argmax, ...) and scans (cumsum, cumprod). Output dtypes follow
// numpy: sums and products of bools and integers are int64 (numpy gives uint64 for uint8; we have
// no uint64), means, variances and logsumexp of integers are float64, max/min keep the dtype.
#include "mycel/kernels/cpu/reduce.h"
#include "mycel/ops/bprop_complex.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

using DTypeRule = DType (*)(DType);
DType keep_dtype(DType t) { return t; }
// numpy's: uint16/32/64 sum to uint64, complex values stay complex.
DType int64_if_integral(DType t) {
  if (is_floating(t) || is_complex(t)) return t;
  return t == DType::uint16 || t == DType::uint32 || t == DType::uint64 ? DType::uint64
                                                                        : DType::int64;
}
DType float64_if_integral(DType t) { return is_floating(t) || is_complex(t) ? t : DType::float64; }
// var/std: numpy's var of complex values is real (the mean squared modulus of x - mean).
DType real_float64_if_integral(DType t) {
  if (t == DType::complex64) return DType::float32;
  if (t == DType::complex128) return DType::float64;
  return float64_if_integral(t);
}
DType bool_dtype(DType) { return DType::bool_; }

// Output shape of reducing `axes` (normalized, sorted) of shape.
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keep_dims) {
  Shape out;
  size_t k = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced = k < axes.size() && axes[k] == static_cast<int64_t>(d);
    if (reduced) ++k;
    if (!reduced)
      out.push_back(shape[d]);
    else if (keep_dims)
      out.push_back(1);
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
    auto axes =
        normalize_axes(c.attrs.get_ints("axis"), static_cast<int64_t>(x.shape.size()), c.op.name);
    if (what) check_nonempty(c, x.shape, axes, what);
    return {{reduced_shape(x.shape, axes, c.attrs.get_bool("keep_dims")), rule(x.dtype)}};
  };
}

// The one axis of argmax/argmin/cumsum; a 0-d input acts as a 1-element vector (axis 0 or -1).
std::vector<int64_t> single_axis(const InferContext& c) {
  int64_t nd = static_cast<int64_t>(c.in(0).shape.size()), axis = c.attrs.get_int("axis");
  if (nd > 0) return {normalize_axis(axis, nd, c.op.name.c_str())};
  if (axis != 0 && axis != -1)
    MYCEL_THROW(ValueError, "[", c.op.name, "] axis ", axis,
                " is out of range for a tensor of rank 0", " (expected axis 0 or -1)");
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

// Which of the extended dtypes (dtype.h) a reduction takes besides all_dtypes().
enum class Extra { kNone, kUnsigned, kUnsignedAndComplex };

OpDef reduction(std::string name, std::string cls, std::string doc, InferFn infer, KernelFn kernel,
                std::string grad = "bprop", Extra extra = Extra::kNone) {
  std::vector<DType> dtypes = all_dtypes();
  if (extra != Extra::kNone)
    for (DType t : {DType::uint16, DType::uint32, DType::uint64}) dtypes.push_back(t);
  if (extra == Extra::kUnsignedAndComplex)
    for (DType t : {DType::complex64, DType::complex128}) dtypes.push_back(t);
  return make_op(std::move(name), std::move(cls), std::move(doc), {{"x"}}, axes_attrs(),
                 std::move(infer), std::move(kernel), dtypes, std::move(grad));
}

// Sharding: a split reduced dim leaves a partial result that an AllReduce with `combine` finishes
// ("mean" sums and divides by the group size: slices are equal). Ops whose partial results do
// not combine (var, logsumexp) never split a reduced dim.
OpDef with_reduce_rule(OpDef d, std::string combine) {
  shard::set_label_rule(d, [combine](const shard::ShardContext& c) {
    const Shape& xs = c.in(0).shape;
    const int64_t nd = static_cast<int64_t>(xs.size());
    std::vector<bool> reduced(xs.size(), c.attrs.get_ints("axis").empty());
    for (int64_t a : c.attrs.get_ints("axis"))
      reduced[normalize_axis(a, nd, c.op.name.c_str())] = true;
    const bool keep = c.attrs.get_bool("keep_dims");
    shard::LabelSpec sp;
    sp.inputs = {shard::labels(xs.size())};
    std::string out;
    for (size_t d = 0; d < xs.size(); ++d)
      if (!reduced[d])
        out += sp.inputs[0][d];
      else if (keep)
        out += '1';
    sp.outputs = {out};
    sp.reduce_op = combine.empty() ? "sum" : combine;
    sp.no_partial = combine.empty();
    return sp;
  });
  return d;
}

}  // namespace

MYCEL_REGISTER_OPS(reduce) {
  using namespace cpu;
  r.add(with_traits(
      with_reduce_rule(
          reduction("sum", "ReduceSum", "Sum over axes (all if axis is empty); ints sum to int64.",
                    reduce_infer(int64_if_integral), sum_kernel, "bprop",
                    Extra::kUnsignedAndComplex),
          "sum"),
      reduce_fusion(ReduceFusion::kSum)));
  r.add(with_traits(
      with_reduce_rule(reduction("mean", "ReduceMean",
                                 "Mean over axes (all if axis is empty); ints give float64.",
                                 reduce_infer(float64_if_integral), mean_kernel, "bprop",
                                 Extra::kUnsignedAndComplex),
                       "mean"),
      reduce_fusion(ReduceFusion::kMean)));
  r.add(with_reduce_rule(
      reduction("prod", "ReduceProd", "Product over axes (all if axis is empty); ints give int64.",
                reduce_infer(int64_if_integral), prod_kernel, "bprop", Extra::kUnsignedAndComplex),
      "prod"));
  r.add(with_traits(
      with_reduce_rule(
          reduction("max", "ReduceMax",
                    "Maximum over axes (all if axis is empty); NaN propagates; tied "
                    "maxima share the gradient.",
                    reduce_infer(keep_dtype, "maximum"), max_kernel, "bprop", Extra::kUnsigned),
          "max"),
      reduce_fusion(ReduceFusion::kMax)));
  r.add(with_traits(
      with_reduce_rule(
          reduction("min", "ReduceMin",
                    "Minimum over axes (all if axis is empty); NaN propagates; tied "
                    "minima share the gradient.",
                    reduce_infer(keep_dtype, "minimum"), min_kernel, "bprop", Extra::kUnsigned),
          "min"),
      reduce_fusion(ReduceFusion::kMin)));
  r.add(
      with_reduce_rule(reduction("all", "ReduceAll", "Whether every element over axes is nonzero.",
                                 reduce_infer(bool_dtype), all_kernel, "none"),
                       "min"));
  r.add(with_reduce_rule(reduction("any", "ReduceAny", "Whether some element over axes is nonzero.",
                                   reduce_infer(bool_dtype), any_kernel, "none"),
                         "max"));
  r.add(with_reduce_rule(
      reduction("logsumexp", "LogSumExp", "log(sum(exp(x))) over axes, computed stably.",
                reduce_infer(float64_if_integral), logsumexp_kernel, "bprop", Extra::kUnsigned),
      ""));
  OpDef var = reduction("var", "Var",
                        "Variance over axes with divisor count - ddof (numpy's var; real for "
                        "complex x).",
                        reduce_infer(real_float64_if_integral), var_kernel, "bprop",
                        Extra::kUnsignedAndComplex);
  var.attrs.push_back({"ddof", AttrKind::kInt, int64_t{0}, false, {"correction"}});
  OpDef std_ = reduction(
      "std", "Std", "Standard deviation over axes, divisor count - ddof (real for complex x).",
      reduce_infer(real_float64_if_integral), std_kernel, "bprop", Extra::kUnsignedAndComplex);
  std_.attrs = var.attrs;
  r.add(std::move(var));
  r.add(std::move(std_));

  for (bool is_max : {true, false}) {
    OpDef d =
        reduction(is_max ? "argmax" : "argmin", is_max ? "Argmax" : "Argmin",
                  is_max ? "Index (int64) of the first maximum along axis; NaN counts as largest."
                         : "Index (int64) of the first minimum along axis; NaN counts as smallest.",
                  arg_infer, is_max ? argmax_kernel : argmin_kernel, "none", Extra::kUnsigned);
    d.attrs = {{"axis", AttrKind::kInt, int64_t{-1}, false, {"dim"}},
               {"keep_dims", AttrKind::kBool, false, false, {"keepdims", "keepdim"}}};
    r.add(std::move(d));
  }

  // Scans keep the reductions' dtype rules (numpy's cumsum/cumprod: integers give int64, the
  // wider unsigned types uint64).
  const std::vector<AttrDef> scan_attrs = {
      {"axis", AttrKind::kInt, std::monostate{}, false, {"dim"}},
      {"exclusive", AttrKind::kBool, false, false, {}},
      {"reverse", AttrKind::kBool, false, false, {}}};
  OpDef cumsum =
      reduction("cumsum", "CumSum",
                "Cumulative sum along axis (exclusive / reverse as in MindSpore's CumSum).",
                cumsum_infer, cumsum_kernel, "bprop", Extra::kUnsignedAndComplex);
  cumsum.attrs = scan_attrs;
  r.add(std::move(cumsum));
  OpDef cumprod =
      reduction("cumprod", "CumProd",
                "Cumulative product along axis (exclusive / reverse as in MindSpore's CumProd).",
                cumsum_infer, cumprod_kernel, "bprop", Extra::kUnsignedAndComplex);
  cumprod.attrs = scan_attrs;
  r.add(std::move(cumprod));
  // cumprod's gradient as one exact pass (a division by x would fail at zeros); its own gradient
  // is not defined (second derivatives of cumprod are not supported).
  OpDef cumprod_grad = make_op(
      "cumprod_grad", "CumProdGrad", "Gradient of cumprod: dx from (x, dout), exact at zeros.",
      {{"x"}, {"dout"}}, scan_attrs,
      [](const InferContext& c) -> std::vector<TensorMeta> {
        single_axis(c);
        check_float(c, 0);
        check_same_dtype(c, 0, 1);
        if (c.in(0).shape != c.in(1).shape)
          MYCEL_THROW(ShapeError, "[cumprod_grad] 'dout' must have the shape of 'x' ",
                      shape_str(c.in(0).shape), ", got ", shape_str(c.in(1).shape));
        return {c.in(0)};
      },
      cumprod_grad_kernel, float_dtypes(), "none");
  r.add(std::move(cumprod_grad));
}

// Backward rules. A reduction's dout is first given back its reduced axes (bprop::unreduce) so
// that it broadcasts against x; integer inputs (summed into int64 or averaged into float64) get
// no gradient.
namespace {

// x, its normalized reduced axes, and dout/out with the reduced axes restored.
struct Reduced {
  GradVar x, dout, out;
  std::vector<int64_t> axes;
  DType t;
};

Reduced reduced(BpropBuilder& g) {
  Reduced r;
  r.x = g.input(0);
  TensorMeta m = g.meta(r.x);
  r.t = m.dtype;
  r.axes =
      normalize_axes(g.attrs().get_ints("axis"), static_cast<int64_t>(m.shape.size()), g.op().name);
  bool keep = g.attrs().get_bool("keep_dims");
  r.dout = bprop::unreduce(g, g.dout(), r.axes, keep);
  r.out = bprop::unreduce(g, g.out(), r.axes, keep);
  return r;
}

// The number of reduced elements per output, minus ddof: a constant when the reduced dims are
// known, else counted at run time (dynamic dims).
GradVar reduced_count(BpropBuilder& g, const Reduced& r, int64_t ddof = 0) {
  const Shape& s = g.meta(r.x).shape;
  int64_t n = 1;
  bool known = true;
  for (int64_t a : r.axes) {
    known = known && s[a] >= 0;
    n *= s[a];
  }
  if (known) return g.scalar(static_cast<double>(n - ddof), r.t);
  GradVar count = g.sum(g.ones_like(r.x), r.axes, true);
  return ddof ? g.sub(count, g.scalar(static_cast<double>(ddof), r.t)) : count;
}

std::vector<GradVar> none() { return {GradVar()}; }

}  // namespace

MYCEL_REGISTER_BPROPS(reduce) {
  using bprop::broadcast_like;
  b.add("sum", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_diff(g, g.input(0))) return none();
    Reduced r = reduced(g);
    return {broadcast_like(g, r.dout, r.x)};
  });
  b.add("mean", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_diff(g, g.input(0))) return none();
    Reduced r = reduced(g);
    // Divided before it is broadcast: the same quotient per element, one pass over the (small)
    // output instead of a second pass over x's size (the transformer's mean pool: 40 us a step).
    return {broadcast_like(g, g.div(r.dout, reduced_count(g, r)), r.x)};
  });
  b.add("prod", [](BpropBuilder& g) -> std::vector<GradVar> {
    // d prod / d x_i = product of the other elements, computed without dividing by zero: with no
    // zero in the group it is out / x_i; with exactly one zero only that element gets the product
    // of the rest; with two or more zeros every partial is 0.
    if (!bprop::is_float(g, g.input(0))) return none();
    Reduced r = reduced(g);
    GradVar zero = g.scalar(0, r.t), one = g.scalar(1, r.t);
    GradVar is_zero = g.call("equal", {r.x, zero});
    GradVar nonzero_x = g.call("select", {is_zero, g.ones_like(r.x), r.x});
    GradVar rest = g.call("prod", {nonzero_x}, {{"axis", r.axes}, {"keep_dims", true}});
    GradVar zeros = g.sum(bprop::as_mask(g, is_zero, r.t), r.axes, true);
    GradVar no_zero = g.call("equal", {zeros, zero}), one_zero = g.call("equal", {zeros, one});
    GradVar at_zero = g.call("select", {one_zero, broadcast_like(g, rest, r.x), g.zeros_like(r.x)});
    GradVar elsewhere = g.call("select", {no_zero, g.div(rest, nonzero_x), g.zeros_like(r.x)});
    return {g.mul(r.dout, g.call("select", {is_zero, at_zero, elsewhere}))};
  });
  // max/min: dout goes to the elements equal to the result, split evenly among ties (as
  // TensorFlow and JAX do), so the rule is symmetric in tied elements.
  for (const char* name : {"max", "min"}) {
    b.add(name, [](BpropBuilder& g) -> std::vector<GradVar> {
      if (!bprop::is_float(g, g.input(0))) return none();
      Reduced r = reduced(g);
      GradVar hit = bprop::as_mask(g, g.call("equal", {r.x, r.out}), r.t);
      GradVar ties = g.sum(hit, r.axes, true);
      return {g.mul(g.div(r.dout, ties), hit)};
    });
  }
  b.add("logsumexp", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return none();
    Reduced r = reduced(g);  // softmax(x) over the axes, times dout
    return {g.mul(r.dout, g.call("exp", {g.sub(r.x, r.out)}))};
  });
  // var = sum((x - mean)^2) / (n - ddof): d/dx = 2 (x - mean) / (n - ddof); std = sqrt(var).
  for (const char* name : {"var", "std"}) {
    const bool is_std = std::string(name) == "std";
    b.add(name, [is_std](BpropBuilder& g) -> std::vector<GradVar> {
      if (!bprop::is_float(g, g.input(0))) return none();
      Reduced r = reduced(g);
      GradVar centered = g.sub(r.x, g.call("mean", {r.x}, {{"axis", r.axes}, {"keep_dims", true}}));
      GradVar dx = g.div(g.mul(r.dout, centered), reduced_count(g, r, g.attrs().get_int("ddof")));
      return {is_std ? g.div(dx, r.out) : g.mul(dx, g.scalar(2, r.t))};
    });
  }
  b.add("cumprod", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return none();
    const Attrs& a = g.attrs();
    return {g.call("cumprod_grad", {g.input(0), g.dout()},
                   {{"axis", a.get_int("axis")},
                    {"exclusive", a.get_bool("exclusive")},
                    {"reverse", a.get_bool("reverse")}})};
  });
  b.add("cumsum", [](BpropBuilder& g) -> std::vector<GradVar> {
    // The adjoint of a running sum is the running sum in the other direction.
    if (!bprop::is_float(g, g.input(0))) return none();
    const Attrs& a = g.attrs();
    return {g.call("cumsum", {g.dout()},
                   {{"axis", a.get_int("axis")},
                    {"exclusive", a.get_bool("exclusive")},
                    {"reverse", !a.get_bool("reverse")}})};
  });
}

}  // namespace mycel
