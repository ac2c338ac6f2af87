// Fused attention: flash_attention (softmax(scale * q k^T, attn_mask) v per head, returning the
// output and each query row's logsumexp) and flash_attention_grad, its backward from that
// logsumexp. mycel.ops.flash_attention_score (MindSpore's signature) is the Python front door.
#include <cstring>

#include "mycel/kernels/cpu/flash_attention.h"
#include "mycel/ops/bprop.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

// Dims known at trace time (-1: a dynamic dim) must agree.
bool dims_differ(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

// (B, N, Lq, Lk, D) of q, k, v in `input_layout`, checked against each other and head_num.
struct AttnDims {
  int64_t batch, heads, lq, lk, dim;
  bool bsh;
};

AttnDims attn_dims(const InferContext& c) {
  const char* op = c.op.name.c_str();
  const std::string& layout = c.attrs.get_str("input_layout");
  const int64_t heads = c.attrs.get_int("head_num");
  if (layout != "BSH" && layout != "BNSD")
    MYCEL_THROW(ValueError, "[", op, "] input_layout must be 'BSH' or 'BNSD', got '", layout, "'");
  if (heads < 1) MYCEL_THROW(ValueError, "[", op, "] head_num must be >= 1, got ", heads);
  const bool bsh = layout == "BSH";
  const size_t rank = bsh ? 3 : 4;
  for (size_t i = 0; i < 3; ++i) {
    check_float(c, i);
    if (c.in(i).dtype == DType::float64)
      MYCEL_THROW(TypeError, "[", op, "] input '", input_name(c, i),
                  "' must be float16, bfloat16 or float32, got float64");
    check_same_dtype(c, 0, i);
    if (c.in(i).shape.size() != rank)
      MYCEL_THROW(ShapeError, "[", op, "] input '", input_name(c, i), "' must be ",
                  bsh ? "(B, S, H) for input_layout 'BSH'" : "(B, N, S, D) for input_layout 'BNSD'",
                  ", got shape ", shape_str(c.in(i).shape));
  }
  const Shape &q = c.in(0).shape, &k = c.in(1).shape, &v = c.in(2).shape;
  if (k != v)
    MYCEL_THROW(ShapeError, "[", op, "] 'value' must have the shape of 'key' ", shape_str(k),
                ", got ", shape_str(v));
  AttnDims d{q[0], heads, q[rank - 2], k[rank - 2], -1, bsh};
  if (bsh) {
    if (q[2] >= 0 && q[2] % heads != 0)
      MYCEL_THROW(ShapeError, "[", op, "] the hidden size of 'query' (", q[2],
                  ") must be divisible by head_num (", heads, ")");
    d.dim = q[2] >= 0 ? q[2] / heads : -1;
  } else {
    if (dims_differ(q[1], heads))
      MYCEL_THROW(ShapeError, "[", op, "] 'query' has ", q[1], " heads (dim 1) but head_num is ",
                  heads);
    d.dim = q[3];
  }
  if (dims_differ(k[0], q[0]))
    MYCEL_THROW(ShapeError, "[", op, "] 'key' has batch ", k[0], ", 'query' ", q[0]);
  // key and value with fewer heads than query (grouped-query attention) are not supported.
  for (size_t a = bsh ? 2 : 1; a < rank; a += bsh ? 1 : 2)
    if (dims_differ(k[a], q[a]))
      MYCEL_THROW(ShapeError, "[", op, "] 'key' ", shape_str(k), " must have the heads and head ",
                  "size of 'query' ", shape_str(q), " (fewer key/value heads are not supported)");
  return d;
}

// attn_mask (bool or uint8, nonzero = masked out): (Lq, Lk), (B, 1, Lq, Lk) or (B, N, Lq, Lk).
void check_mask(const InferContext& c, size_t i, const AttnDims& d) {
  if (!c.has_input(i)) return;
  const TensorMeta& m = c.in(i);
  const char* op = c.op.name.c_str();
  if (m.dtype != DType::bool_ && m.dtype != DType::uint8)
    MYCEL_THROW(TypeError, "[", op, "] attn_mask must be bool or uint8 (True = masked out), got ",
                dtype_name(m.dtype));
  const Shape& s = m.shape;
  const bool ok =
      (s.size() == 2 && !dims_differ(s[0], d.lq) && !dims_differ(s[1], d.lk)) ||
      (s.size() == 4 && !dims_differ(s[0], d.batch) && (s[1] == 1 || !dims_differ(s[1], d.heads)) &&
       !dims_differ(s[2], d.lq) && !dims_differ(s[3], d.lk));
  if (!ok)
    MYCEL_THROW(ShapeError, "[", op, "] attn_mask must be (S1, S2) = (", d.lq, ", ", d.lk,
                "), (B, 1, S1, S2) or (B, N, S1, S2) with B = ", d.batch, ", N = ", d.heads,
                "; got shape ", shape_str(s));
}

std::vector<TensorMeta> infer_flash_attention(const InferContext& c) {
  const AttnDims d = attn_dims(c);
  check_mask(c, 3, d);
  return {c.in(0), TensorMeta{{d.batch, d.heads, d.lq}, DType::float32}};
}

// flash_attention_grad(q, k, v, out, dout, lse, dlse, attn_mask) -> (dq, dk, dv).
std::vector<TensorMeta> infer_flash_attention_grad(const InferContext& c) {
  const AttnDims d = attn_dims(c);
  for (size_t i : {3, 4}) {  // out and dout: query's shape and dtype
    check_same_dtype(c, 0, i);
    if (c.in(i).shape != c.in(0).shape)
      MYCEL_THROW(ShapeError, "[", c.op.name, "] input '", input_name(c, i),
                  "' must have the shape ", "of 'query' ", shape_str(c.in(0).shape), ", got ",
                  shape_str(c.in(i).shape));
  }
  const Shape stat = {d.batch, d.heads, d.lq};
  for (size_t i : {5, 6}) {  // lse and dlse: float32 (B, N, S1)
    const TensorMeta& m = c.in(i);
    bool same = m.shape.size() == 3;
    for (size_t a = 0; same && a < 3; ++a) same = !dims_differ(m.shape[a], stat[a]);
    if (m.dtype != DType::float32 || !same)
      MYCEL_THROW(TypeError, "[", c.op.name, "] input '", input_name(c, i),
                  "' must be float32 of shape ", shape_str(stat), ", got ", dtype_name(m.dtype),
                  " ", shape_str(m.shape));
  }
  check_mask(c, 7, d);
  return {c.in(0), c.in(1), c.in(2)};
}

cpu::FlashGeometry geometry(const KernelContext& c, size_t mask_input) {
  const Tensor& q = c.in(0);
  const Tensor& k = c.in(1);
  cpu::FlashGeometry g;
  g.bsh = c.attrs.get_str("input_layout") == "BSH";
  g.heads = c.attrs.get_int("head_num");
  g.batch = q.shape()[0];
  g.lq = q.shape()[g.bsh ? 1 : 2];
  g.lk = k.shape()[g.bsh ? 1 : 2];
  g.dim = g.bsh ? q.shape()[2] / g.heads : q.shape()[3];
  g.scale = static_cast<float>(c.attrs.get_float("scalar_value"));
  if (mask_input < c.inputs.size() && c.in(mask_input).defined()) {
    const Shape& s = c.in(mask_input).shape();
    g.mask_rows = g.lk;
    if (s.size() == 4) {
      g.mask_h = s[1] == 1 ? 0 : g.lq * g.lk;
      g.mask_b = s[1] * g.lq * g.lk;
    }
  }
  return g;
}

const Tensor* mask_of(const KernelContext& c, size_t i) {
  return i < c.inputs.size() && c.in(i).defined() ? &c.in(i) : nullptr;
}

void flash_attention_kernel(const KernelContext& c) {
  if (c.out(0).numel() == 0) return;
  const cpu::FlashGeometry g = geometry(c, 3);
  if (g.lk == 0) MYCEL_THROW(ValueError, "[flash_attention] the key length must be >= 1");
  cpu::flash_attention_forward(c.in(0), c.in(1), c.in(2), mask_of(c, 3), g, c.out(0), c.out(1));
}

void flash_attention_grad_kernel(const KernelContext& c) {
  const cpu::FlashGeometry g = geometry(c, 7);
  if (c.out(0).numel() == 0 || c.out(1).numel() == 0) {
    for (int i = 0; i < 3; ++i) std::memset(c.out(i).data(), 0, c.out(i).nbytes());
    return;
  }
  cpu::flash_attention_backward(c.in(0), c.in(1), c.in(2), c.in(3), c.in(4), c.in(5), c.in(6),
                                mask_of(c, 7), g, c.out(0), c.out(1), c.out(2));
}

std::vector<AttrDef> attention_attrs() {
  return {{"head_num", AttrKind::kInt, int64_t{1}, false, {}},
          {"scalar_value", AttrKind::kFloat, 1.0, false, {}},
          {"input_layout", AttrKind::kStr, std::string("BSH"), false, {}}};
}

std::vector<DType> attention_dtypes() { return {DType::float16, DType::bfloat16, DType::float32}; }

}  // namespace

