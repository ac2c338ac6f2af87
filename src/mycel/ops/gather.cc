// Ops indexed by integer tensors: gather, gather_nd, embedding, tensor_scatter_add, scatter_add
// (row gathers and scatters), gather_elements, tensor_scatter_elements (one index per element
// along an axis) and one_hot.
#include <array>
#include <cstring>

#include "mycel/core/dynamic_dims.h"
#include "mycel/kernels/cpu/index.h"
#include "mycel/ops/bprop_complex.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/shape_common.h"

namespace mycel {
namespace {
using detail::attr;
using detail::Ints;
using detail::make_op;
using detail::optional_attr;

// ---- gathers and scatters ----

void check_index_dtype(const InferContext& c, size_t i) {
  DType t = c.in(i).dtype;
  if (t != DType::int32 && t != DType::int64)
    MYCEL_THROW(TypeError, "[", c.op.name, "] input '", input_name(c, i),
                "' must be int32 or int64, got ", dtype_name(t));
}

std::vector<TensorMeta> infer_gather(const InferContext& c) {
  check_index_dtype(c, 1);
  const Shape& p = c.in(0).shape;
  if (p.empty())
    MYCEL_THROW(ValueError, "[gather] input 'params' must have rank >= 1, got shape ()");
  int64_t axis = normalize_axis(c.attrs.get_int("axis"), static_cast<int64_t>(p.size()), "gather");
  Shape out(p.begin(), p.begin() + axis);
  out.insert(out.end(), c.in(1).shape.begin(), c.in(1).shape.end());
  out.insert(out.end(), p.begin() + axis + 1, p.end());
  return {{out, c.in(0).dtype}};
}

void gather_kernel(const KernelContext& c) {
  const Shape& p = c.in(0).shape();
  int64_t axis = normalize_axis(c.attrs.get_int("axis"), c.in(0).ndim(), "gather");
  std::vector<int64_t> rows;
  try {
    rows = cpu::linear_indices(c.in(1), {p[axis]}, true, "gather", axis);
  } catch (const IndexError& e) {  // also in MindSpore's words, which its users match on
    MYCEL_THROW(IndexError, e.what(),
                ". For 'Gather', the 'input_indices' should be in the range [", -p[axis], ", ",
                p[axis], ")");
  }
  int64_t outer = numel(Shape(p.begin(), p.begin() + axis));
  int64_t inner = numel(Shape(p.begin() + axis + 1, p.end()));
  cpu::gather_blocks(c.in(0), rows, outer, inner, c.out(0));
}

// indices (..., K) address the first K dims of x; returns K (0 when K is a dynamic dim).
int64_t index_depth(const InferContext& c, size_t x, size_t idx) {
  check_index_dtype(c, idx);
  const Shape& i = c.in(idx).shape;
  const int64_t nd = static_cast<int64_t>(c.in(x).shape.size());
  if (!i.empty() && is_dynamic_placeholder(i.back())) return 0;  // known when the program runs
  if (i.empty() || i.back() < 1 || i.back() > nd)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input '", input_name(c, idx), "' shape ",
                shape_str(i), ": the last dimension (index depth) must be in [1, ", nd,
                "], the rank of '", input_name(c, x), "' shape ", shape_str(c.in(x).shape));
  return i.back();
}

// The shape gather_nd produces and tensor_scatter_add's updates must have: I[:-1] + X[K:].
Shape nd_result_shape(const Shape& x, const Shape& i, int64_t k) {
  Shape out(i.begin(), i.end() - 1);
  out.insert(out.end(), x.begin() + k, x.end());
  return out;
}

std::vector<TensorMeta> infer_gather_nd(const InferContext& c) {
  int64_t k = index_depth(c, 0, 1);
  if (k == 0)
    MYCEL_THROW(NotSupported, "[gather_nd] input 'indices' shape ", shape_str(c.in(1).shape),
                ": the index depth (last dimension) decides the rank of the result and must be "
                "static in graph mode");
  return {{nd_result_shape(c.in(0).shape, c.in(1).shape, k), c.in(0).dtype}};
}

void gather_nd_kernel(const KernelContext& c) {
  const Shape& p = c.in(0).shape();
  const int64_t k = c.in(1).shape().back();
  auto rows = cpu::linear_indices(c.in(1), Shape(p.begin(), p.begin() + k), true, "gather_nd");
  cpu::gather_blocks(c.in(0), rows, 1, numel(Shape(p.begin() + k, p.end())), c.out(0));
}

void check_updates(const InferContext& c, const Shape& want) {
  check_same_dtype(c, 0, 2);
  if (!shapes_agree(c.in(2).shape, want))
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'updates' shape ", shape_str(c.in(2).shape),
                " must be ", shape_str(want), " for 'input' shape ", shape_str(c.in(0).shape),
                " and 'indices' shape ", shape_str(c.in(1).shape));
}

