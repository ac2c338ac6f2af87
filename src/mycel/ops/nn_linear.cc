// Dense linear algebra: matmul (numpy semantics, batched with broadcasting) and dense (x @ w.T +
// b). float32/bfloat16 run on oneDNN (float16 through float32); float64 and integers on the
// reference loops in nn_ref.h.
#include "mycel/core/dynamic_dims.h"
#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/nn_ref.h"
#include "mycel/ops/bprop.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

using cpu::MatmulGeom;

constexpr size_t kMaxDnnlRank = 12;  // oneDNN's DNNL_MAX_NDIMS

// Geometry of x @ y (np.matmul rules; the transposes apply to operands of rank >= 2).
MatmulGeom matmul_geom(const Shape& xs, const Shape& ys, bool ta, bool tb) {
  MatmulGeom g;
  const size_t rx = xs.size(), ry = ys.size();
  g.trans_a = ta && rx >= 2;
  g.trans_b = tb && ry >= 2;
  int64_t kx, ky;
  if (rx == 1) {
    kx = xs[0];
  } else {
    g.m = g.trans_a ? xs[rx - 1] : xs[rx - 2];
    kx = g.trans_a ? xs[rx - 2] : xs[rx - 1];
  }
  if (ry == 1) {
    ky = ys[0];
  } else {
    ky = g.trans_b ? ys[ry - 1] : ys[ry - 2];
    g.n = g.trans_b ? ys[ry - 2] : ys[ry - 1];
  }
  if (!dims_agree(kx, ky)) {
    const char* xk = rx == 1     ? "x.shape[0]"
                     : g.trans_a ? "x.shape[-2] (transpose_a)"
                                 : "x.shape[-1]";
    const char* yk = ry == 1     ? "y.shape[0]"
                     : g.trans_b ? "y.shape[-1] (transpose_b)"
                                 : "y.shape[-2]";
    MYCEL_THROW(ShapeError, "[matmul] input 'x' shape ", shape_str(xs), " and 'y' shape ",
                shape_str(ys), ": ", xk, " (", kx, ") must equal ", yk, " (", ky, ")");
  }
  g.k = agreed_dim(kx, ky);
  Shape xb(xs.begin(), xs.end() - std::min<size_t>(rx, 2));
  Shape yb(ys.begin(), ys.end() - std::min<size_t>(ry, 2));
  g.batch = broadcast_shapes(xb, yb, "matmul");
  g.a_batch = Shape(g.batch.size() - xb.size(), 1);
  g.a_batch.insert(g.a_batch.end(), xb.begin(), xb.end());
  g.b_batch = Shape(g.batch.size() - yb.size(), 1);
  g.b_batch.insert(g.b_batch.end(), yb.begin(), yb.end());
  g.out_shape = g.batch;
  if (rx >= 2) g.out_shape.push_back(g.m);
  if (ry >= 2) g.out_shape.push_back(g.n);
  return g;
}

MatmulGeom matmul_geom(const KernelContext& c) {
  return matmul_geom(c.in(0).shape(), c.in(1).shape(), c.attrs.get_bool("transpose_a"),
                     c.attrs.get_bool("transpose_b"));
}

// Geometry of dense: x viewed as (M, in) times w (out, in) transposed.
MatmulGeom dense_geom(const Shape& xs, const Shape& ws) {
  MatmulGeom g;
  g.k = xs.back();
  g.n = ws[0];
  g.m = 1;
  for (size_t i = 0; i + 1 < xs.size(); ++i) g.m *= xs[i];
  g.trans_b = true;
  g.out_shape = Shape(xs.begin(), xs.end() - 1);
  g.out_shape.push_back(g.n);
  return g;
}

