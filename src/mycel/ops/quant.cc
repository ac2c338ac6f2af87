// int8 inference ops (the quantized models the lite runtime runs; kernels in
// kernels/cpu/quant.h): quantize_linear and dequantize_linear (ONNX's QuantizeLinear /
// DequantizeLinear with a per-tensor scale and zero point), and qconv2d / qdense over uint8
// activations and per-output-channel int8 weights, with a float32 bias, an optional fused relu
// and a float32 or requantized uint8 output; qadd, the residual add requantized to uint8;
// qavg_pool2d, average pooling of uint8 requantized to uint8.
#include <algorithm>
#include <cmath>

#include "mycel/ops/quant_ops.h"

#include "mycel/kernels/cpu/dnnl_layout.h"
#include "mycel/ops/infer_util.h"
#include "mycel/ops/nn_window.h"

namespace mycel {
namespace {

// A positive finite scale attribute.
float scale_attr(const OpSchema& op, const Attrs& a, const char* name) {
  const double s = a.get_float(name);
  if (!(s > 0) || !std::isfinite(s) || !std::isfinite(static_cast<float>(s)) ||
      static_cast<float>(s) <= 0)
    MYCEL_THROW(ValueError, "[", op.name, "] attribute '", name,
                "' must be a positive finite float32 scale, got ", s);
  return static_cast<float>(s);
}

// A zero point that the integer dtype can hold.
int32_t zero_point_attr(const OpSchema& op, const Attrs& a, const char* name, DType dt) {
  const int64_t z = a.get_int(name);
  const int64_t lo = dt == DType::uint8 ? 0 : -128, hi = dt == DType::uint8 ? 255 : 127;
  if (z < lo || z > hi)
    MYCEL_THROW(ValueError, "[", op.name, "] attribute '", name, "' must lie in [", lo, ", ", hi,
                "] for ", dtype_name(dt), ", got ", z);
  return static_cast<int32_t>(z);
}

void check_dtype(const InferContext& c, size_t i, DType want) {
  if (c.in(i).dtype != want)
    MYCEL_THROW(TypeError, "[", c.op.name, "] input '", input_name(c, i), "' must be ",
                dtype_name(want), ", got ", dtype_name(c.in(i).dtype));
}

DType int_dtype_attr(const OpSchema& op, const Attrs& a, const char* name) {
  const DType t = a.get_dtype(name);
  if (t != DType::uint8 && t != DType::int8)
    MYCEL_THROW(ValueError, "[", op.name, "] attribute '", name, "' must be uint8 or int8, got ",
                dtype_name(t));
  return t;
}

DType out_dtype_attr(const OpSchema& op, const Attrs& a) {
  const DType t = a.get_dtype("out_dtype");
  if (t != DType::uint8 && t != DType::float32)
    MYCEL_THROW(ValueError, "[", op.name, "] attribute 'out_dtype' must be float32 or uint8, got ",
                dtype_name(t));
  return t;
}

// The quantization attributes of qconv2d / qdense, checked (n: output channels).
cpu::QuantSpec quant_spec(const OpSchema& op, const Attrs& a, int64_t n) {
  cpu::QuantSpec q;
  q.x_scale = scale_attr(op, a, "x_scale");
  q.x_zp = zero_point_attr(op, a, "x_zero_point", DType::uint8);
  const auto& ws = a.get_floats("w_scale");
  if (static_cast<int64_t>(ws.size()) != n)
    MYCEL_THROW(ValueError, "[", op.name,
                "] attribute 'w_scale' needs one scale per output channel (", n, "), got ",
                ws.size());
  for (double s : ws) {
    if (!(s > 0) || !std::isfinite(static_cast<float>(s)) || static_cast<float>(s) <= 0)
      MYCEL_THROW(ValueError, "[", op.name,
                  "] attribute 'w_scale' values must be positive finite float32, got ", s);
    q.w_scale.push_back(static_cast<float>(s));
  }
  const DType out = out_dtype_attr(op, a);
  q.y_scale = scale_attr(op, a, "y_scale");
  q.y_zp = zero_point_attr(op, a, "y_zero_point", DType::uint8);
  if (out == DType::float32 && q.y_zp != 0)
    MYCEL_THROW(ValueError, "[", op.name,
                "] attribute 'y_zero_point' is for a uint8 output; out_dtype is float32");
  q.relu6 = a.get_bool("relu6");
  q.relu = a.get_bool("relu") || q.relu6;
  return q;
}

void check_bias(const InferContext& c, int64_t n) {
  if (!c.has_input(2)) return;
  check_dtype(c, 2, DType::float32);
  if (c.in(2).shape != Shape{n})
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'b' must have shape (", n, ",), got ",
                shape_str(c.in(2).shape));
}

// Every attribute has a default (an empty w_scale is rejected by infer): the bias input is
// optional, so a required attribute after it could only be passed by keyword.
std::vector<AttrDef> quant_attrs() {
  return {attr("x_scale", AttrKind::kFloat, 1.0),
          attr("x_zero_point", AttrKind::kInt, int64_t{0}),
          attr("w_scale", AttrKind::kFloats, std::vector<double>{}),
          attr("y_scale", AttrKind::kFloat, 1.0),
          attr("y_zero_point", AttrKind::kInt, int64_t{0}),
          attr("out_dtype", AttrKind::kDType, DType::float32),
          attr("relu", AttrKind::kBool, false),
          attr("relu6", AttrKind::kBool, false)};
}

std::vector<AttrDef> qconv_attrs() {
  std::vector<AttrDef> a{attr("stride", AttrKind::kInts, std::vector<int64_t>{1}, {"strides"}),
                         attr("pad_mode", AttrKind::kStr, std::string("valid")),
                         attr("pad", AttrKind::kInts, std::vector<int64_t>{0}, {"padding"}),
                         attr("dilation", AttrKind::kInts, std::vector<int64_t>{1}),
                         attr("groups", AttrKind::kInt, int64_t{1}, {"group"})};
  for (AttrDef& d : quant_attrs()) a.push_back(std::move(d));
  return a;
}

std::vector<TensorMeta> infer_quantize(const InferContext& c) {
  check_dtype(c, 0, DType::float32);
  scale_attr(c.op, c.attrs, "scale");
  const DType t = int_dtype_attr(c.op, c.attrs, "dtype");
  zero_point_attr(c.op, c.attrs, "zero_point", t);
  return {{c.in(0).shape, t}};
}

std::vector<TensorMeta> infer_dequantize(const InferContext& c) {
  const DType t = c.in(0).dtype;
  if (t != DType::uint8 && t != DType::int8)
    MYCEL_THROW(TypeError, "[", c.op.name, "] input 'x' must be uint8 or int8, got ",
                dtype_name(t));
  scale_attr(c.op, c.attrs, "scale");
  zero_point_attr(c.op, c.attrs, "zero_point", t);
  return {{c.in(0).shape, DType::float32}};
}

void check_conv_shapes(const InferContext& c, const Shape& xs, const Shape& ws) {
  const int64_t groups = c.attrs.get_int("groups");
  if (groups < 1)
    MYCEL_THROW(ValueError, "[", c.op.name, "] attribute 'groups' must be >= 1, got ", groups);
  if (ws[0] % groups != 0 || ws[1] * groups != xs[1] || ws[2] < 1 || ws[3] < 1)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'x' shape ", shape_str(xs), " and 'w' shape ",
                shape_str(ws),
                " do not match: w is (out, in / groups, kh, kw) with out divisible by groups (",
                groups, ")");
}

