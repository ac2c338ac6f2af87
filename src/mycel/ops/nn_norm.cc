// Normalization and softmax: batch_norm (training updates the running statistics in place),
// layer_norm, softmax and log_softmax. oneDNN for float32/bfloat16 where it can express the axes,
// reference loops otherwise. batch_norm_grad and layer_norm_grad are their backward ops.
#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/nn_grad_ref.h"
#include "mycel/kernels/cpu/nn_ref.h"
#include "mycel/kernels/cpu/norm_fast.h"
#include "mycel/kernels/cpu/norm_nhwc.h"
#include "mycel/kernels/cpu/softmax_bf16.h"
#include "mycel/kernels/cpu/softmax_f32.h"
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

int64_t softmax_axis(const OpSchema& op, const Attrs& a, int64_t ndim) {
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

// softmax_grad(y, dy): y and dy of one shape and float dtype.
std::vector<TensorMeta> infer_softmax_grad(const InferContext& c) {
  check_float(c, 0);
  check_same_dtype(c, 0, 1);
  if (c.in(0).shape != c.in(1).shape)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'dy' must have the shape of 'y' ",
                shape_str(c.in(0).shape), ", got ", shape_str(c.in(1).shape));
  softmax_axis(c.op, c.attrs, static_cast<int64_t>(c.in(0).shape.size()));
  return {c.in(0)};
}

void softmax_grad_kernel(const KernelContext& c) {
  const Tensor& y = c.in(0);
  int64_t outer, len, inner;
  split_at_axis(y.shape(), softmax_axis(c.op, c.attrs, y.ndim()), outer, len, inner);
  if (y.numel() == 0) return;
  // bf16 on the last axis (amp O2's attention): softmax_bf16.h, 0.49 -> 0.28 ms a launch on one
  // core for the transformer step's 8192 rows of 128.
  if (inner == 1 && cpu::nn_backend() == cpu::NnBackend::kAuto &&
      cpu::softmax_grad_bf16_last_axis(y, c.in(1), c.out(0), outer, len))
    return;
  // float32 on the last axis: softmax_f32.h's rows in AVX-512 or AVX2 lanes (the transformer
  // step's 8192 rows of 128 on two Ice Lake cores: 411-449 us the reference loop, 422-496 these;
  // both are bound by the 12 MiB they move, but fuse_heads_softmax.cc runs them in cache).
  if (inner == 1 && cpu::nn_backend() == cpu::NnBackend::kAuto &&
      cpu::softmax_grad_f32_last_axis(y, c.in(1), c.out(0), outer, len))
    return;
  visit_float_dtype(y.dtype(), c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::softmax_grad_ref<T>(y, c.in(1), c.out(0), outer, len, inner);
  });
}

template <bool Log>
void softmax_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  int64_t outer, len, inner;
  split_at_axis(x.shape(), softmax_axis(c.op, c.attrs, x.ndim()), outer, len, inner);
  // float32 on the last axis: softmax_f32.h's row loops. oneDNN's set-up costs ~40 ns a row (5.9
  // us for the MLP's 128 x 10 logits, the loop 1-2), and its jit kernel took 629-685 us (minima)
  // for the transformer step's 8192 rows of 128 on two Ice Lake cores, the loops 566-600.
  if (inner == 1 && cpu::nn_backend() == cpu::NnBackend::kAuto &&
      cpu::softmax_f32_last_axis(x, c.out(0), outer, len, Log))
    return;
  // oneDNN's softmax on other axes is a reference kernel 7x slower than the loop; float64 on the
  // last axis takes its jit kernel. A bf16 softmax on the last axis: softmax_bf16.h (the
  // transformer step's 8192 rows of 128: on par with oneDNN's on one core, 0.61 against 0.76 ms
  // for the step's two on two).
  if (!Log && inner == 1 && x.numel() > 0 && cpu::nn_backend() == cpu::NnBackend::kAuto &&
      cpu::softmax_bf16_last_axis(x, c.out(0), outer, len))
    return;
  if (cpu::use_dnnl(x.dtype(), inner == 1))
    return cpu::softmax_dnnl(x, c.out(0), outer, len, inner, Log, c.prepared);
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

