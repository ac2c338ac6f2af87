// Windowed ops on NCHW tensors: conv2d and max/avg pooling (oneDNN for float32/bfloat16, reference
// loops for the other float dtypes), adaptive average pooling (reference loop), and the backward
// ops their gradient rules call (conv2d_backprop_input/filter, max/avg_pool2d_grad).
#include <algorithm>
#include <cctype>

#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/nn_grad_ref.h"
#include "mycel/kernels/cpu/nn_ref.h"
#include "mycel/kernels/cpu/quant.h"
#include "mycel/ops/bprop.h"
#include "mycel/ops/infer_util.h"
#include "mycel/ops/nn_window.h"
#include "mycel/ops/window_dim.h"

namespace mycel {
namespace {

using cpu::WindowGeom;

// An (h, w) pair from 1, 2 or 4 values (4: MindSpore's (1, 1, h, w) form); each at least `lo`.
std::pair<int64_t, int64_t> hw_attr(const OpSchema& op, const Attrs& a, const char* name,
                                    int64_t lo) {
  int64_t v[2];
  spatial_attr(op, a, name, 2, lo, v);
  return {v[0], v[1]};
}

// Window geometry of x (rank 4 NCHW, or rank 3 CHW for pooling) from the op's attributes.
WindowGeom window_geom(const OpSchema& op, const Attrs& a, const Shape& xs, const char* stride,
                       int64_t kh, int64_t kw, int64_t dh, int64_t dw) {
  WindowGeom g;
  const bool batched = xs.size() == 4;
  g.n = batched ? xs[0] : 1;
  g.c = xs[xs.size() - 3];
  g.h = xs[xs.size() - 2];
  g.w = xs[xs.size() - 1];
  g.oc = g.c;
  g.kh = kh, g.kw = kw, g.dh = dh, g.dw = dw;
  std::tie(g.sh, g.sw) = hw_attr(op, a, stride, 1);
  const PadMode mode = pad_mode(op, a);
  int64_t p0[2], p1[2];
  pad_attr(op, a, mode, 2, p0, p1);
  g.pt = p0[0], g.pb = p1[0], g.pl = p0[1], g.pr = p1[1];
  window_dim(op, mode, "height", g.h, kh, g.sh, dh, g.pt, g.pb, g.oh);
  window_dim(op, mode, "width", g.w, kw, g.sw, dw, g.pl, g.pr, g.ow);
  return g;
}

WindowGeom conv_geom(const OpSchema& op, const Attrs& a, const Shape& xs, const Shape& ws) {
  auto [dh, dw] = hw_attr(op, a, "dilation", 1);
  WindowGeom g = window_geom(op, a, xs, "stride", ws[2], ws[3], dh, dw);
  g.oc = ws[0];
  g.groups = a.get_int("groups");
  return g;
}

WindowGeom pool_geom(const OpSchema& op, const Attrs& a, const Shape& xs) {
  auto [kh, kw] = hw_attr(op, a, "kernel_size", 1);
  return window_geom(op, a, xs, "strides", kh, kw, 1, 1);
}

Shape pool_out_shape(const Shape& xs, int64_t oh, int64_t ow) {
  Shape s(xs.begin(), xs.end() - 2);
  s.push_back(oh);
  s.push_back(ow);
  return s;
}

std::vector<TensorMeta> infer_conv2d(const InferContext& c) {
  check_rank(c, 0, 4, 4);
  check_rank(c, 1, 4, 4);
  check_same_dtype(c, 0, 1);
  const Shape &xs = c.in(0).shape, &ws = c.in(1).shape;
  check_conv_channels(c, xs, ws);
  check_conv_bias(c, ws);
  WindowGeom g = conv_geom(c.op, c.attrs, xs, ws);
  return {{{g.n, g.oc, g.oh, g.ow}, c.in(0).dtype}};
}

void conv2d_kernel(const KernelContext& c) {
  const WindowGeom g = conv_geom(c.op, c.attrs, c.in(0).shape(), c.in(1).shape());
  const Tensor* bias = c.in(2).defined() ? &c.in(2) : nullptr;
  if (c.out(0).dtype() == DType::float64)
    return cpu::conv2d_ref<double>(c.in(0), c.in(1), bias, c.out(0), g);
  cpu::conv2d_dnnl(c.in(0), c.in(1), bias, c.out(0), g, c.params, c.prepared);
}

std::vector<TensorMeta> infer_pool(const InferContext& c) {
  check_rank(c, 0, 3, 4);
  WindowGeom g = pool_geom(c.op, c.attrs, c.in(0).shape);
  if (pad_mode(c.op, c.attrs) == PadMode::kPad &&
      (2 * std::max(g.pt, g.pb) > g.kh || 2 * std::max(g.pl, g.pr) > g.kw))
    MYCEL_THROW(ValueError, "[", c.op.name, "] padding ", shape_str(c.attrs.get_ints("pad")),
                " must be at most half the kernel size (", g.kh, ", ", g.kw, ")");
  return {{pool_out_shape(c.in(0).shape, g.oh, g.ow), c.in(0).dtype}};
}

template <bool Max>
void pool_kernel(const KernelContext& c) {
  const WindowGeom g = pool_geom(c.op, c.attrs, c.in(0).shape());
  const bool include_pad = !Max && c.attrs.get_bool("count_include_pad");
  if constexpr (Max)  // int8 inference: max commutes with quantization
    if (c.in(0).dtype() == DType::uint8) return cpu::max_pool2d_u8(c.in(0), c.out(0), g);
  if (cpu::use_dnnl(c.in(0).dtype(), true))  // oneDNN: 4-25x faster than the loop
    return cpu::pool2d_dnnl(c.in(0), c.out(0), g, Max, include_pad, c.params, c.prepared);
  visit_float_dtype(c.in(0).dtype(), c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Max)
      cpu::max_pool2d_ref<T>(c.in(0), c.out(0), g);
    else
      cpu::avg_pool2d_ref<T>(c.in(0), c.out(0), g, include_pad);
  });
}