// Runs c = a @ b (+ bias): oneDNN for float32/bfloat16, the reference loop otherwise.
void run_matmul(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                const MatmulGeom& g, KernelParams* params = nullptr,
                std::unique_ptr<KernelPrepared>* slot = nullptr) {
  const DType t = c.dtype();
  if (t == DType::float32 || t == DType::bfloat16)
    return cpu::matmul_dnnl(a, b, bias, c, g, params, slot);
  if (t == DType::float16) {
    // No float16 GEMM on these CPUs (oneDNN 2.6 has none on AVX2): float32 compute, rounded
    // once to float16 at the end, which is what a float16 GEMM with float32 accumulation gives.
    Tensor a32 = a.to(DType::float32), b32 = b.to(DType::float32), bias32;
    if (bias) bias32 = bias->to(DType::float32);
    Tensor c32 = Tensor::empty(c.shape(), DType::float32);
    cpu::matmul_dnnl(a32, b32, bias ? &bias32 : nullptr, c32, g);
    convert_elements(c32.data(), DType::float32, c.data(), DType::float16, c.numel());
    return;
  }
  visit_any_dtype(t, [&](auto tag) {  // integers wrap (uint16/32/64 too); complex as numpy
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double> || is_complex_v<T> ||
                  (std::is_integral_v<T> && !std::is_same_v<T, bool>))
      cpu::matmul_ref<T>(a, b, bias, c, g);
    else
      MYCEL_THROW(TypeError, "[matmul] no kernel for ", dtype_name(t));
  });
}

std::vector<TensorMeta> infer_matmul(const InferContext& c) {
  check_rank(c, 0, 1, kMaxDnnlRank);
  check_rank(c, 1, 1, kMaxDnnlRank);
  check_same_dtype(c, 0, 1);
  MatmulGeom g = matmul_geom(c.in(0).shape, c.in(1).shape, c.attrs.get_bool("transpose_a"),
                             c.attrs.get_bool("transpose_b"));
  if (g.batch.size() + 2 > kMaxDnnlRank)
    MYCEL_THROW(NotSupported, "[matmul] at most ", kMaxDnnlRank - 2, " batch dimensions, got ",
                g.batch.size());
  return {{g.out_shape, c.in(0).dtype}};
}

std::vector<TensorMeta> infer_dense(const InferContext& c) {
  check_rank(c, 0, 1, 64);
  check_rank(c, 1, 2, 2);
  check_same_dtype(c, 0, 1);
  const Shape &xs = c.in(0).shape, &ws = c.in(1).shape;
  if (!dims_agree(xs.back(), ws[1]))
    MYCEL_THROW(ShapeError, "[dense] input 'x' shape ", shape_str(xs), " and 'w' shape ",
                shape_str(ws), ": x.shape[-1] (", xs.back(), ") must equal w.shape[1] (", ws[1],
                ")");
  if (c.has_input(2)) {
    check_same_dtype(c, 0, 2);
    const Shape& bs = c.in(2).shape;
    if (bs.size() != 1 || !dims_agree(bs[0], ws[0]))
      MYCEL_THROW(ShapeError, "[dense] input 'b' must have shape (", ws[0],
                  ",) to match 'w' shape ", shape_str(ws), ", got ", shape_str(bs));
  }
  Shape out = dense_geom(xs, ws).out_shape;
  if (c.has_input(2)) out.back() = agreed_dim(out.back(), c.in(2).shape[0]);  // b's size if static
  return {{out, c.in(0).dtype}};
}

std::vector<DType> matmul_dtypes() {
  return {DType::int8,    DType::uint8,    DType::int16,     DType::int32,     DType::int64,
          DType::float16, DType::bfloat16, DType::float32,   DType::float64,   DType::uint16,
          DType::uint32,  DType::uint64,   DType::complex64, DType::complex128};
}

// Sharding: m rows of x, n columns of y, k the contracted dim (a split k ends in an AllReduce);
// batch dims broadcast like elementwise ops.
shard::LabelSpec matmul_spec(const shard::ShardContext& c) {
  const Shape &xs = c.in(0).shape, &ys = c.in(1).shape, &os = c.outputs.at(0).shape;
  const size_t xb = xs.size() >= 2 ? xs.size() - 2 : 0, yb = ys.size() >= 2 ? ys.size() - 2 : 0;
  const size_t ob = std::max(xb, yb);
  const std::string batch = shard::labels(ob, 'a');
  auto blab = [&](const Shape& s, size_t nb) {
    std::string l;
    for (size_t d = 0; d < nb; ++d)
      l += (s[d] == 1 && os[ob - nb + d] != 1) ? '1' : batch[ob - nb + d];
    return l;
  };
  shard::LabelSpec sp;
  sp.inputs = {
      xs.size() == 1 ? "k" : blab(xs, xb) + (c.attrs.get_bool("transpose_a") ? "km" : "mk"),
      ys.size() == 1 ? "k" : blab(ys, yb) + (c.attrs.get_bool("transpose_b") ? "nk" : "kn")};
  sp.outputs = {batch + (xs.size() > 1 ? "m" : "") + (ys.size() > 1 ? "n" : "")};
  return sp;
}