// The layout step's NHWC activations (KernelParams src/dst_blocked on a 4-D x where that layout
// is NHWC, norm_nhwc.h): rows of channels, every 4-D tensor NHWC, the (C,) ones plain.
bool nhwc_norm_launch(const KernelContext& c, const Tensor& x) {
  return c.params && (c.params->src_blocked || c.params->dst_blocked) && x.ndim() == 4 &&
         cpu::nn_backend() != cpu::NnBackend::kRef && cpu::nhwc_activations(x.dtype());
}

void batch_norm_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const int64_t n = x.dim(0), ch = x.dim(1), spatial = ch > 0 && n > 0 ? x.numel() / (n * ch) : 0;
  Tensor running_mean = c.in(3), running_var = c.in(4);
  if (nhwc_norm_launch(c, x) &&
      cpu::batch_norm_nhwc(x, c.in(1), c.in(2), running_mean, running_var, c.out(0), c.out(1),
                           c.out(2), n * spatial, ch, c.attrs.get_bool("is_training"),
                           c.attrs.get_float("epsilon"), c.attrs.get_float("momentum"))) {
    c.params->layout_taken = true;
    return;
  }
  // oneDNN 2.6's NCHW batch norm (ncsp_bnorm) measured 1.5-3x slower than the loop; its jit
  // kernels need blocked/NHWC layouts, and the reorders cost more than they save.
  const bool dnnl = cpu::use_dnnl(x.dtype(), false);
  if (!dnnl && cpu::nn_backend() != cpu::NnBackend::kRef &&
      cpu::batch_norm_f32(x, c.in(1), c.in(2), running_mean, running_var, c.out(0), c.out(1),
                          c.out(2), n, ch, spatial, c.attrs.get_bool("is_training"),
                          c.attrs.get_float("epsilon"), c.attrs.get_float("momentum")))
    return;
  auto run = dnnl ? cpu::batch_norm_dnnl : cpu::batch_norm_ref;
  run(x, c.in(1), c.in(2), running_mean, running_var, c.out(0), c.out(1), c.out(2), n, ch, spatial,
      c.attrs.get_bool("is_training"), c.attrs.get_float("epsilon"), c.attrs.get_float("momentum"));
}

struct LayerNormAxes {
  int64_t norm, params;
};

LayerNormAxes layer_norm_axes(const OpSchema& op, const Attrs& a, int64_t ndim) {
  return {
      normalize_axis(a.get_int("begin_norm_axis"), ndim, op.name.c_str(), "begin_norm_axis"),
      normalize_axis(a.get_int("begin_params_axis"), ndim, op.name.c_str(), "begin_params_axis")};
}

// layer_norm's activations (x, y; dout, dx) may be bfloat16 while gamma, beta and the
// statistics are float32 (amp O2 runs LayerNorm on bf16 activations, its parameters float32
// masters); otherwise every tensor shares x's dtype. Input `act` is the activation, `param` gamma.
void check_layer_norm_dtypes(const InferContext& c, size_t act, size_t param) {
  const bool mixed = c.in(act).dtype == DType::bfloat16 && c.in(param).dtype == DType::float32;
  if (!mixed && c.in(act).dtype != c.in(param).dtype)
    MYCEL_THROW(TypeError, "[", c.op.name, "] inputs '", input_name(c, act), "' and '",
                input_name(c, param), "' must have the same dtype (or '", input_name(c, act),
                "' bfloat16 with float32 '", input_name(c, param), "'), got ",
                dtype_name(c.in(act).dtype), " and ", dtype_name(c.in(param).dtype));
}

std::vector<TensorMeta> infer_layer_norm(const InferContext& c) {
  const std::string& op = c.op.name;
  check_rank(c, 0, 1, 64);
  check_float(c, 0);
  check_layer_norm_dtypes(c, 0, 1);
  check_same_dtype(c, 1, 2);
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
  return {c.in(0), {stat, c.in(1).dtype}, {stat, c.in(1).dtype}};  // gamma's: x's or float32
}