std::vector<TensorMeta> infer_qconv2d(const InferContext& c) {
  check_rank(c, 0, 4, 4);
  check_rank(c, 1, 4, 4);
  check_dtype(c, 0, DType::uint8);
  check_dtype(c, 1, DType::int8);
  const Shape &xs = c.in(0).shape, &ws = c.in(1).shape;
  check_conv_shapes(c, xs, ws);
  check_bias(c, ws[0]);
  quant_spec(c.op, c.attrs, ws[0]);
  const cpu::WindowGeom g = conv2d_window(c.op, c.attrs, xs, ws);
  return {{{g.n, g.oc, g.oh, g.ow}, out_dtype_attr(c.op, c.attrs)}};
}

std::vector<TensorMeta> infer_qdense(const InferContext& c) {
  check_rank(c, 0, 1, 64);
  check_rank(c, 1, 2, 2);
  check_dtype(c, 0, DType::uint8);
  check_dtype(c, 1, DType::int8);
  const Shape &xs = c.in(0).shape, &ws = c.in(1).shape;
  if (xs.back() != ws[1])
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'x' shape ", shape_str(xs), " and 'w' shape ",
                shape_str(ws), ": x.shape[-1] (", xs.back(), ") must equal w.shape[1] (", ws[1],
                ")");
  check_bias(c, ws[0]);
  quant_spec(c.op, c.attrs, ws[0]);
  Shape out(xs.begin(), xs.end() - 1);
  out.push_back(ws[0]);
  return {{out, out_dtype_attr(c.op, c.attrs)}};
}

