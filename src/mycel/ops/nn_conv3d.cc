// 3-d windowed ops on NCDHW tensors (MindSpore's Conv3D, MaxPool3D, AvgPool3D): conv3d, max/avg
// pooling, and the backward ops their gradient rules call. Kernels in kernels/cpu/nn3d.h.
#include <algorithm>
#include <array>
#include <map>

#include "mycel/kernels/cpu/nn3d.h"
#include "mycel/ops/bprop.h"
#include "mycel/ops/infer_util.h"
#include "mycel/ops/window_dim.h"

namespace mycel {
namespace {

using cpu::Window3Geom;
using Triple = std::array<int64_t, 3>;

// A (d, h, w) triple from 1, 3 or 5 values (5: MindSpore's (1, 1, d, h, w) form); each >= lo.
Triple dhw_attr(const OpSchema& op, const Attrs& a, const char* name, int64_t lo) {
  Triple t;
  spatial_attr(op, a, name, 3, lo, t.data());
  return t;
}

const char* const kAxis[3] = {"depth", "height", "width"};

// Geometry of x (rank 5 NCDHW, or rank 4 CDHW for pooling) for kernel k and dilation d.
Window3Geom window3(const OpSchema& op, const Attrs& a, const Shape& xs, const char* stride,
                    const Triple& k, const Triple& d) {
  Window3Geom g;
  const size_t r = xs.size();
  g.n = r == 5 ? xs[0] : 1;
  g.c = g.oc = xs[r - 4];
  g.in = {xs[r - 3], xs[r - 2], xs[r - 1]};
  g.k = k, g.d = d;
  g.s = dhw_attr(op, a, stride, 1);
  const PadMode mode = pad_mode(op, a);
  pad_attr(op, a, mode, 3, g.p0.data(), g.p1.data());
  for (int i = 0; i < 3; ++i) {
    window_dim(op, mode, kAxis[i], g.in[i], g.k[i], g.s[i], g.d[i], g.p0[i], g.p1[i], g.out[i]);
  }
  return g;
}

Window3Geom conv3_geom(const OpSchema& op, const Attrs& a, const Shape& xs, const Shape& ws) {
  Window3Geom g =
      window3(op, a, xs, "stride", {ws[2], ws[3], ws[4]}, dhw_attr(op, a, "dilation", 1));
  g.oc = ws[0];
  g.groups = a.get_int("groups");
  return g;
}

Window3Geom pool3_geom(const OpSchema& op, const Attrs& a, const Shape& xs) {
  return window3(op, a, xs, "strides", dhw_attr(op, a, "kernel_size", 1), {1, 1, 1});
}

Shape out_shape(const Shape& lead, const Window3Geom& g, int64_t channels) {
  Shape s;
  if (lead.size() == 5) s.push_back(g.n);
  s.push_back(channels);
  s.insert(s.end(), g.out.begin(), g.out.end());
  return s;
}

std::vector<TensorMeta> infer_conv3d(const InferContext& c) {
  check_rank(c, 0, 5, 5);
  check_rank(c, 1, 5, 5);
  check_same_dtype(c, 0, 1);
  const Shape &xs = c.in(0).shape, &ws = c.in(1).shape;
  check_conv_channels(c, xs, ws);
  check_conv_bias(c, ws);
  const Window3Geom g = conv3_geom(c.op, c.attrs, xs, ws);
  return {{out_shape(xs, g, g.oc), c.in(0).dtype}};
}

void conv3d_kernel(const KernelContext& c) {
  const Window3Geom g = conv3_geom(c.op, c.attrs, c.in(0).shape(), c.in(1).shape());
  cpu::conv3d(c.in(0), c.in(1), c.in(2).defined() ? &c.in(2) : nullptr, c.out(0), g);
}

// Checks that dout (input 0) has the shape conv3d gives for input xs and weights ws.
void check_conv3_dout(const InferContext& c, const Shape& xs, const Shape& ws) {
  check_conv_channels(c, xs, ws);
  const Window3Geom g = conv3_geom(c.op, c.attrs, xs, ws);
  check_conv_dout(c, out_shape(xs, g, g.oc), xs, ws, "conv3d");
}

std::vector<TensorMeta> infer_conv3_bwd_input(const InferContext& c) {
  return infer_conv_backprop(c, 5, "N, C, D, H, W", false, check_conv3_dout);
}

std::vector<TensorMeta> infer_conv3_bwd_filter(const InferContext& c) {
  return infer_conv_backprop(c, 5, "N, C, D, H, W", true, check_conv3_dout);
}

void conv3_bwd_input_kernel(const KernelContext& c) {
  const Window3Geom g = conv3_geom(c.op, c.attrs, c.out(0).shape(), c.in(1).shape());
  cpu::conv3d_backprop_input(c.in(0), c.in(1), c.out(0), g);
}

void conv3_bwd_filter_kernel(const KernelContext& c) {
  const Window3Geom g = conv3_geom(c.op, c.attrs, c.in(1).shape(), c.out(0).shape());
  cpu::conv3d_backprop_filter(c.in(0), c.in(1), c.out(0), g);
}

std::vector<TensorMeta> infer_pool3d(const InferContext& c) {
  check_rank(c, 0, 4, 5);
  const Window3Geom g = pool3_geom(c.op, c.attrs, c.in(0).shape);
  if (pad_mode(c.op, c.attrs) == PadMode::kPad)
    for (int i = 0; i < 3; ++i)
      if (2 * std::max(g.p0[i], g.p1[i]) > g.k[i])
        MYCEL_THROW(ValueError, "[", c.op.name, "] padding ", shape_str(c.attrs.get_ints("pad")),
                    " must be at most half the kernel size (", g.k[0], ", ", g.k[1], ", ", g.k[2],
                    ")");
  return {{out_shape(c.in(0).shape, g, g.c), c.in(0).dtype}};
}

bool include_pad(const KernelContext& c, bool max) {
  return !max && c.attrs.get_bool("count_include_pad");
}

template <bool Max>
void pool3d_kernel(const KernelContext& c) {
  const Window3Geom g = pool3_geom(c.op, c.attrs, c.in(0).shape());
  cpu::pool3d(c.in(0), c.out(0), g, Max, include_pad(c, Max));
}

// max/avg_pool3d_grad(x, dout): dx shaped like x; dout must be the pooled shape of x.
std::vector<TensorMeta> infer_pool3d_grad(const InferContext& c) {
  check_rank(c, 0, 4, 5);
  check_same_dtype(c, 0, 1);
  const Window3Geom g = pool3_geom(c.op, c.attrs, c.in(0).shape);
  const Shape want = out_shape(c.in(0).shape, g, g.c);
  if (c.in(1).shape != want)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'dout' shape ", shape_str(c.in(1).shape),
                " must be the pooled shape ", shape_str(want), " of input 'x' shape ",
                shape_str(c.in(0).shape));
  return {c.in(0)};
}

template <bool Max>
void pool3d_grad_kernel(const KernelContext& c) {
  const Window3Geom g = pool3_geom(c.op, c.attrs, c.in(0).shape());
  cpu::pool3d_grad(c.in(0), c.in(1), c.out(0), g, Max, include_pad(c, Max));
}

std::vector<AttrDef> conv3_attrs() {
  return {{"stride", AttrKind::kInts, std::vector<int64_t>{1}, false, {"strides"}},
          {"pad_mode", AttrKind::kStr, std::string("valid"), false, {}},
          {"pad", AttrKind::kInts, std::vector<int64_t>{0}, false, {"padding"}},
          {"dilation", AttrKind::kInts, std::vector<int64_t>{1}, false, {"dilations"}},
          {"groups", AttrKind::kInt, int64_t{1}, false, {"group"}}};
}

std::vector<AttrDef> conv3_bwd_attrs(const char* size_name) {
  std::vector<AttrDef> a{{size_name, AttrKind::kInts, AttrValue{}, false, {}}};
  for (AttrDef& d : conv3_attrs()) a.push_back(std::move(d));
  return a;
}

std::vector<AttrDef> pool3_attrs(bool avg) {
  std::vector<AttrDef> a{
      {"kernel_size", AttrKind::kInts, std::vector<int64_t>{1}, false, {}},
      {"strides", AttrKind::kInts, std::vector<int64_t>{1}, false, {"stride"}},
      {"pad_mode", AttrKind::kStr, std::string("valid"), false, {}},
      {"pad", AttrKind::kInts, std::vector<int64_t>{0}, false, {"padding", "pad_list"}}};
  // MindSpore's AvgPool3D counts the padding by default (AvgPool2D's does not).
  if (avg) a.push_back({"count_include_pad", AttrKind::kBool, true, false, {}});
  return a;
}

// float16 and bfloat16 compute in float32 (kernels/cpu/nn3d.cc: no oneDNN 3-d f16/bf16 on AVX2).
std::vector<DType> nn3_dtypes() {
  return {DType::float16, DType::bfloat16, DType::float32, DType::float64};
}

}  // namespace