std::vector<TensorMeta> infer_tensor_scatter_add(const InferContext& c) {
  int64_t k = index_depth(c, 0, 1);
  if (k == 0)
    check_same_dtype(c, 0, 2);  // a dynamic depth: the updates' shape is checked at run time
  else
    check_updates(c, nd_result_shape(c.in(0).shape, c.in(1).shape, k));
  return {c.in(0)};
}

void tensor_scatter_add_kernel(const KernelContext& c) {
  const Shape& x = c.in(0).shape();
  const int64_t k = c.in(1).shape().back();
  auto rows =
      cpu::linear_indices(c.in(1), Shape(x.begin(), x.begin() + k), true, "tensor_scatter_add");
  cpu::scatter_add_blocks(c.in(0), c.in(2), rows, numel(Shape(x.begin() + k, x.end())), c.out(0));
}

std::vector<TensorMeta> infer_scatter_add(const InferContext& c) {
  check_index_dtype(c, 1);
  const Shape& x = c.in(0).shape;
  if (x.empty())
    MYCEL_THROW(ValueError, "[scatter_add] input 'input' must have rank >= 1, got shape ()");
  Shape want = c.in(1).shape;
  want.insert(want.end(), x.begin() + 1, x.end());
  check_updates(c, want);
  return {c.in(0)};
}

void scatter_add_kernel(const KernelContext& c) {
  const Shape& x = c.in(0).shape();
  auto rows = cpu::linear_indices(c.in(1), {x[0]}, true, "scatter_add");
  cpu::scatter_add_blocks(c.in(0), c.in(2), rows, numel(Shape(x.begin() + 1, x.end())), c.out(0));
}

std::vector<TensorMeta> infer_embedding(const InferContext& c) {
  check_index_dtype(c, 0);
  const Shape& w = c.in(1).shape;
  if (w.size() != 2)
    MYCEL_THROW(ShapeError,
                "[embedding] input 'weight' must be 2-d (num_embeddings, dim), got shape ",
                shape_str(w));
  if (c.attrs.has("padding_idx")) {
    int64_t p = c.attrs.get_int("padding_idx");
    if (p < -w[0] || p >= w[0])
      MYCEL_THROW(ValueError, "[embedding] padding_idx ", p, " is out of range for ", w[0],
                  " embeddings");
  }
  Shape out = c.in(0).shape;
  out.push_back(w[1]);
  return {{out, c.in(1).dtype}};
}

void embedding_kernel(const KernelContext& c) {
  const Shape& w = c.in(1).shape();
  auto rows = cpu::linear_indices(c.in(0), {w[0]}, false, "embedding");
  cpu::gather_blocks(c.in(1), rows, 1, w[1], c.out(0));
}

// ---- gather_elements, tensor_scatter_elements: one index per element, along one axis ----

// Checks that `idx` (input i) has the rank of `x` (input 0) and sizes off `axis` no larger than
// x's (torch.gather's and MindSpore's rule: a smaller index addresses x's leading block); returns
// the normalized axis.
int64_t check_along_axis(const InferContext& c, size_t i, int64_t axis, const char* axis_name) {
  check_index_dtype(c, i);
  const Shape& x = c.in(0).shape;
  const Shape& idx = c.in(i).shape;
  if (x.empty())
    MYCEL_THROW(ValueError, "[", c.op.name, "] input '", input_name(c, 0), "' must have rank >= 1");
  int64_t a = normalize_axis(axis, static_cast<int64_t>(x.size()), c.op.name.c_str(), axis_name);
  bool ok = idx.size() == x.size();
  for (size_t d = 0; ok && d < x.size(); ++d)
    ok = static_cast<int64_t>(d) == a || idx[d] <= x[d] || dims_agree(idx[d], x[d]);
  if (!ok)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input '", input_name(c, i), "' shape ",
                shape_str(idx), " must have the rank of input '", input_name(c, 0), "' shape ",
                shape_str(x), " and no larger sizes except at ", axis_name, " ", a);
  return a;
}