// qadd's inputs: each uint8 (with its scale and zero point) or float32, of one shape.
std::vector<TensorMeta> infer_qadd(const InferContext& c) {
  for (size_t i = 0; i < 2; ++i) {
    const DType t = c.in(i).dtype;
    if (t != DType::uint8 && t != DType::float32)
      MYCEL_THROW(TypeError, "[", c.op.name, "] input '", input_name(c, i),
                  "' must be uint8 or float32, got ", dtype_name(t));
  }
  if (c.in(0).shape != c.in(1).shape)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] inputs 'a' ", shape_str(c.in(0).shape), " and 'b' ",
                shape_str(c.in(1).shape), " must have one shape (no broadcasting)");
  qadd_spec(c.op, c.attrs);
  return {{c.in(0).shape, DType::uint8}};
}

std::vector<AttrDef> qpool_attrs() {
  return {attr("kernel_size", AttrKind::kInts, std::vector<int64_t>{1}),
          attr("strides", AttrKind::kInts, std::vector<int64_t>{1}, {"stride"}),
          attr("pad_mode", AttrKind::kStr, std::string("valid")),
          attr("pad", AttrKind::kInts, std::vector<int64_t>{0}, {"padding"}),
          attr("count_include_pad", AttrKind::kBool, false),
          attr("x_scale", AttrKind::kFloat, 1.0),
          attr("x_zero_point", AttrKind::kInt, int64_t{0}),
          attr("y_scale", AttrKind::kFloat, 1.0),
          attr("y_zero_point", AttrKind::kInt, int64_t{0})};
}

cpu::QPoolSpec qpool_spec(const OpSchema& op, const Attrs& a) {
  cpu::QPoolSpec q;
  q.x_scale = scale_attr(op, a, "x_scale");
  q.x_zp = zero_point_attr(op, a, "x_zero_point", DType::uint8);
  q.y_scale = scale_attr(op, a, "y_scale");
  q.y_zp = zero_point_attr(op, a, "y_zero_point", DType::uint8);
  q.count_include_pad = a.get_bool("count_include_pad");
  return q;
}

// qavg_pool2d: avg_pool2d's window (pool2d_window reads the same attributes) over uint8 NCHW.
std::vector<TensorMeta> infer_qavg_pool2d(const InferContext& c) {
  check_rank(c, 0, 4, 4);
  check_dtype(c, 0, DType::uint8);
  qpool_spec(c.op, c.attrs);
  const cpu::WindowGeom g = pool2d_window(c.op, c.attrs, c.in(0).shape);
  if (2 * std::max(g.pt, g.pb) > g.kh || 2 * std::max(g.pl, g.pr) > g.kw)
    MYCEL_THROW(ValueError, "[", c.op.name, "] padding ", shape_str(c.attrs.get_ints("pad")),
                " must be at most half the kernel size (", g.kh, ", ", g.kw, ")");
  return {{{g.n, g.c, g.oh, g.ow}, DType::uint8}};
}

}  // namespace

cpu::QAddSpec qadd_spec(const OpSchema& op, const Attrs& a) {
  cpu::QAddSpec q;
  q.a_scale = scale_attr(op, a, "a_scale");
  q.a_zp = zero_point_attr(op, a, "a_zero_point", DType::uint8);
  q.b_scale = scale_attr(op, a, "b_scale");
  q.b_zp = zero_point_attr(op, a, "b_zero_point", DType::uint8);
  q.y_scale = scale_attr(op, a, "y_scale");
  q.y_zp = zero_point_attr(op, a, "y_zero_point", DType::uint8);
  q.relu = a.get_bool("relu");
  return q;
}

void run_int8_op(const OpSchema& op, const std::vector<Tensor>& in, Tensor& out, const Attrs& attrs,
                 bool const_weights, cpu::Int8Path* path, cpu::Int8Layout layout) {
  MYCEL_CHECK(op.name == "qconv2d" || op.name == "qdense", ValueError, "run_int8_op: '", op.name,
              "' is not qconv2d or qdense");
  const Tensor* bias = in.size() > 2 && in[2].defined() ? &in[2] : nullptr;
  const Shape& ws = in[1].shape();
  const cpu::QuantSpec q = quant_spec(op, attrs, ws[0]);
  if (op.name == "qconv2d") {
    const cpu::WindowGeom g = conv2d_window(op, attrs, in[0].shape(), ws);
    cpu::qconv2d(in[0], in[1], bias, out, g, q, const_weights, path, layout);
  } else {
    const int64_t k = ws[1], n = ws[0], m = n ? out.numel() / n : 0;
    cpu::qdense(in[0], in[1], bias, out, m, k, n, q, const_weights, path);
  }
}