// bf16 activations with float32 parameters where no fast kernel applies: the float32 loops on
// widened copies, the results rounded once (what the casts around a float32 op computed).
void layer_norm_mixed_ref(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                          Tensor& mean, Tensor& rstd, int64_t outer, int64_t inner, double eps) {
  Tensor y32 = Tensor::empty(y.shape(), DType::float32);
  cpu::layer_norm_ref<float>(x.to(DType::float32), gamma, beta, y32, mean, rstd, outer, inner, eps);
  convert_elements(y32.data(), DType::float32, y.data(), y.dtype(), y.numel());
}

void layer_norm_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const LayerNormAxes ax = layer_norm_axes(c.op, c.attrs, x.ndim());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < x.ndim(); ++i) (i < ax.norm ? outer : inner) *= x.dim(i);
  // oneDNN normalizes rows with per-column scale and shift: gamma must span the normalized dims.
  const bool mixed = x.dtype() != c.in(1).dtype();
  const double eps = c.attrs.get_float("epsilon");
  // Own rows unless a backend is forced (MYCEL_NN_BACKEND=dnnl: oneDNN wherever it can).
  if (ax.params == ax.norm && cpu::nn_backend() == cpu::NnBackend::kAuto &&
      cpu::layer_norm_f32(x, c.in(1), c.in(2), c.out(0), c.out(1), c.out(2), outer, inner, eps))
    return;
  // oneDNN reads bf16 x with float32 scale and shift (and writes float32 statistics) itself.
  if (ax.params == ax.norm && cpu::use_dnnl(x.dtype(), true))
    return cpu::layer_norm_dnnl(x, c.in(1), c.in(2), c.out(0), c.out(1), c.out(2), outer, inner,
                                c.attrs.get_float("epsilon"));
  if (mixed)
    return layer_norm_mixed_ref(x, c.in(1), c.in(2), c.out(0), c.out(1), c.out(2), outer, inner,
                                c.attrs.get_float("epsilon"));
  visit_float_dtype(x.dtype(), "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::layer_norm_ref<T>(x, c.in(1), c.in(2), c.out(0), c.out(1), c.out(2), outer, inner,
                           c.attrs.get_float("epsilon"));
  });
}

// batch_norm_grad(dout, x, scale, saved_mean, saved_invstd, dmean, dinvstd) -> (dx, dscale,
// dbias): the saved statistics are batch_norm's second and third outputs.
std::vector<TensorMeta> infer_batch_norm_grad(const InferContext& c) {
  const std::string& op = c.op.name;
  check_rank(c, 1, 2, 64);
  check_float(c, 1);
  check_same_dtype(c, 1, 0);
  const Shape& xs = c.in(1).shape;
  if (c.in(0).shape != xs)
    MYCEL_THROW(ShapeError, "[", op, "] input 'dout' shape ", shape_str(c.in(0).shape),
                " must equal input 'x' shape ", shape_str(xs));
  for (size_t i = 2; i < 7; ++i) {
    check_float(c, i);
    if (c.in(i).shape != Shape{xs[1]})
      MYCEL_THROW(ShapeError, "[", op, "] input '", input_name(c, i), "' must have shape (", xs[1],
                  ",) for input 'x' shape ", shape_str(xs), ", got ", shape_str(c.in(i).shape));
  }
  const TensorMeta param{{xs[1]}, c.in(2).dtype};
  return {c.in(1), param, param};
}

void batch_norm_grad_kernel(const KernelContext& c) {
  const Tensor& x = c.in(1);
  const int64_t n = x.dim(0), ch = x.dim(1), spatial = ch > 0 && n > 0 ? x.numel() / (n * ch) : 0;
  if (nhwc_norm_launch(c, x) &&
      cpu::batch_norm_grad_nhwc(c.in(0), x, c.in(2), c.in(3), c.in(4), c.in(5), c.in(6), c.out(0),
                                c.out(1), c.out(2), n * spatial, ch,
                                c.attrs.get_bool("is_training"))) {
    c.params->layout_taken = true;
    return;
  }
  if (cpu::nn_backend() != cpu::NnBackend::kRef &&
      cpu::batch_norm_grad_f32(c.in(0), x, c.in(2), c.in(3), c.in(4), c.in(5), c.in(6), c.out(0),
                               c.out(1), c.out(2), n, ch, spatial, c.attrs.get_bool("is_training")))
    return;
  cpu::batch_norm_grad_ref(c.in(0), x, c.in(2), c.in(3), c.in(4), c.in(5), c.in(6), c.out(0),
                           c.out(1), c.out(2), n, ch, spatial, c.attrs.get_bool("is_training"));
}