MYCEL_REGISTER_OPS(nn_attention) {
  r.add(make_op("flash_attention", "FlashAttention",
                "Fused softmax(scalar_value * q k^T, attn_mask) v per head in input_layout 'BSH' "
                "or 'BNSD'; returns (attention_out, softmax_lse float32 (B, N, S1)).",
                {{"query"}, {"key"}, {"value"}, {"attn_mask", true}}, attention_attrs(),
                infer_flash_attention, flash_attention_kernel, attention_dtypes(), "bprop"));
  r.add(make_op(
      "flash_attention_grad", "FlashAttentionGrad",
      "Gradient of flash_attention: (dq, dk, dv) from q, k, v, the output, its "
      "sensitivity, the saved logsumexp and its sensitivity, recomputing the scores.",
      {{"query"}, {"key"}, {"value"}, {"out"}, {"dout"}, {"lse"}, {"dlse"}, {"attn_mask", true}},
      attention_attrs(), infer_flash_attention_grad, flash_attention_grad_kernel,
      attention_dtypes(), "unsupported"));
}

MYCEL_REGISTER_BPROPS(nn_attention) {
  // One fused backward; the mask is not differentiable.
  b.add("flash_attention", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar out = g.out(), dout = g.dout();
    std::vector<GradVar> ins = {g.input(0),          g.input(1),           g.input(2),
                                g.tuple_get(out, 0), g.tuple_get(dout, 0), g.tuple_get(out, 1),
                                g.tuple_get(dout, 1)};
    if (GradVar mask = g.input(3)) ins.push_back(mask);
    const Attrs& a = g.attrs();
    GradVar grads = g.call("flash_attention_grad", ins,
                           {{"head_num", a.get_int("head_num")},
                            {"scalar_value", a.get_float("scalar_value")},
                            {"input_layout", a.get_str("input_layout")}});
    return {g.tuple_get(grads, 0), g.tuple_get(grads, 1), g.tuple_get(grads, 2), {}};
  });
}

}  // namespace mycel