// x (..., k) @ w (n, k).T + b (n,).
shard::LabelSpec dense_spec(const shard::ShardContext& c) {
  const std::string batch = shard::labels(c.in(0).shape.size() - 1, 'a');
  shard::LabelSpec sp;
  sp.inputs = {batch + "k", "nk", c.has_input(2) ? "n" : ""};
  sp.outputs = {batch + "n"};
  if (c.has_input(2)) sp.fixed = "k";  // every partial sum would add the bias once
  return sp;
}

}  // namespace

MYCEL_REGISTER_OPS(nn_linear) {
  {
    OpDef d;
    d.name = "matmul";
    d.class_name = "MatMul";
    d.doc = "Matrix product with numpy semantics: batched, broadcasting batch dims, 1-d operands.";
    d.inputs = {{"x"}, {"y"}};
    d.attrs = {{"transpose_a", AttrKind::kBool, false, false, {}},
               {"transpose_b", AttrKind::kBool, false, false, {}}};
    d.infer = infer_matmul;
    d.kernel = [](const KernelContext& c) {
      // A warm graph-mode launch reuses the prepared geometry and primitive.
      if (cpu::matmul_dnnl_warm(c.in(0), c.in(1), nullptr, c.out(0), c.params, c.prepared)) return;
      run_matmul(c.in(0), c.in(1), nullptr, c.out(0), matmul_geom(c), c.params, c.prepared);
    };
    d.dtypes = matmul_dtypes();
    d.grad = "bprop";
    shard::set_label_rule(d, matmul_spec);
    d.backend.accepts_post_ops = kPostRelu | kPostAddRow;  // oneDNN post-ops
    d.backend.plain_matmul = true;                         // backend/fuse_matmul_update.cc
    r.add(std::move(d));
  }
  {
    OpDef d;
    d.name = "dense";
    d.class_name = "Dense";
    d.doc = "Fully connected layer: x @ w.T + b, w of shape (out, in).";
    d.inputs = {{"x"}, {"w"}, {"b", true, false}};
    d.infer = infer_dense;
    d.kernel = [](const KernelContext& c) {
      const Tensor* bias = c.in(2).defined() ? &c.in(2) : nullptr;
      if (cpu::matmul_dnnl_warm(c.in(0), c.in(1), bias, c.out(0), c.params, c.prepared)) return;
      const MatmulGeom g = dense_geom(c.in(0).shape(), c.in(1).shape());
      run_matmul(c.in(0), c.in(1), bias, c.out(0), g, c.params, c.prepared);
    };
    d.dtypes = {DType::float16, DType::bfloat16, DType::float32, DType::float64};
    d.grad = "bprop";
    shard::set_label_rule(d, dense_spec);
    // oneDNN post-ops; an inference batch_norm after it folds into its weights
    // (backend/fold_batch_norm.cc)
    d.backend.accepts_post_ops = kPostRelu | kPostAddRow | kPostChannelAffine;
    r.add(std::move(d));
  }
}

namespace {

GradVar mm(BpropBuilder& g, GradVar a, GradVar b, bool ta, bool tb) {
  return g.call("matmul", {a, b}, {{"transpose_a", ta}, {"transpose_b", tb}});
}

GradVar expand(BpropBuilder& g, GradVar a, int64_t axis) {
  return g.call("expand_dims", {a}, {{"axis", axis}});
}

// Broadcast of two batch shapes where dims may be -1 (unknown until run time).
Shape broadcast_batch(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = da == 1 ? db : (db == 1 || da != -1) ? da : db;
  }
  return out;
}

