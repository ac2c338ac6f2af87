// Normalization and softmax: batch_norm (training updates the running statistics in place),
// layer_norm, softmax and log_softmax. oneDNN for float32/bfloat16 where it can express the axes,
// reference loops otherwise.
#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/nn_ref.h"
#include "mycel/ops/bprop.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

// x viewed as (outer, len, inner) around `axis` (a 0-d x is one element).
void split_at_axis(const Shape& s, int64_t axis, int64_t& outer, int64_t& len, int64_t& inner) {
  outer = inner = len = 1;
  if (s.empty()) return;
  for (int64_t i = 0; i < axis; ++i) outer *= s[i];
  len = s[axis];
  for (size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
}

int64_t softmax_axis(const OpDef& op, const Attrs& a, int64_t ndim) {
  const int64_t axis = a.get_int("axis");
  if (ndim == 0) {  // a scalar: axis 0 or -1 only
    if (axis != 0 && axis != -1)
      MYCEL_THROW(ValueError, "[", op.name, "] attribute 'axis' (", axis,
                  ") is out of range for a 0-d input");
    return 0;
  }
  return normalize_axis(axis, ndim, op.name.c_str(), "axis");
}

std::vector<TensorMeta> infer_softmax(const InferContext& c) {
  check_float(c, 0);
  softmax_axis(c.op, c.attrs, static_cast<int64_t>(c.in(0).shape.size()));
  return {c.in(0)};
}

template <bool Log>
void softmax_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  int64_t outer, len, inner;
  split_at_axis(x.shape(), softmax_axis(c.op, c.attrs, x.ndim()), outer, len, inner);
  // oneDNN's softmax is a fast jit kernel on the last axis (5x the loop), a reference one 7x
  // slower than the loop on other axes.
  if (cpu::use_dnnl(x.dtype(), inner == 1))
    return cpu::softmax_dnnl(x, c.out(0), outer, len, inner, Log);
  visit_float_dtype(x.dtype(), c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::softmax_ref<T>(x, c.out(0), outer, len, inner, Log);
  });
}

std::vector<TensorMeta> infer_batch_norm(const InferContext& c) {
  const std::string& op = c.op.name;
  check_rank(c, 0, 2, 64);
  const Shape& xs = c.in(0).shape;
  for (size_t i = 1; i < 5; ++i) {
    check_float(c, i);
    const Shape& s = c.in(i).shape;
    if (s.size() != 1 || s[0] != xs[1])
      MYCEL_THROW(ShapeError, "[", op, "] input '", input_name(c, i), "' must have shape (", xs[1],
                  ",) for input 'x' shape ", shape_str(xs), ", got ", shape_str(s));
  }
  const double eps = c.attrs.get_float("epsilon"), momentum = c.attrs.get_float("momentum");
  if (!(eps >= 0))
    MYCEL_THROW(ValueError, "[", op, "] attribute 'epsilon' must be >= 0, got ", eps);
  if (!(momentum >= 0 && momentum <= 1))
    MYCEL_THROW(ValueError, "[", op, "] attribute 'momentum' must be in [0, 1], got ", momentum);
  if (c.attrs.get_bool("is_training") && numel(xs) / std::max<int64_t>(xs[1], 1) < 2 && xs[1] > 0)
    MYCEL_THROW(ValueError, "[", op,
                "] training needs more than one value per channel, got input 'x' shape ",
                shape_str(xs));
  const TensorMeta stat{{xs[1]}, c.in(3).dtype};
  return {c.in(0), stat, stat};
}

void batch_norm_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const int64_t n = x.dim(0), ch = x.dim(1), spatial = ch > 0 && n > 0 ? x.numel() / (n * ch) : 0;
  Tensor running_mean = c.in(3), running_var = c.in(4);
  // oneDNN 2.6's NCHW batch norm (ncsp_bnorm) measured 1.5-3x slower than the loop; its jit
  // kernels need blocked/NHWC layouts, and the reorders cost more than they save.
  auto run = cpu::use_dnnl(x.dtype(), false) ? cpu::batch_norm_dnnl : cpu::batch_norm_ref;
  run(x, c.in(1), c.in(2), running_mean, running_var, c.out(0), c.out(1), c.out(2), n, ch, spatial,
      c.attrs.get_bool("is_training"), c.attrs.get_float("epsilon"), c.attrs.get_float("momentum"));
}

struct LayerNormAxes {
  int64_t norm, params;
};

LayerNormAxes layer_norm_axes(const OpDef& op, const Attrs& a, int64_t ndim) {
  return {
      normalize_axis(a.get_int("begin_norm_axis"), ndim, op.name.c_str(), "begin_norm_axis"),
      normalize_axis(a.get_int("begin_params_axis"), ndim, op.name.c_str(), "begin_params_axis")};
}