MYCEL_REGISTER_OPS(nn_conv3d) {
  r.add(make_op("conv3d", "Conv3D",
                "3-d convolution of NCDHW x with w (out, in/groups, kd, kh, kw), plus optional "
                "bias b.",
                {{"x"}, {"w"}, {"b", true, false}}, conv3_attrs(), infer_conv3d, conv3d_kernel,
                nn3_dtypes(), "bprop"));
  r.add(make_op("conv3d_backprop_input", "Conv3DBackpropInput",
                "Gradient of conv3d with respect to its input (the transposed convolution): dout "
                "and w to dx of input_size (its batch dim follows dout).",
                {{"dout"}, {"w"}}, conv3_bwd_attrs("input_size"), infer_conv3_bwd_input,
                conv3_bwd_input_kernel, nn3_dtypes(), "bprop"));
  r.add(make_op("conv3d_backprop_filter", "Conv3DBackpropFilter",
                "Gradient of conv3d with respect to its weights: dout and x to dw of filter_size.",
                {{"dout"}, {"x"}}, conv3_bwd_attrs("filter_size"), infer_conv3_bwd_filter,
                conv3_bwd_filter_kernel, nn3_dtypes(), "bprop"));
  r.add(make_op("max_pool3d", "MaxPool3D", "3-d max pooling over NCDHW (or CDHW) input.", {{"x"}},
                pool3_attrs(false), infer_pool3d, pool3d_kernel<true>, nn3_dtypes(), "bprop"));
  r.add(
      make_op("max_pool3d_grad", "MaxPool3DGrad",
              "Gradient of max_pool3d: each dout element goes to the first maximum of its window.",
              {{"x"}, {"dout"}}, pool3_attrs(false), infer_pool3d_grad, pool3d_grad_kernel<true>,
              nn3_dtypes(), "unsupported"));
  r.add(make_op("avg_pool3d", "AvgPool3D",
                "3-d average pooling over NCDHW (or CDHW) input; count_include_pad (default true) "
                "counts explicit padding in the divisor.",
                {{"x"}}, pool3_attrs(true), infer_pool3d, pool3d_kernel<false>, nn3_dtypes(),
                "bprop"));
  r.add(make_op("avg_pool3d_grad", "AvgPool3DGrad",
                "Gradient of avg_pool3d: each dout element spread over its window with the "
                "forward's divisor (x gives only the shape).",
                {{"x"}, {"dout"}}, pool3_attrs(true), infer_pool3d_grad, pool3d_grad_kernel<false>,
                nn3_dtypes(), "bprop"));
}