// layer_norm_grad(dout, x, gamma, mean, rstd, dmean, drstd) -> (dx, dgamma, dbeta).
std::vector<TensorMeta> infer_layer_norm_grad(const InferContext& c) {
  const std::string& op = c.op.name;
  check_rank(c, 1, 1, 64);
  check_float(c, 1);
  check_same_dtype(c, 1, 0);
  check_layer_norm_dtypes(c, 1, 2);
  for (size_t i = 3; i < 7; ++i) check_same_dtype(c, 2, i);
  const Shape& xs = c.in(1).shape;
  const LayerNormAxes ax = layer_norm_axes(c.op, c.attrs, static_cast<int64_t>(xs.size()));
  Shape stat(xs.begin(), xs.begin() + ax.norm);
  stat.resize(xs.size(), 1);
  const Shape params(xs.begin() + ax.params, xs.end());
  const std::pair<size_t, const Shape*> want[] = {{0, &xs},   {2, &params}, {3, &stat},
                                                  {4, &stat}, {5, &stat},   {6, &stat}};
  for (const auto& [i, s] : want)
    if (c.in(i).shape != *s)
      MYCEL_THROW(ShapeError, "[", op, "] input '", input_name(c, i), "' must have shape ",
                  shape_str(*s), " for input 'x' shape ", shape_str(xs), ", got ",
                  shape_str(c.in(i).shape));
  return {c.in(1), c.in(2), c.in(2)};
}

void layer_norm_grad_kernel(const KernelContext& c) {
  const Tensor& x = c.in(1);
  const LayerNormAxes ax = layer_norm_axes(c.op, c.attrs, x.ndim());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < x.ndim(); ++i) (i < ax.norm ? outer : inner) *= x.dim(i);
  if (cpu::nn_backend() != cpu::NnBackend::kRef &&
      cpu::layer_norm_grad_f32(c.in(0), x, c.in(2), c.in(3), c.in(4), c.in(5), c.in(6), c.out(0),
                               c.out(1), c.out(2), outer, inner))
    return;
  if (x.dtype() != c.in(2).dtype()) {  // bf16 activations, float32 rest: see layer_norm_mixed_ref
    Tensor dx32 = Tensor::empty(c.out(0).shape(), DType::float32);
    cpu::layer_norm_grad_ref<float>(c.in(0).to(DType::float32), x.to(DType::float32), c.in(2),
                                    c.in(3), c.in(4), c.in(5), c.in(6), dx32, c.out(1), c.out(2),
                                    outer, inner);
    convert_elements(dx32.data(), DType::float32, c.out(0).data(), c.out(0).dtype(), dx32.numel());
    return;
  }
  visit_float_dtype(x.dtype(), "layer_norm_grad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::layer_norm_grad_ref<T>(c.in(0), x, c.in(2), c.in(3), c.in(4), c.in(5), c.in(6), c.out(0),
                                c.out(1), c.out(2), outer, inner);
  });
}

// Sharding. batch_norm: channels split; N, H, W stay whole. layer_norm: the normalized dims stay
// whole. softmax: the axis.
shard::LabelSpec batch_norm_spec(const shard::ShardContext& c) {
  const std::string x = "nc" + shard::labels(c.in(0).shape.size() - 2, 'h');
  shard::LabelSpec sp;
  sp.inputs = {x, "c", "c", "c", "c"};
  sp.outputs = {x, "c", "c"};
  // Training: the statistics need the whole batch and image. Inference: the saved statistics are
  // the running ones, the same on every rank, which a label rule would take for partial sums.
  sp.fixed = "n" + x.substr(2);
  return sp;
}