// Whether idx covers x off the axis (the fast (outer, n|m, inner) kernels apply).
bool same_off_axis(const Shape& x, const Shape& idx, int64_t a) {
  for (size_t d = 0; d < x.size(); ++d)
    if (static_cast<int64_t>(d) != a && idx[d] != x[d]) return false;
  return true;
}

// A smaller index: per index element, the offset in x it addresses (its own position off the
// axis, its value `along[k]`, normalized, at the axis).
std::vector<int64_t> along_axis_offsets(const Shape& x, const Shape& idx, int64_t a,
                                        const std::vector<int64_t>& along) {
  auto xs = contiguous_strides(x);
  std::vector<int64_t> off(along.size());
  std::vector<int64_t> pos(idx.size(), 0);
  for (size_t k = 0; k < along.size(); ++k) {
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      o += (static_cast<int64_t>(d) == a ? along[k] : pos[d]) * xs[d];
    off[k] = o;
    for (int64_t d = static_cast<int64_t>(idx.size()) - 1; d >= 0 && ++pos[d] == idx[d]; --d)
      pos[d] = 0;
  }
  return off;
}

std::vector<TensorMeta> infer_gather_elements(const InferContext& c) {
  check_along_axis(c, 1, c.attrs.get_int("dim"), "dim");
  return {{c.in(1).shape, c.in(0).dtype}};
}

// (outer, n, m, inner) of an along-axis op: x viewed as (outer, n, inner), indices as (outer, m,
// inner).
std::array<int64_t, 4> along_axis_dims(const Shape& x, const Shape& idx, int64_t a) {
  return {numel(Shape(x.begin(), x.begin() + a)), x[a], idx[a],
          numel(Shape(x.begin() + a + 1, x.end()))};
}

void gather_elements_kernel(const KernelContext& c) {
  const Shape& x = c.in(0).shape();
  int64_t a = normalize_axis(c.attrs.get_int("dim"), c.in(0).ndim(), "gather_elements");
  auto [outer, n, m, inner] = along_axis_dims(x, c.in(1).shape(), a);
  auto idx = cpu::linear_indices(c.in(1), {n}, true, "gather_elements", a);
  if (same_off_axis(x, c.in(1).shape(), a))
    return cpu::gather_along_axis(c.in(0), idx, outer, n, m, inner, c.out(0));
  // out[k] = x[offset k]: single-element rows.
  cpu::gather_blocks(c.in(0), along_axis_offsets(x, c.in(1).shape(), a, idx), 1, 1, c.out(0));
}

std::vector<TensorMeta> infer_tensor_scatter_elements(const InferContext& c) {
  check_along_axis(c, 1, c.attrs.get_int("axis"), "axis");
  const std::string& red = c.attrs.get_str("reduction");
  if (red != "none" && red != "add")
    MYCEL_THROW(ValueError, "[tensor_scatter_elements] reduction must be 'none' or 'add', got '",
                red, "'");
  check_updates(c, c.in(1).shape);
  return {c.in(0)};
}

void tensor_scatter_elements_kernel(const KernelContext& c) {
  const Shape& x = c.in(0).shape();
  int64_t a = normalize_axis(c.attrs.get_int("axis"), c.in(0).ndim(), "tensor_scatter_elements");
  auto [outer, n, m, inner] = along_axis_dims(x, c.in(1).shape(), a);
  auto idx = cpu::linear_indices(c.in(1), {n}, true, "tensor_scatter_elements", a);
  const bool add = c.attrs.get_str("reduction") == "add";
  if (same_off_axis(x, c.in(1).shape(), a))
    return cpu::scatter_along_axis(c.in(0), c.in(2), idx, outer, n, m, inner, add, c.out(0));
  auto off = along_axis_offsets(x, c.in(1).shape(), a, idx);
  if (add) return cpu::scatter_add_blocks(c.in(0), c.in(2), off, 1, c.out(0));
  // Writes in order (the last of repeated targets wins), element bytes moved as they are.
  if (c.out(0).nbytes()) std::memcpy(c.out(0).data(), c.in(0).data(), c.out(0).nbytes());
  const size_t isz = itemsize(c.out(0).dtype());
  char* y = static_cast<char*>(c.out(0).data());
  const char* u = static_cast<const char*>(c.in(2).data());
  for (size_t k = 0; k < off.size(); ++k) std::memcpy(y + off[k] * isz, u + k * isz, isz);
}