// Checks that dy (input 0) has the shape conv2d gives for input xs and weights ws.
void check_conv_dy(const InferContext& c, const Shape& xs, const Shape& ws) {
  check_conv_channels(c, xs, ws);
  const WindowGeom g = conv_geom(c.op, c.attrs, xs, ws);
  check_conv_dout(c, {g.n, g.oc, g.oh, g.ow}, xs, ws, "conv2d");
}

std::vector<TensorMeta> infer_conv_bwd_input(const InferContext& c) {
  return infer_conv_backprop(c, 4, "N, C, H, W", false, check_conv_dy);
}

std::vector<TensorMeta> infer_conv_bwd_filter(const InferContext& c) {
  return infer_conv_backprop(c, 4, "N, C, H, W", true, check_conv_dy);
}

void conv_bwd_input_kernel(const KernelContext& c) {
  const WindowGeom g = conv_geom(c.op, c.attrs, c.out(0).shape(), c.in(1).shape());
  if (c.out(0).dtype() == DType::float64)
    return cpu::conv2d_backprop_input_ref<double>(c.in(0), c.in(1), c.out(0), g);
  cpu::conv2d_backprop_input_dnnl(c.in(0), c.in(1), c.out(0), g, c.params, c.prepared);
}

void conv_bwd_filter_kernel(const KernelContext& c) {
  const WindowGeom g = conv_geom(c.op, c.attrs, c.in(1).shape(), c.out(0).shape());
  if (c.out(0).dtype() == DType::float64)
    return cpu::conv2d_backprop_filter_ref<double>(c.in(0), c.in(1), c.out(0), g);
  cpu::conv2d_backprop_filter_dnnl(c.in(0), c.in(1), c.out(0), g, c.params, c.prepared);
}

// max/avg_pool2d_grad(x, dout): dx shaped like x; dout must be the pooled shape of x.
std::vector<TensorMeta> infer_pool_grad(const InferContext& c) {
  check_rank(c, 0, 3, 4);
  check_same_dtype(c, 0, 1);
  const WindowGeom g = pool_geom(c.op, c.attrs, c.in(0).shape);
  const Shape want = pool_out_shape(c.in(0).shape, g.oh, g.ow);
  if (c.in(1).shape != want)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'dout' shape ", shape_str(c.in(1).shape),
                " must be the pooled shape ", shape_str(want), " of input 'x' shape ",
                shape_str(c.in(0).shape));
  return {c.in(0)};
}