namespace {

// The forward call's attributes by name, minus the backward ops' size attributes, plus `extra`.
std::map<std::string, AttrValue> attrs_of(BpropBuilder& g, const char* size_name = nullptr,
                                          const Shape& size = {}) {
  std::map<std::string, AttrValue> m;
  const auto& defs = g.op().attrs;
  for (size_t i = 0; i < defs.size(); ++i) m[defs[i].name] = g.attrs().values()[i];
  m.erase("input_size");
  m.erase("filter_size");
  if (size_name) m[size_name] = std::vector<int64_t>(size.begin(), size.end());
  return m;
}

GradVar input_grad(BpropBuilder& g, GradVar dy, GradVar w, const Shape& x_shape) {
  return g.call("conv3d_backprop_input", {dy, w}, attrs_of(g, "input_size", x_shape));
}

GradVar filter_grad(BpropBuilder& g, GradVar dy, GradVar x, const Shape& w_shape) {
  return g.call("conv3d_backprop_filter", {dy, x}, attrs_of(g, "filter_size", w_shape));
}

}  // namespace

MYCEL_REGISTER_BPROPS(nn_conv3d) {
  b.add("conv3d", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar x = g.input(0), w = g.input(1), dy = g.dout();
    GradVar db = g.input(2) ? g.sum(dy, {0, 2, 3, 4}) : GradVar();
    return {input_grad(g, dy, w, g.meta(x).shape), filter_grad(g, dy, x, g.meta(w).shape), db};
  });
  // Both backward ops are linear in each input: their gradients are convolutions again.
  b.add("conv3d_backprop_input", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar dy = g.input(0), w = g.input(1), gdx = g.dout();
    return {g.call("conv3d", {gdx, w, GradVar()}, attrs_of(g)),
            filter_grad(g, dy, gdx, g.meta(w).shape)};
  });
  b.add("conv3d_backprop_filter", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar dy = g.input(0), x = g.input(1), gdw = g.dout();
    return {g.call("conv3d", {x, gdw, GradVar()}, attrs_of(g)),
            input_grad(g, dy, gdw, g.meta(x).shape)};
  });
  b.add("max_pool3d", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {g.call("max_pool3d_grad", {g.input(0), g.dout()}, attrs_of(g))};
  });
  b.add("avg_pool3d", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {g.call("avg_pool3d_grad", {g.input(0), g.dout()}, attrs_of(g))};
  });
  // avg_pool3d_grad is linear in dout (its adjoint is avg_pool3d); x only gives the shape.
  b.add("avg_pool3d_grad", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {GradVar(), g.call("avg_pool3d", {g.dout()}, attrs_of(g))};
  });
}

}  // namespace mycel