// ---- one_hot ----

std::vector<TensorMeta> infer_one_hot(const InferContext& c) {
  // Indices of any integer type (MindSpore's OneHot takes uint8 and the wider unsigned ones too).
  const DType it = c.in(0).dtype;
  if (!is_integral(it))
    MYCEL_THROW(TypeError, "[one_hot] input 'indices' must be an integer tensor (int8 .. int64, ",
                "uint8 .. uint64), got ", dtype_name(it));
  const DType ot = c.attrs.get_dtype("dtype");
  if (ot == DType::bool_)
    MYCEL_THROW(TypeError, "[one_hot] attribute 'dtype' must be a numeric type, got bool");
  const int64_t depth = c.attrs.get_int("depth");
  if (depth < 0) MYCEL_THROW(ValueError, "[one_hot] depth must be >= 0, got ", depth);
  Shape out = c.in(0).shape;
  int64_t axis = c.attrs.get_int("axis");
  axis = axis == -1 ? static_cast<int64_t>(out.size())
                    : normalize_axis(axis, static_cast<int64_t>(out.size()) + 1, "one_hot");
  out.insert(out.begin() + axis, depth);
  detail::check_size(out, "one_hot");
  return {{out, ot}};
}

void one_hot_kernel(const KernelContext& c) {
  const Shape& s = c.in(0).shape();
  int64_t axis = c.attrs.get_int("axis");
  axis =
      axis == -1 ? static_cast<int64_t>(s.size()) : (axis < 0 ? axis + c.in(0).ndim() + 1 : axis);
  // The products over the dims before and after the new axis (no Shape copies: a warm graph-mode
  // step allocates nothing).
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) (d < axis ? outer : inner) *= s[d];
  cpu::one_hot(c.in(0), c.out(0), outer, c.attrs.get_int("depth"), inner,
               c.attrs.get_float("on_value"), c.attrs.get_float("off_value"));
}

// Sharding: indices split freely and params on every dim but the gathered one (a row split of
// the table would need masked lookups and an AllReduce; not supported).
shard::LabelSpec gather_spec(const shard::ShardContext& c) {
  const Shape& ps = c.in(0).shape;
  const size_t axis = static_cast<size_t>(
      normalize_axis(c.attrs.get_int("axis"), static_cast<int64_t>(ps.size()), "gather"));
  const std::string p = shard::labels(ps.size(), 'a'), i = shard::labels(c.in(1).shape.size(), 'p');
  shard::LabelSpec sp;
  sp.inputs = {p, i};
  sp.outputs = {p.substr(0, axis) + i + p.substr(axis + 1)};
  sp.fixed = p.substr(axis, 1);
  return sp;
}

shard::LabelSpec embedding_spec(const shard::ShardContext& c) {
  const std::string i = shard::labels(c.in(0).shape.size(), 'p');
  shard::LabelSpec sp;
  sp.inputs = {i, "ve"};
  sp.outputs = {i + "e"};
  sp.fixed = "v";
  return sp;
}

// The new one-hot dim ('z') is not split.
shard::LabelSpec one_hot_spec(const shard::ShardContext& c) {
  const std::string i = shard::labels(c.in(0).shape.size(), 'a');
  const size_t axis = static_cast<size_t>(
      normalize_axis(c.attrs.get_int("axis"), static_cast<int64_t>(i.size()) + 1, "one_hot"));
  shard::LabelSpec sp;
  sp.inputs = {i};
  sp.outputs = {i.substr(0, axis) + "z" + i.substr(axis)};
  return sp;
}

OpDef with_rule(OpDef d, shard::LabelSpec (*spec)(const shard::ShardContext&)) {
  shard::set_label_rule(d, spec);
  return d;
}

}  // namespace