template <bool Max>
void pool_grad_kernel(const KernelContext& c) {
  const WindowGeom g = pool_geom(c.op, c.attrs, c.in(0).shape());
  const bool include_pad = !Max && c.attrs.get_bool("count_include_pad");
  if (cpu::use_dnnl(c.in(0).dtype(), true))  // oneDNN: 2-5x faster than the loops
    return cpu::pool2d_grad_dnnl(c.in(0), c.in(1), c.out(0), g, Max, include_pad, c.prepared);
  visit_float_dtype(c.in(0).dtype(), c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Max)
      cpu::max_pool2d_grad_ref<T>(c.in(0), c.in(1), c.out(0), g);
    else
      cpu::avg_pool2d_grad_ref<T>(c.in(1), c.out(0), g, include_pad);
  });
}

std::pair<int64_t, int64_t> adaptive_size(const InferContext& c) {
  return hw_attr(c.op, c.attrs, "output_size", 1);
}

std::vector<TensorMeta> infer_adaptive(const InferContext& c) {
  check_rank(c, 0, 3, 4);
  const Shape& xs = c.in(0).shape;
  if (c.attrs.get_ints("output_size").size() > 2)
    MYCEL_THROW(ValueError, "[", c.op.name, "] attribute 'output_size' takes 1 or 2 values, got ",
                shape_str(c.attrs.get_ints("output_size")));
  auto [oh, ow] = adaptive_size(c);
  if (xs[xs.size() - 2] == 0 || xs[xs.size() - 1] == 0)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'x' shape ", shape_str(xs),
                " must have non-empty spatial dims");
  return {{pool_out_shape(xs, oh, ow), c.in(0).dtype}};
}

void adaptive_kernel(const KernelContext& c) {
  const Shape& xs = c.in(0).shape();
  const Shape& ys = c.out(0).shape();
  const int64_t h = xs[xs.size() - 2], w = xs[xs.size() - 1];
  const int64_t planes = h * w > 0 ? c.in(0).numel() / (h * w) : 0;
  visit_float_dtype(c.in(0).dtype(), c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::adaptive_avg_pool2d_ref<T>(c.in(0), c.out(0), planes, h, w, ys[ys.size() - 2], ys.back());
  });
}

std::vector<AttrDef> conv_attrs() {
  return {{"stride", AttrKind::kInts, std::vector<int64_t>{1}, false, {"strides"}},
          {"pad_mode", AttrKind::kStr, std::string("valid"), false, {}},
          {"pad", AttrKind::kInts, std::vector<int64_t>{0}, false, {"padding"}},
          {"dilation", AttrKind::kInts, std::vector<int64_t>{1}, false, {}},
          {"groups", AttrKind::kInt, int64_t{1}, false, {"group"}}};
}

// The conv attributes after a required shape attribute (input_size or filter_size).
std::vector<AttrDef> conv_bwd_attrs(const char* size_name) {
  std::vector<AttrDef> a{{size_name, AttrKind::kInts, AttrValue{}, false, {}}};
  for (AttrDef& d : conv_attrs()) a.push_back(std::move(d));
  return a;
}

std::vector<DType> conv_dtypes() { return {DType::bfloat16, DType::float32, DType::float64}; }

std::vector<AttrDef> pool_attrs() {
  return {{"kernel_size", AttrKind::kInts, std::vector<int64_t>{1}, false, {}},
          {"strides", AttrKind::kInts, std::vector<int64_t>{1}, false, {"stride"}},
          {"pad_mode", AttrKind::kStr, std::string("valid"), false, {}},
          {"pad", AttrKind::kInts, std::vector<int64_t>{0}, false, {"padding"}}};
}

// Sharding: batch (n) and output channels (o) split; input channels (c) split too and end in an
// AllReduce of partial sums (groups == 1, no bias only). The image and the window stay whole.
shard::LabelSpec conv2d_spec(const shard::ShardContext& c) {
  shard::LabelSpec sp;
  sp.inputs = {"nchw", "ocij", c.has_input(2) ? "o" : ""};
  sp.outputs = {"nopq"};
  sp.fixed = c.attrs.get_int("groups") == 1 ? "hwij" : "hwijco";
  if (c.has_input(2)) sp.fixed += "c";  // every partial sum would add the bias once
  return sp;
}

}  // namespace

