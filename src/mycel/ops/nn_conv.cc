// Windowed ops on NCHW tensors: conv2d and max/avg pooling (oneDNN for float32/bfloat16, reference
// loops for the other float dtypes) and adaptive average pooling (reference loop).
#include <algorithm>
#include <cctype>

#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/nn_ref.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

using cpu::WindowGeom;

enum class PadMode { kValid, kSame, kPad };

PadMode pad_mode(const OpDef& op, const Attrs& a) {
  std::string s = a.get_str("pad_mode");
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (s == "valid") return PadMode::kValid;
  if (s == "same") return PadMode::kSame;
  if (s == "pad") return PadMode::kPad;
  MYCEL_THROW(ValueError, "[", op.name,
              "] attribute 'pad_mode' must be 'valid', 'same' or 'pad', got '",
              a.get_str("pad_mode"), "'");
}

// An (h, w) pair from 1, 2 or 4 values (4: MindSpore's (1, 1, h, w) form); each at least `lo`.
std::pair<int64_t, int64_t> hw_attr(const OpDef& op, const Attrs& a, const char* name, int64_t lo) {
  const auto& v = a.get_ints(name);
  if (v.size() != 1 && v.size() != 2 && v.size() != 4)
    MYCEL_THROW(ValueError, "[", op.name, "] attribute '", name, "' takes 1, 2 or 4 values, got ",
                v.size());
  std::pair<int64_t, int64_t> p =
      v.size() == 1 ? std::pair{v[0], v[0]} : std::pair{v[v.size() - 2], v[v.size() - 1]};
  if (p.first < lo || p.second < lo)
    MYCEL_THROW(ValueError, "[", op.name, "] attribute '", name, "' values must be >= ", lo,
                ", got ", shape_str(v));
  return p;
}

// Output size and padding of one spatial dim; throws if the (dilated) kernel exceeds the input.
void window_dim(const OpDef& op, PadMode mode, const char* dim, int64_t in, int64_t k, int64_t s,
                int64_t d, int64_t& p0, int64_t& p1, int64_t& out) {
  const int64_t ek = d * (k - 1) + 1;
  if (mode == PadMode::kSame) {
    out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>((out - 1) * s + ek - in, 0);
    p0 = total / 2;
    p1 = total - p0;
    return;
  }
  if (mode == PadMode::kValid) p0 = p1 = 0;
  if (in + p0 + p1 < ek)
    MYCEL_THROW(ShapeError, "[", op.name, "] kernel ", dim, " ", k, " (", ek,
                " with dilation) is larger than the padded input ", dim, " ", in + p0 + p1);
  out = (in + p0 + p1 - ek) / s + 1;
}

// Window geometry of x (rank 4 NCHW, or rank 3 CHW for pooling) from the op's attributes.
WindowGeom window_geom(const OpDef& op, const Attrs& a, const Shape& xs, const char* stride,
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
  const auto& pad = a.get_ints("pad");
  if (pad.size() != 1 && pad.size() != 2 && pad.size() != 4)
    MYCEL_THROW(ValueError, "[", op.name, "] attribute 'pad' takes 1, 2 or 4 values, got ",
                pad.size());
  for (int64_t p : pad)
    if (p < 0)
      MYCEL_THROW(ValueError, "[", op.name, "] attribute 'pad' values must be >= 0, got ",
                  shape_str(pad));
  if (mode != PadMode::kPad &&
      std::any_of(pad.begin(), pad.end(), [](int64_t p) { return p != 0; }))
    MYCEL_THROW(ValueError, "[", op.name,
                "] attribute 'pad' must be 0 unless pad_mode is 'pad', got ", shape_str(pad));
  if (pad.size() == 1)
    g.pt = g.pb = g.pl = g.pr = pad[0];
  else if (pad.size() == 2)
    g.pt = g.pb = pad[0], g.pl = g.pr = pad[1];
  else
    g.pt = pad[0], g.pb = pad[1], g.pl = pad[2], g.pr = pad[3];
  window_dim(op, mode, "height", g.h, kh, g.sh, dh, g.pt, g.pb, g.oh);
  window_dim(op, mode, "width", g.w, kw, g.sw, dw, g.pl, g.pr, g.ow);
  return g;
}

WindowGeom conv_geom(const OpDef& op, const Attrs& a, const Shape& xs, const Shape& ws) {
  auto [dh, dw] = hw_attr(op, a, "dilation", 1);
  WindowGeom g = window_geom(op, a, xs, "stride", ws[2], ws[3], dh, dw);
  g.oc = ws[0];
  g.groups = a.get_int("groups");
  return g;
}