MYCEL_REGISTER_OPS(gather) {
  const std::vector<DType> idx = {DType::int32, DType::int64};
  const AttrValue zero = int64_t{0};
  const std::vector<DType> int_indices = {DType::int8,   DType::int16, DType::int32,
                                          DType::int64,  DType::uint8, DType::uint16,
                                          DType::uint32, DType::uint64};
  // Gathers move bytes and scatters add in each type's own arithmetic: every dtype (but bool for
  // the adds).
  std::vector<DType> numeric_ext = every_dtype();
  numeric_ext.erase(numeric_ext.begin());
  r.add(with_rule(make_op("gather", "Gather",
                          "Takes slices of params along `axis` at integer indices (numpy.take).",
                          {{"params"}, {"indices"}}, {attr("axis", AttrKind::kInt, zero, {"dim"})},
                          infer_gather, gather_kernel, every_dtype(), "bprop"),
                  gather_spec));
  r.add(make_op("gather_nd", "GatherNd", "params[indices[..., 0], ..., indices[..., K-1]].",
                {{"params"}, {"indices"}}, {}, infer_gather_nd, gather_nd_kernel, every_dtype(),
                "bprop"));
  r.add(make_op("tensor_scatter_add", "TensorScatterAdd",
                "input with updates added at index rows indices[..., :K] (duplicates accumulate).",
                {{"input"}, {"indices"}, {"updates"}}, {}, infer_tensor_scatter_add,
                tensor_scatter_add_kernel, numeric_ext, "bprop"));
  r.add(make_op(
      "scatter_add", "ScatterAdd",
      "input with updates added to rows input[indices] along axis 0 (duplicates accumulate).",
      {{"input"}, {"indices"}, {"updates"}}, {}, infer_scatter_add, scatter_add_kernel, numeric_ext,
      "bprop"));
  r.add(make_op(
      "gather_elements", "GatherD",
      "out[..., j, ...] = input[..., index[..., j, ...], ...] along `dim` (index has input's "
      "rank and sizes off dim; torch.gather).",
      {{"input"}, {"index"}}, {attr("dim", AttrKind::kInt, zero)}, infer_gather_elements,
      gather_elements_kernel, every_dtype(), "bprop"));
  r.add(make_op(
      "tensor_scatter_elements", "TensorScatterElements",
      "input with updates written (reduction 'none') or added ('add') at input[..., "
      "indices[..., j, ...], ...] along `axis`.",
      {{"input"}, {"indices"}, {"updates"}},
      {attr("axis", AttrKind::kInt, zero), attr("reduction", AttrKind::kStr, std::string("none"))},
      infer_tensor_scatter_elements, tensor_scatter_elements_kernel, every_dtype(), "bprop"));
  OpDef emb =
      make_op("embedding", "EmbeddingLookup", "Rows of weight at input_ids: weight[input_ids].",
              {{"input_ids"}, {"weight"}}, {optional_attr("padding_idx", AttrKind::kInt)},
              infer_embedding, embedding_kernel, all_dtypes(), "bprop");
  emb.dtype_input = 1;
  shard::set_label_rule(emb, embedding_spec);
  r.add(std::move(emb));
  r.add(with_rule(
      make_op("one_hot", "OneHot", "One-hot encoding of integer indices along a new `axis`.",
              {{"indices"}},
              {attr("depth", AttrKind::kInt, {}), attr("on_value", AttrKind::kFloat, 1.0),
               attr("off_value", AttrKind::kFloat, 0.0), attr("axis", AttrKind::kInt, int64_t{-1}),
               attr("dtype", AttrKind::kDType, DType::float32)},
              infer_one_hot, one_hot_kernel, int_indices, "none"),
      one_hot_spec));
}