MYCEL_REGISTER_OPS(quant) {
  // The lite runtime marks model constants and NHWC activations in the kernel's parameters.
  auto int8_kernel = [](const KernelContext& c) {
    const KernelParams plain;
    const KernelParams& p = c.params ? *c.params : plain;
    run_int8_op(c.op, c.inputs, c.out(0), c.attrs, p.const_weights, nullptr,
                cpu::Int8Layout{p.src_blocked, p.dst_blocked});
    if (c.params) c.params->layout_taken = true;
  };
  // quantize / dequantize are elementwise (vmap's and the planner's generic rules apply).
  auto elementwise = [](OpDef d) {
    d.elementwise = true;
    return d;
  };
  r.add(elementwise(make_op(
      "quantize_linear", "QuantizeLinear",
      "float32 to uint8/int8: clamp(round(x / scale) + zero_point), ties to even (ONNX "
      "QuantizeLinear).",
      {{"x"}},
      {attr("scale", AttrKind::kFloat), attr("zero_point", AttrKind::kInt, int64_t{0}),
       attr("dtype", AttrKind::kDType, DType::uint8)},
      infer_quantize,
      [](const KernelContext& c) {
        cpu::quantize_linear(c.in(0), c.out(0), static_cast<float>(c.attrs.get_float("scale")),
                             static_cast<int32_t>(c.attrs.get_int("zero_point")));
      },
      {DType::float32}, "none")));
  r.add(elementwise(make_op(
      "dequantize_linear", "DequantizeLinear",
      "uint8/int8 to float32: (x - zero_point) * scale (ONNX DequantizeLinear).", {{"x"}},
      {attr("scale", AttrKind::kFloat), attr("zero_point", AttrKind::kInt, int64_t{0})},
      infer_dequantize,
      [](const KernelContext& c) {
        cpu::dequantize_linear(c.in(0), c.out(0), static_cast<float>(c.attrs.get_float("scale")),
                               static_cast<int32_t>(c.attrs.get_int("zero_point")));
      },
      {DType::uint8, DType::int8}, "none")));
  r.add(make_op(
      "qconv2d", "QuantConv2D",
      "int8 conv2d: uint8 NCHW x (x_scale, x_zero_point), int8 w (out, in/groups, kh, kw) with "
      "per-channel "
      "w_scale, float32 bias; float32 or requantized uint8 output, optional fused relu or relu6.",
      {{"x"}, {"w"}, {"b", true, false}}, qconv_attrs(), infer_qconv2d, int8_kernel, {DType::uint8},
      "none"));
  r.add(elementwise(make_op(
      "qadd", "QuantAdd",
      "int8 add (a residual block's): a + b, each uint8 (its scale and zero point) or float32, "
      "optional relu, requantized to uint8 (y_scale, y_zero_point) (ONNX QLinearAdd).",
      {{"a"}, {"b"}},
      {attr("a_scale", AttrKind::kFloat, 1.0), attr("a_zero_point", AttrKind::kInt, int64_t{0}),
       attr("b_scale", AttrKind::kFloat, 1.0), attr("b_zero_point", AttrKind::kInt, int64_t{0}),
       attr("y_scale", AttrKind::kFloat, 1.0), attr("y_zero_point", AttrKind::kInt, int64_t{0}),
       attr("relu", AttrKind::kBool, false)},
      infer_qadd,
      [](const KernelContext& c) {
        cpu::qadd(c.in(0), c.in(1), c.out(0), qadd_spec(c.op, c.attrs));
      },
      {DType::uint8, DType::float32}, "none")));
  r.add(make_op(
      "qavg_pool2d", "QuantAvgPool",
      "int8 average pooling (avg_pool2d's window) of uint8 NCHW x (x_scale, x_zero_point): the "
      "exact int32 window sum, averaged in float32 and requantized to uint8 (y_scale, "
      "y_zero_point). A window of the whole image is global average pooling.",
      {{"x"}}, qpool_attrs(), infer_qavg_pool2d,
      [](const KernelContext& c) {
        const cpu::WindowGeom g = pool2d_window(c.op, c.attrs, c.in(0).shape());
        // The lite runtime may hand over NHWC input and output (layout.h).
        const bool nhwc = c.params && c.params->src_blocked;
        cpu::qavg_pool2d(c.in(0), c.out(0), g, qpool_spec(c.op, c.attrs), nhwc);
        if (c.params) c.params->layout_taken = true;
      },
      {DType::uint8}, "none"));
  r.add(make_op(
      "qdense", "QuantDense",
      "int8 dense: uint8 x (..., in) (x_scale, x_zero_point) times int8 w (out, in) with "
      "per-channel "
      "w_scale, float32 bias; float32 or requantized uint8 output, optional fused relu or relu6.",
      {{"x"}, {"w"}, {"b", true, false}}, quant_attrs(), infer_qdense, int8_kernel, {DType::uint8},
      "none"));
}

}  // namespace mycel