MYCEL_REGISTER_OPS(nn_conv) {
  {
    OpDef d =
        make_op("conv2d", "Conv2D",
                "2-d convolution of NCHW x with w (out, in/groups, kh, kw), plus optional bias b.",
                {{"x"}, {"w"}, {"b", true, false}}, conv_attrs(), infer_conv2d, conv2d_kernel,
                conv_dtypes(), "bprop");
    shard::set_label_rule(d, conv2d_spec);
    // oneDNN's relu and clip(0, 6) post-ops on the convolution; an inference batch_norm after
    // it folds into its weights (backend/fold_batch_norm.cc)
    d.backend.accepts_post_ops = kPostRelu | kPostRelu6 | kPostChannelAffine;
    d.backend.window = WindowKind::kConv;
    d.backend.absorbs_max_pool = true;
    r.add(std::move(d));
  }
  {
    // Either gradient reads and writes NHWC bf16 activations where the layout step says so.
    OpDef d = make_op("conv2d_backprop_input", "Conv2DBackpropInput",
                      "Gradient of conv2d with respect to its input: dout (N, OC, OH, OW) and w to "
                      "dx of input_size (its batch dim follows dout).",
                      {{"dout"}, {"w"}}, conv_bwd_attrs("input_size"), infer_conv_bwd_input,
                      conv_bwd_input_kernel, conv_dtypes(), "bprop");
    d.backend.nhwc = NhwcKind::kConvGrad;
    d.backend.nhwc_inputs = 1;   // dout
    d.backend.nhwc_outputs = 1;  // dx
    r.add(std::move(d));
    OpDef f = make_op("conv2d_backprop_filter", "Conv2DBackpropFilter",
                      "Gradient of conv2d with respect to its weights: dout and x to dw of "
                      "filter_size.",
                      {{"dout"}, {"x"}}, conv_bwd_attrs("filter_size"), infer_conv_bwd_filter,
                      conv_bwd_filter_kernel, conv_dtypes(), "bprop");
    f.backend.nhwc = NhwcKind::kConvGrad;
    f.backend.nhwc_inputs = 3;  // dout, x
    r.add(std::move(f));
  }
  {
    std::vector<DType> dtypes = float_dtypes();
    dtypes.push_back(DType::uint8);  // quantized activations (lite int8 models)
    OpDef d = make_op("max_pool2d", "MaxPool", "2-d max pooling over NCHW (or CHW) input.", {{"x"}},
                      pool_attrs(), infer_pool, pool_kernel<true>, dtypes, "bprop");
    d.backend.window = WindowKind::kMaxPool;
    r.add(std::move(d));
  }
  r.add(
      make_op("max_pool2d_grad", "MaxPoolGrad",
              "Gradient of max_pool2d: each dout element goes to the first maximum of its window.",
              {{"x"}, {"dout"}}, pool_attrs(), infer_pool_grad, pool_grad_kernel<true>,
              float_dtypes(), "unsupported"));
  std::vector<AttrDef> avg_attrs = pool_attrs();
  avg_attrs.push_back({"count_include_pad", AttrKind::kBool, false, false, {}});
  {
    OpDef d =
        make_op("avg_pool2d", "AvgPool",
                "2-d average pooling over NCHW (or CHW) input; padding is excluded from the count.",
                {{"x"}}, avg_attrs, infer_pool, pool_kernel<false>, float_dtypes(), "bprop");
    d.backend.window = WindowKind::kAvgPool;
    r.add(std::move(d));
  }
  r.add(make_op("avg_pool2d_grad", "AvgPoolGrad",
                "Gradient of avg_pool2d: each dout element spread evenly over its window (x gives "
                "only the shape).",
                {{"x"}, {"dout"}}, avg_attrs, infer_pool_grad, pool_grad_kernel<false>,
                float_dtypes(), "bprop"));
  {
    OpDef d =
        make_op("adaptive_avg_pool2d", "AdaptiveAvgPool2D",
                "Average pooling to a fixed output size (h, w) with PyTorch's bin boundaries.",
                {{"x"}}, {{"output_size", AttrKind::kInts, AttrValue{}, false, {}}}, infer_adaptive,
                adaptive_kernel, float_dtypes(), "bprop");
    r.add(std::move(d));
  }
}