// Backward rules: gathers go back through scatter-adds into zeros shaped like the forward input
// (no concrete sizes needed), scatters through gathers; index inputs get no gradient.
MYCEL_REGISTER_BPROPS(gather) {
  using bprop::is_diff;  // float or complex: gathers and scatters are linear, the same rule
  b.add("gather", [](BpropBuilder& g) -> std::vector<GradVar> {
    // Scatter-add dout's index dims into `axis` of zeros like params: scatter_add works on axis 0,
    // so move `axis` of params (and the index dims of dout) to the front and back again.
    GradVar params = g.input(0), indices = g.input(1);
    if (!is_diff(g, params)) return {GradVar(), GradVar()};
    const int64_t r = static_cast<int64_t>(g.meta(params).shape.size());
    const int64_t q = static_cast<int64_t>(g.meta(indices).shape.size());
    const int64_t a = normalize_axis(g.attrs().get_int("axis"), r, "gather");
    GradVar zeros = g.zeros_like(params), dout = g.dout();
    if (a == 0) return {g.call("scatter_add", {zeros, indices, dout}), GradVar()};
    Ints perm_p = {a}, perm_d;
    for (int64_t d = 0; d < r; ++d)
      if (d != a) perm_p.push_back(d);
    for (int64_t d = 0; d < q; ++d) perm_d.push_back(a + d);
    for (int64_t d = 0; d < a; ++d) perm_d.push_back(d);
    for (int64_t d = a + q; d < r + q - 1; ++d) perm_d.push_back(d);
    Ints back(r);
    for (int64_t d = 0; d < r; ++d) back[perm_p[d]] = d;
    GradVar acc = g.call("scatter_add", {g.call("transpose", {zeros}, {{"perm", perm_p}}), indices,
                                         g.call("transpose", {dout}, {{"perm", perm_d}})});
    return {g.call("transpose", {acc}, {{"perm", back}}), GradVar()};
  });
  b.add("gather_nd", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar params = g.input(0);
    if (!is_diff(g, params)) return {GradVar(), GradVar()};
    return {g.call("tensor_scatter_add", {g.zeros_like(params), g.input(1), g.dout()}), GradVar()};
  });
  b.add("tensor_scatter_add", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_diff(g, g.input(0))) return {GradVar(), GradVar(), GradVar()};
    return {g.dout(), GradVar(), g.call("gather_nd", {g.dout(), g.input(1)})};
  });
  b.add("scatter_add", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_diff(g, g.input(0))) return {GradVar(), GradVar(), GradVar()};
    return {g.dout(), GradVar(), g.call("gather", {g.dout(), g.input(1)}, {{"axis", int64_t{0}}})};
  });
  b.add("gather_elements", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar x = g.input(0);
    if (!is_diff(g, x)) return {GradVar(), GradVar()};
    return {g.call("tensor_scatter_elements", {g.zeros_like(x), g.input(1), g.dout()},
                   {{"axis", g.attrs().get_int("dim")}, {"reduction", std::string("add")}}),
            GradVar()};
  });
  b.add("tensor_scatter_elements", [](BpropBuilder& g) -> std::vector<GradVar> {
    // 'add': input passes dout through, each update gets dout where it landed. 'none': written
    // positions lose input's sensitivity; with repeated indices only the last write counts, but
    // every update gets dout at its position (exact for distinct indices).
    if (!is_diff(g, g.input(0))) return {GradVar(), GradVar(), GradVar()};
    const int64_t axis = g.attrs().get_int("axis");
    GradVar dupdates = g.call("gather_elements", {g.dout(), g.input(1)}, {{"dim", axis}});
    if (g.attrs().get_str("reduction") == "add") return {g.dout(), GradVar(), dupdates};
    GradVar dinput = g.call("tensor_scatter_elements",
                            {g.dout(), g.input(1), g.zeros_like(g.input(2))}, {{"axis", axis}});
    return {dinput, GradVar(), dupdates};
  });
  b.add("embedding", [](BpropBuilder& g) -> std::vector<GradVar> {
    // Rows of weight accumulate the sensitivities of their lookups; the padding_idx row gets none.
    GradVar ids = g.input(0), weight = g.input(1);
    if (!is_diff(g, weight)) return {GradVar(), GradVar()};
    GradVar dout = g.dout();
    if (g.attrs().has("padding_idx")) {
      int64_t p = g.attrs().get_int("padding_idx");
      if (p < 0) p += g.meta(weight).shape[0];
      GradVar keep =
          g.call("not_equal", {ids, g.scalar(static_cast<double>(p), g.meta(ids).dtype)});
      keep = g.call("expand_dims", {bprop::as_mask(g, keep, g.meta(weight).dtype)},
                    {{"axis", int64_t{-1}}});
      dout = g.mul(dout, keep);
    }
    return {GradVar(), g.call("scatter_add", {g.zeros_like(weight), ids, dout})};
  });
}

}  // namespace mycel