shard::LabelSpec layer_norm_spec(const shard::ShardContext& c) {
  const Shape& xs = c.in(0).shape;
  const int64_t nd = static_cast<int64_t>(xs.size());
  const size_t norm =
      static_cast<size_t>(normalize_axis(c.attrs.get_int("begin_norm_axis"), nd, "layer_norm"));
  const size_t params =
      static_cast<size_t>(normalize_axis(c.attrs.get_int("begin_params_axis"), nd, "layer_norm"));
  const std::string x = shard::labels(xs.size());
  shard::LabelSpec sp;
  sp.inputs = {x, x.substr(params), x.substr(params)};
  // The statistics keep the normalized dims as size 1 (or drop them).
  const std::string stat = c.outputs.size() > 1 && c.outputs[1].shape.size() == xs.size()
                               ? x.substr(0, norm) + std::string(xs.size() - norm, '1')
                               : x.substr(0, norm);
  sp.outputs = {x, stat, stat};
  sp.fixed = x.substr(norm);
  return sp;
}

// softmax_grad: y and dy split alike, never along the softmax axis.
shard::LabelSpec softmax_grad_spec(const shard::ShardContext& c) {
  shard::LabelSpec sp;
  const std::string l = shard::labels(c.in(0).shape.size());
  sp.inputs = {l, l};
  sp.outputs = {l};
  const int64_t nd = static_cast<int64_t>(c.in(0).shape.size());
  if (nd > 0)
    sp.fixed = l.substr(
        static_cast<size_t>(normalize_axis(c.attrs.get_int("axis"), nd, c.op.name.c_str())), 1);
  return sp;
}