// C = op(X) @ op(Y) with 1-d operands promoted to matrices (x: a row, y: a column): dA = dC @ B^T
// and dB = A^T @ dC, written with transpose flags so no transpose is materialized, then summed
// over broadcast batch dims back to each input's shape.
std::vector<GradVar> matmul_bprop(BpropBuilder& g) {
  GradVar x = g.input(0), y = g.input(1), dc = g.dout();
  const Shape xs = g.meta(x).shape, ys = g.meta(y).shape;
  const bool x1 = xs.size() == 1, y1 = ys.size() == 1;
  const bool ta = g.attrs().get_bool("transpose_a") && !x1;
  const bool tb = g.attrs().get_bool("transpose_b") && !y1;
  // Complex operands enter conjugated (d(X Y) = dC Y^H, X^H dC; ops/bprop_complex.h).
  const DType t = g.out_meta(0).dtype;
  GradVar X = is_complex(t) ? g.call("conj", {x1 ? expand(g, x, 0) : x}) : x1 ? expand(g, x, 0) : x;
  GradVar Y = is_complex(t) ? g.call("conj", {y1 ? expand(g, y, -1) : y})
              : y1          ? expand(g, y, -1)
                            : y;
  if (y1) dc = expand(g, dc, -1);
  if (x1) dc = expand(g, dc, -2);
  const Shape xm = x1 ? Shape{1, xs[0]} : Shape(xs.end() - 2, xs.end());
  const Shape ym = y1 ? Shape{ys[0], 1} : Shape(ys.end() - 2, ys.end());
  const Shape batch = broadcast_batch(Shape(xs.begin(), xs.end() - (x1 ? 1 : 2)),
                                      Shape(ys.begin(), ys.end() - (y1 ? 1 : 2)));
  GradVar dx = ta ? mm(g, Y, dc, tb, true) : mm(g, dc, Y, false, !tb);
  GradVar dy = tb ? mm(g, dc, X, true, ta) : mm(g, X, dc, !ta, false);
  Shape dxs = batch, dys = batch;
  dxs.insert(dxs.end(), xm.begin(), xm.end());
  dys.insert(dys.end(), ym.begin(), ym.end());
  if (y1) {  // y's promoted column dim trails: drop it so reduce_to sums only leading dims
    dy = g.call("squeeze", {dy}, {{"axis", std::vector<int64_t>{-1}}});
    dys.pop_back();
  }
  return {g.reduce_to(dx, x, dxs), g.reduce_to(dy, y, dys)};
}

// y = x @ w.T + b: dx = dy @ w, dw = dy^T @ x over all leading dims, db = dy summed over them.
std::vector<GradVar> dense_bprop(BpropBuilder& g) {
  GradVar x = g.input(0), w = g.input(1), dy = g.dout();
  const Shape ws = g.meta(w).shape;
  const size_t rank = g.meta(x).shape.size();
  GradVar dx = g.call("matmul", {dy, w});
  GradVar dw;
  if (rank == 1) {  // the outer product dy x^T
    dw = mm(g, expand(g, dy, 0), expand(g, x, 0), true, false);
  } else if (rank == 2) {
    dw = mm(g, dy, x, true, false);
  } else if (ws[0] >= 0 && ws[1] >= 0) {  // one matmul over the leading dims merged
    dw = mm(g, g.reshape(dy, {-1, ws[0]}), g.reshape(x, {-1, ws[1]}), true, false);
  } else {  // dynamic sizes (graph mode's kDynamic): no reshape can name both; batched, summed
    std::vector<int64_t> lead(rank - 2);
    for (size_t i = 0; i + 2 < rank; ++i) lead[i] = static_cast<int64_t>(i);
    dw = g.sum(mm(g, dy, x, true, false), lead);
  }
  GradVar db;
  if (g.input(2)) {
    std::vector<int64_t> lead(rank - 1);
    for (size_t i = 0; i + 1 < rank; ++i) lead[i] = static_cast<int64_t>(i);
    db = lead.empty() ? dy : g.sum(dy, lead);
  }
  return {dx, dw, db};
}

}  // namespace

MYCEL_REGISTER_BPROPS(nn_linear) {
  b.add("matmul", matmul_bprop);
  b.add("dense", dense_bprop);
}

}  // namespace mycel