namespace {

// The forward call's attributes by name, to pass on to the backward ops (same schema).
std::map<std::string, AttrValue> forward_attrs(BpropBuilder& g) {
  std::map<std::string, AttrValue> m;
  const auto& defs = g.op().attrs;
  for (size_t i = 0; i < defs.size(); ++i) m[defs[i].name] = g.attrs().values()[i];
  return m;
}

std::map<std::string, AttrValue> with_size(BpropBuilder& g, const char* name, const Shape& s) {
  std::map<std::string, AttrValue> m = forward_attrs(g);
  m.erase("input_size");
  m.erase("filter_size");
  m[name] = std::vector<int64_t>(s.begin(), s.end());
  return m;
}

GradVar conv_input_grad(BpropBuilder& g, GradVar dy, GradVar w, const Shape& x_shape) {
  return g.call("conv2d_backprop_input", {dy, w}, with_size(g, "input_size", x_shape));
}

GradVar conv_filter_grad(BpropBuilder& g, GradVar dy, GradVar x, const Shape& w_shape) {
  return g.call("conv2d_backprop_filter", {dy, x}, with_size(g, "filter_size", w_shape));
}

GradVar conv_forward(BpropBuilder& g, GradVar x, GradVar w) {
  std::map<std::string, AttrValue> m = forward_attrs(g);
  m.erase("input_size");
  m.erase("filter_size");
  return g.call("conv2d", {x, w, GradVar()}, m);
}

// Averaging matrix P (out, in) of one adaptive-pooling dim: row i averages bin i, so that
// y = P_h x P_w^T per plane (the bins are separable).
Tensor adaptive_matrix(int64_t out, int64_t in, DType t) {
  Tensor p = Tensor::zeros({out, in}, DType::float64);
  double* d = p.data<double>();
  for (int64_t i = 0; i < out; ++i) {
    const int64_t a = i * in / out, b = ((i + 1) * in + out - 1) / out;
    for (int64_t j = a; j < b; ++j) d[i * in + j] = 1.0 / double(b - a);
  }
  return p.to(t);
}

}  // namespace

MYCEL_REGISTER_BPROPS(nn_conv) {
  b.add("conv2d", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar x = g.input(0), w = g.input(1), dy = g.dout();
    GradVar db = g.input(2) ? g.sum(dy, {0, 2, 3}) : GradVar();
    return {conv_input_grad(g, dy, w, g.meta(x).shape), conv_filter_grad(g, dy, x, g.meta(w).shape),
            db};
  });
  // Both backward ops are linear in each input, so their own gradients are convolutions again
  // (conv2d_backprop_input(dy, w) = A_w^T dy with A_w the convolution by w).
  b.add("conv2d_backprop_input", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar dy = g.input(0), w = g.input(1), gdx = g.dout();
    return {conv_forward(g, gdx, w), conv_filter_grad(g, dy, gdx, g.meta(w).shape)};
  });
  b.add("conv2d_backprop_filter", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar dy = g.input(0), x = g.input(1), gdw = g.dout();
    return {conv_forward(g, x, gdw), conv_input_grad(g, dy, gdw, g.meta(x).shape)};
  });
  b.add("max_pool2d", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {g.call("max_pool2d_grad", {g.input(0), g.dout()}, forward_attrs(g))};
  });
  b.add("avg_pool2d", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {g.call("avg_pool2d_grad", {g.input(0), g.dout()}, forward_attrs(g))};
  });
  // avg_pool2d_grad is linear in dout (its adjoint is avg_pool2d); x only gives the shape.
  b.add("avg_pool2d_grad", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {GradVar(), g.call("avg_pool2d", {g.dout()}, forward_attrs(g))};
  });
  // y = P_h x P_w^T per plane: dx = P_h^T dy P_w, two matmuls with constant matrices.
  b.add("adaptive_avg_pool2d", [](BpropBuilder& g) -> std::vector<GradVar> {
    const TensorMeta xm = g.meta(g.input(0)), ym = g.out_meta(0);
    const int64_t h = xm.shape[xm.shape.size() - 2], w = xm.shape.back();
    const int64_t oh = ym.shape[ym.shape.size() - 2], ow = ym.shape.back();
    if (h < 0 || w < 0)
      MYCEL_THROW(NotSupported, "[adaptive_avg_pool2d] gradient needs static spatial dims, got ",
                  shape_str(xm.shape));
    GradVar ph = g.constant(adaptive_matrix(oh, h, xm.dtype));
    GradVar pw = g.constant(adaptive_matrix(ow, w, xm.dtype));
    GradVar t = g.call("matmul", {ph, g.dout()}, {{"transpose_a", true}});
    return {g.call("matmul", {t, pw})};
  });
}

cpu::WindowGeom conv2d_window(const OpSchema& op, const Attrs& a, const Shape& xs,
                              const Shape& ws) {
  return conv_geom(op, a, xs, ws);
}

cpu::WindowGeom pool2d_window(const OpSchema& op, const Attrs& a, const Shape& xs) {
  return pool_geom(op, a, xs);
}

}  // namespace mycel