shard::LabelSpec softmax_spec(const shard::ShardContext& c) {
  const int64_t nd = static_cast<int64_t>(c.in(0).shape.size());
  shard::LabelSpec sp;
  sp.inputs = {shard::labels(c.in(0).shape.size())};
  sp.outputs = sp.inputs;
  if (nd > 0)
    sp.fixed = sp.inputs[0].substr(
        static_cast<size_t>(normalize_axis(c.attrs.get_int("axis"), nd, c.op.name.c_str())), 1);
  return sp;
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
                infer_batch_norm, batch_norm_kernel, float_dtypes(), "bprop");
    d.mutated_inputs = {3, 4};
    d.backend.as_post_op = kPostChannelAffine;  // with is_training false
    d.backend.nhwc = NhwcKind::kSame;           // x and y NHWC (norm_nhwc.h)
    d.backend.nhwc_inputs = d.backend.nhwc_outputs = 1;
    shard::set_label_rule(d, batch_norm_spec);
    r.add(std::move(d));
  }
  {
    OpDef d = make_op(
        "batch_norm_grad", "BatchNormGrad",
        "Gradient of batch_norm: (dx, dscale, dbias) from dout, x, scale, the saved "
        "statistics and their sensitivities.",
        {{"dout"}, {"x"}, {"scale"}, {"saved_mean"}, {"saved_invstd"}, {"dmean"}, {"dinvstd"}},
        {{"is_training", AttrKind::kBool, false, false, {}}}, infer_batch_norm_grad,
        batch_norm_grad_kernel, float_dtypes(), "unsupported");
    d.backend.nhwc = NhwcKind::kSame;  // dout, x and dx NHWC (norm_nhwc.h)
    d.backend.nhwc_inputs = 3;
    d.backend.nhwc_outputs = 1;
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
                infer_layer_norm, layer_norm_kernel, float_dtypes(), "bprop");
    shard::set_label_rule(d, layer_norm_spec);
    r.add(std::move(d));
  }
  {
    OpDef d =
        make_op("layer_norm_grad", "LayerNormGrad",
                "Gradient of layer_norm: (dx, dgamma, dbeta) from dout, x, gamma, the saved mean "
                "and rstd and their sensitivities.",
                {{"dout"}, {"x"}, {"gamma"}, {"mean"}, {"rstd"}, {"dmean"}, {"drstd"}},
                {{"begin_norm_axis", AttrKind::kInt, int64_t{-1}, false, {}},
                 {"begin_params_axis", AttrKind::kInt, int64_t{-1}, false, {}}},
                infer_layer_norm_grad, layer_norm_grad_kernel, float_dtypes(), "unsupported");
    d.backend.norm_grad_sums_dout = true;  // layer_norm_grad_sum_bf16 (norm_fast.h)
    r.add(std::move(d));
  }
  {
    OpDef d = make_op("softmax", "Softmax", "exp(x) / sum(exp(x)) along axis.", {{"x"}},
                      {{"axis", AttrKind::kInt, int64_t{-1}, false, {}}}, infer_softmax,
                      softmax_kernel<false>, float_dtypes(), "bprop");
    d.backend.softmax_rows = SoftmaxRows::kForward;  // backend/fuse_heads_softmax.cc
    shard::set_label_rule(d, softmax_spec);
    r.add(std::move(d));
  }
  {
    OpDef d =
        make_op("softmax_grad", "SoftmaxGrad",
                "Gradient of softmax: dx = y * (dy - sum(dy * y)) along axis, from its output "
                "y and the sensitivity dy, in one pass.",
                {{"y"}, {"dy"}}, {{"axis", AttrKind::kInt, int64_t{-1}, false, {}}},
                infer_softmax_grad, softmax_grad_kernel, float_dtypes(), "bprop");
    d.backend.softmax_rows = SoftmaxRows::kGrad;
    shard::set_label_rule(d, softmax_grad_spec);
    r.add(std::move(d));
  }
  {
    OpDef d = make_op("log_softmax", "LogSoftmax", "x - log(sum(exp(x))) along axis.", {{"x"}},
                      {{"axis", AttrKind::kInt, int64_t{-1}, false, {}}}, infer_softmax,
                      softmax_kernel<true>, float_dtypes(), "bprop");
    shard::set_label_rule(d, softmax_spec);
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
  // Training differentiates x, scale and bias through the batch statistics (and the saved
  // statistics' own sensitivities); inference treats the running statistics as constants. The
  // running statistics are state the op updates, never differentiated.
  b.add("batch_norm", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar out = g.out(), dout = g.dout();
    GradVar grads = g.call("batch_norm_grad",
                           {g.tuple_get(dout, 0), g.input(0), g.input(1), g.tuple_get(out, 1),
                            g.tuple_get(out, 2), g.tuple_get(dout, 1), g.tuple_get(dout, 2)},
                           {{"is_training", g.attrs().get_bool("is_training")}});
    GradVar dbias = g.tuple_get(grads, 2);
    const DType bias_t = g.meta(g.input(2)).dtype;
    if (bias_t != g.meta(g.input(1)).dtype) dbias = g.cast(dbias, bias_t);
    return {g.tuple_get(grads, 0), g.tuple_get(grads, 1), dbias, {}, {}};
  });
  b.add("layer_norm", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar out = g.out(), dout = g.dout();
    GradVar grads = g.call("layer_norm_grad",
                           {g.tuple_get(dout, 0), g.input(0), g.input(1), g.tuple_get(out, 1),
                            g.tuple_get(out, 2), g.tuple_get(dout, 1), g.tuple_get(dout, 2)},
                           {{"begin_norm_axis", g.attrs().get_int("begin_norm_axis")},
                            {"begin_params_axis", g.attrs().get_int("begin_params_axis")}});
    return {g.tuple_get(grads, 0), g.tuple_get(grads, 1), g.tuple_get(grads, 2)};
  });
  // y = softmax(x): dx = y * (dy - sum(dy * y)) along the axis, in one kernel.
  b.add("softmax", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {g.call("softmax_grad", {g.out(), g.dout()}, {{"axis", g.attrs().get_int("axis")}})};
  });
  // dx = y * (dy - s), s = sum(dy * y); with G the sensitivity of dx:
  // d dy = y * (G - sum(G * y)) (softmax_grad again), d y = G * (dy - s) - dy * sum(G * y).
  b.add("softmax_grad", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar y = g.input(0), dy = g.input(1), G = g.dout();
    const std::vector<int64_t> axes = softmax_axes(g);
    GradVar s = g.sum(g.mul(dy, y), axes, true), gy = g.sum(g.mul(G, y), axes, true);
    return {g.sub(g.mul(G, g.sub(dy, s)), g.mul(dy, gy)),
            g.call("softmax_grad", {y, G}, {{"axis", g.attrs().get_int("axis")}})};
  });
  // y = log_softmax(x): dx = dy - exp(y) * sum(dy) along the axis.
  b.add("log_softmax", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar y = g.out(), dy = g.dout();
    return {g.sub(dy, g.mul(g.call("exp", {y}), g.sum(dy, softmax_axes(g), true)))};
  });
}

}  // namespace mycel