std::vector<TensorMeta> infer_layer_norm(const InferContext& c) {
  const std::string& op = c.op.name;
  check_rank(c, 0, 1, 64);
  check_float(c, 0);
  check_same_dtype(c, 0, 1);
  check_same_dtype(c, 0, 2);
  const Shape& xs = c.in(0).shape;
  const LayerNormAxes ax = layer_norm_axes(c.op, c.attrs, static_cast<int64_t>(xs.size()));
  const Shape want(xs.begin() + ax.params, xs.end());
  for (size_t i = 1; i < 3; ++i)
    if (c.in(i).shape != want)
      MYCEL_THROW(ShapeError, "[", op, "] input '", input_name(c, i), "' must have shape ",
                  shape_str(want), " (x.shape[begin_params_axis:] for x shape ", shape_str(xs),
                  "), got ", shape_str(c.in(i).shape));
  if (!(c.attrs.get_float("epsilon") >= 0))
    MYCEL_THROW(ValueError, "[", op, "] attribute 'epsilon' must be >= 0, got ",
                c.attrs.get_float("epsilon"));
  Shape stat(xs.begin(), xs.begin() + ax.norm);
  stat.resize(xs.size(), 1);
  return {c.in(0), {stat, c.in(0).dtype}, {stat, c.in(0).dtype}};
}

void layer_norm_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const LayerNormAxes ax = layer_norm_axes(c.op, c.attrs, x.ndim());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < x.ndim(); ++i) (i < ax.norm ? outer : inner) *= x.dim(i);
  // oneDNN normalizes rows with per-column scale and shift: gamma must span the normalized dims.
  if (ax.params == ax.norm && cpu::use_dnnl(x.dtype(), true))
    return cpu::layer_norm_dnnl(x, c.in(1), c.in(2), c.out(0), c.out(1), c.out(2), outer, inner,
                                c.attrs.get_float("epsilon"));
  visit_float_dtype(x.dtype(), "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::layer_norm_ref<T>(x, c.in(1), c.in(2), c.out(0), c.out(1), c.out(2), outer, inner,
                           c.attrs.get_float("epsilon"));
  });
}

}  // namespace

MYCEL_REGISTER_OPS(nn_norm) {
  {
    OpDef d =
        make_op("batch_norm", "BatchNorm",
                "Batch normalization over channel dim 1; returns (y, saved_mean, saved_invstd).",
                {{"x"}, {"scale"}, {"bias"}, {"mean"}, {"variance"}},
                {{"is_training", AttrKind::kBool, false, false, {}},
                 {"epsilon", AttrKind::kFloat, 1e-5, false, {}},
                 {"momentum", AttrKind::kFloat, 0.1, false, {}}},
                infer_batch_norm, batch_norm_kernel, float_dtypes());
    d.mutated_inputs = {3, 4};
    r.add(std::move(d));
  }
  {
    OpDef d =
        make_op("layer_norm", "LayerNorm",
                "Layer normalization over dims from begin_norm_axis; returns (y, mean, rstd).",
                {{"x"}, {"gamma"}, {"beta"}},
                {{"begin_norm_axis", AttrKind::kInt, int64_t{-1}, false, {}},
                 {"begin_params_axis", AttrKind::kInt, int64_t{-1}, false, {}},
                 {"epsilon", AttrKind::kFloat, 1e-7, false, {}}},
                infer_layer_norm, layer_norm_kernel, float_dtypes());
    r.add(std::move(d));
  }
  {
    OpDef d = make_op("softmax", "Softmax", "exp(x) / sum(exp(x)) along axis.", {{"x"}},
                      {{"axis", AttrKind::kInt, int64_t{-1}, false, {}}}, infer_softmax,
                      softmax_kernel<false>, float_dtypes(), "bprop");
    r.add(std::move(d));
  }
  {
    OpDef d = make_op("log_softmax", "LogSoftmax", "x - log(sum(exp(x))) along axis.", {{"x"}},
                      {{"axis", AttrKind::kInt, int64_t{-1}, false, {}}}, infer_softmax,
                      softmax_kernel<true>, float_dtypes(), "bprop");
    r.add(std::move(d));
  }
}

namespace {

// The softmax axis as a reduction axis list (a 0-d input reduces over everything: no axes).
std::vector<int64_t> softmax_axes(BpropBuilder& g) {
  const int64_t nd = static_cast<int64_t>(g.meta(g.input(0)).shape.size());
  if (nd == 0) return {};
  return {softmax_axis(g.op(), g.attrs(), nd)};
}

}  // namespace

MYCEL_REGISTER_BPROPS(nn_norm) {
  // y = softmax(x): dx = y * (dy - sum(dy * y)) along the axis.
  b.add("softmax", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar y = g.out(), dy = g.dout();
    return {g.mul(y, g.sub(dy, g.sum(g.mul(dy, y), softmax_axes(g), true)))};
  });
  // y = log_softmax(x): dx = dy - exp(y) * sum(dy) along the axis.
  b.add("log_softmax", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar y = g.out(), dy = g.dout();
    return {g.sub(dy, g.mul(g.call("exp", {y}), g.sum(dy, softmax_axes(g), true)))};
  });
}

}  // namespace mycel