WindowGeom pool_geom(const OpDef& op, const Attrs& a, const Shape& xs) {
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
  const std::string& op = c.op.name;
  check_rank(c, 0, 4, 4);
  check_rank(c, 1, 4, 4);
  check_same_dtype(c, 0, 1);
  const Shape &xs = c.in(0).shape, &ws = c.in(1).shape;
  const int64_t groups = c.attrs.get_int("groups");
  if (groups < 1)
    MYCEL_THROW(ValueError, "[", op, "] attribute 'groups' must be >= 1, got ", groups);
  if (xs[1] % groups != 0)
    MYCEL_THROW(ShapeError, "[", op, "] input 'x' shape ", shape_str(xs), " has ", xs[1],
                " channels, not divisible by groups (", groups, ")");
  if (ws[0] % groups != 0)
    MYCEL_THROW(ShapeError, "[", op, "] input 'w' shape ", shape_str(ws), " has ", ws[0],
                " output channels, not divisible by groups (", groups, ")");
  if (ws[1] * groups != xs[1])
    MYCEL_THROW(ShapeError, "[", op, "] input 'x' shape ", shape_str(xs), " and 'w' shape ",
                shape_str(ws), ": w.shape[1] * groups (", ws[1], " * ", groups,
                ") must equal the input channels x.shape[1] (", xs[1], ")");
  if (ws[2] < 1 || ws[3] < 1)
    MYCEL_THROW(ShapeError, "[", op, "] input 'w' shape ", shape_str(ws), " has an empty kernel");
  if (c.has_input(2)) {
    check_same_dtype(c, 0, 2);
    const Shape& bs = c.in(2).shape;
    if (bs.size() != 1 || bs[0] != ws[0])
      MYCEL_THROW(ShapeError, "[", op, "] input 'b' must have shape (", ws[0], ",), got ",
                  shape_str(bs));
  }
  WindowGeom g = conv_geom(c.op, c.attrs, xs, ws);
  return {{{g.n, g.oc, g.oh, g.ow}, c.in(0).dtype}};
}

void conv2d_kernel(const KernelContext& c) {
  const WindowGeom g = conv_geom(c.op, c.attrs, c.in(0).shape(), c.in(1).shape());
  const Tensor* bias = c.in(2).defined() ? &c.in(2) : nullptr;
  if (c.out(0).dtype() == DType::float64)
    return cpu::conv2d_ref<double>(c.in(0), c.in(1), bias, c.out(0), g);
  cpu::conv2d_dnnl(c.in(0), c.in(1), bias, c.out(0), g);
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
  if (cpu::use_dnnl(c.in(0).dtype(), true))  // oneDNN: 4-25x faster than the loop
    return cpu::pool2d_dnnl(c.in(0), c.out(0), g, Max, include_pad);
  visit_float_dtype(c.in(0).dtype(), c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Max)
      cpu::max_pool2d_ref<T>(c.in(0), c.out(0), g);
    else
      cpu::avg_pool2d_ref<T>(c.in(0), c.out(0), g, include_pad);
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

std::vector<AttrDef> pool_attrs() {
  return {{"kernel_size", AttrKind::kInts, std::vector<int64_t>{1}, false, {}},
          {"strides", AttrKind::kInts, std::vector<int64_t>{1}, false, {"stride"}},
          {"pad_mode", AttrKind::kStr, std::string("valid"), false, {}},
          {"pad", AttrKind::kInts, std::vector<int64_t>{0}, false, {"padding"}}};
}

}  // namespace

MYCEL_REGISTER_OPS(nn_conv) {
  {
    OpDef d =
        make_op("conv2d", "Conv2D",
                "2-d convolution of NCHW x with w (out, in/groups, kh, kw), plus optional bias b.",
                {{"x"}, {"w"}, {"b", true, false}},
                {{"stride", AttrKind::kInts, std::vector<int64_t>{1}, false, {"strides"}},
                 {"pad_mode", AttrKind::kStr, std::string("valid"), false, {}},
                 {"pad", AttrKind::kInts, std::vector<int64_t>{0}, false, {"padding"}},
                 {"dilation", AttrKind::kInts, std::vector<int64_t>{1}, false, {}},
                 {"groups", AttrKind::kInt, int64_t{1}, false, {"group"}}},
                infer_conv2d, conv2d_kernel, {DType::bfloat16, DType::float32, DType::float64});
    r.add(std::move(d));
  }
  {
    OpDef d = make_op("max_pool2d", "MaxPool", "2-d max pooling over NCHW (or CHW) input.", {{"x"}},
                      pool_attrs(), infer_pool, pool_kernel<true>, float_dtypes());
    r.add(std::move(d));
  }
  std::vector<AttrDef> avg_attrs = pool_attrs();
  avg_attrs.push_back({"count_include_pad", AttrKind::kBool, false, false, {}});
  {
    OpDef d =
        make_op("avg_pool2d", "AvgPool",
                "2-d average pooling over NCHW (or CHW) input; padding is excluded from the count.",
                {{"x"}}, avg_attrs, infer_pool, pool_kernel<false>, float_dtypes());
    r.add(std::move(d));
  }
  {
    OpDef d =
        make_op("adaptive_avg_pool2d", "AdaptiveAvgPool2D",
                "Average pooling to a fixed output size (h, w) with PyTorch's bin boundaries.",
                {{"x"}}, {{"output_size", AttrKind::kInts, AttrValue{}, false, {}}}, infer_adaptive,
                adaptive_kernel, float_dtypes());
    r.add(std::move(d));
  }
}

}  // namespace mycel
