// Indexing ops: slice, strided_slice, pad (offset-table gathers), gather, gather_nd, embedding,
// tensor_scatter_add, scatter_add (index gathers and scatters) and one_hot.
#include <algorithm>
#include <array>

#include "mycel/kernels/cpu/index.h"
#include "mycel/kernels/cpu/shape.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/shape_common.h"

namespace mycel {
namespace {
using detail::Ints;
using detail::attr;
using detail::make_op;
using detail::optional_attr;

// ---- slice ----

std::vector<TensorMeta> infer_slice(const InferContext& c) {
  const Shape& s = c.in(0).shape;
  const Ints& begin = c.attrs.get_ints("begin");
  const Ints& size = c.attrs.get_ints("size");
  if (begin.size() != s.size() || size.size() != s.size())
    MYCEL_THROW(ValueError, "[slice] begin ", shape_str(begin), " and size ", shape_str(size),
                " must have one entry per dimension of the input shape ", shape_str(s));
  Shape out(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    int64_t len = size[d] == -1 ? s[d] - begin[d] : size[d];
    if (begin[d] < 0 || begin[d] > s[d] || len < 0 || len > s[d] - begin[d])
      MYCEL_THROW(ValueError, "[slice] begin ", shape_str(begin), " and size ", shape_str(size),
                  " are out of range for shape ", shape_str(s), " at dimension ", d);
    out[d] = len;
  }
  return {{out, c.in(0).dtype}};
}

void slice_kernel(const KernelContext& c) {
  const Ints& begin = c.attrs.get_ints("begin");
  auto st = contiguous_strides(c.in(0).shape());
  cpu::OffsetTables t;
  for (size_t d = 0; d < st.size(); ++d)
    t.push_back(cpu::strided_table(c.out(0).shape()[d], begin[d], 1, st[d]));
  cpu::gather_offsets(c.in(0), c.out(0), t);
}

// ---- strided_slice (MindSpore/TensorFlow semantics, masks included) ----

struct SliceDim {
  int64_t in_dim;  // -1: a new axis of size 1
  int64_t start, step, len;
};
struct SlicePlan {
  std::vector<SliceDim> dims;  // one per output dimension
  int64_t base = 0;            // element offset of the shrunk (integer-indexed) dimensions
};

int64_t ceil_div(int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; }

SlicePlan plan_strided_slice(const Shape& s, const Attrs& a) {
  const Ints& begin = a.get_ints("begin");
  const Ints& end = a.get_ints("end");
  Ints strides = a.get_ints("strides");
  const size_t m = begin.size();
  if (strides.empty()) strides.assign(m, 1);
  if (end.size() != m || strides.size() != m)
    MYCEL_THROW(ValueError, "[strided_slice] begin ", shape_str(begin), ", end ", shape_str(end),
                " and strides ", shape_str(strides), " must have the same length");
  if (m > 62) MYCEL_THROW(ValueError, "[strided_slice] at most 62 slice entries are supported");
  auto bit = [&](const char* mask, size_t i) { return (a.get_int(mask) >> i) & 1; };
  const int64_t ellipsis = a.get_int("ellipsis_mask");
  if (ellipsis & (ellipsis - 1))
    MYCEL_THROW(ValueError, "[strided_slice] ellipsis_mask ", ellipsis, " has more than one bit set");
  const int64_t nd = static_cast<int64_t>(s.size());
  int64_t real = 0;  // spec entries that consume an input dimension
  for (size_t i = 0; i < m; ++i)
    if (!bit("ellipsis_mask", i) && !bit("new_axis_mask", i)) ++real;
  if (real > nd)
    MYCEL_THROW(IndexError, "[strided_slice] too many indices: ", real, " for a tensor of shape ",
                shape_str(s));
  auto strides_in = contiguous_strides(s);
  SlicePlan plan;
  int64_t d = 0;
  auto full = [&](int64_t dim) { plan.dims.push_back({dim, 0, 1, s[dim]}); };
  for (size_t i = 0; i < m; ++i) {
    if (bit("ellipsis_mask", i)) {
      for (int64_t k = 0; k < nd - real; ++k) full(d++);
      continue;
    }
    if (bit("new_axis_mask", i)) {
      plan.dims.push_back({-1, 0, 1, 1});
      continue;
    }
    const int64_t n = s[d];
    if (bit("shrink_axis_mask", i)) {
      int64_t idx = bit("begin_mask", i) ? 0 : begin[i];
      if (idx < -n || idx >= n)
        MYCEL_THROW(IndexError, "[strided_slice] index ", idx, " is out of range for axis ", d,
                    " with size ", n);
      plan.base += (idx < 0 ? idx + n : idx) * strides_in[d];
      ++d;
      continue;
    }
    const int64_t st = strides[i];
    if (st == 0) MYCEL_THROW(ValueError, "[strided_slice] strides[", i, "] must be non-zero");
    const int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? n : n - 1;
    auto norm = [&](int64_t v) { return std::clamp(v < 0 ? v + n : v, lo, hi); };
    int64_t b = bit("begin_mask", i) ? (st > 0 ? 0 : n - 1) : norm(begin[i]);
    int64_t e = bit("end_mask", i) ? (st > 0 ? n : -1) : norm(end[i]);
    int64_t len = st > 0 ? ceil_div(e - b, st) : ceil_div(b - e, -st);
    plan.dims.push_back({d, b, st, len});
    ++d;
  }
  while (d < nd) full(d++);  // an implicit trailing ellipsis
  return plan;
}

std::vector<TensorMeta> infer_strided_slice(const InferContext& c) {
  SlicePlan p = plan_strided_slice(c.in(0).shape, c.attrs);
  Shape out;
  for (const SliceDim& sd : p.dims) out.push_back(sd.len);
  return {{out, c.in(0).dtype}};
}

// Per output dimension, the input offsets it reads (and the base offset of shrunk dims).
cpu::OffsetTables strided_slice_tables(const Shape& in, const Attrs& a, int64_t* base) {
  SlicePlan p = plan_strided_slice(in, a);
  auto st = contiguous_strides(in);
  cpu::OffsetTables t;
  for (const SliceDim& sd : p.dims)
    t.push_back(sd.in_dim < 0 ? std::vector<int64_t>{0}
                              : cpu::strided_table(sd.len, sd.start, sd.step, st[sd.in_dim]));
  *base = p.base;
  return t;
}

void strided_slice_kernel(const KernelContext& c) {
  int64_t base = 0;
  auto t = strided_slice_tables(c.in(0).shape(), c.attrs, &base);
  cpu::gather_offsets(c.in(0), c.out(0), t, base);
}

// The backward op's inputs: the output sensitivity dy and the forward input `like` (for its
// shape only); dy must have the shape the forward op gave.
void check_grad_input(const InferContext& c, const Shape& want) {
  if (c.in(0).shape != want)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'dy' has shape ", shape_str(c.in(0).shape),
                ", expected ", shape_str(want), " (the forward result for input 'like' of shape ",
                shape_str(c.in(1).shape), ")");
}

// strided_slice_grad(dy, like): zeros shaped like `like`, with dy written where the slice read.
std::vector<TensorMeta> infer_strided_slice_grad(const InferContext& c) {
  const std::vector<const TensorMeta*> like = {c.inputs[1]};
  check_grad_input(c, infer_strided_slice(InferContext{c.op, like, c.attrs})[0].shape);
  return {{c.in(1).shape, c.in(0).dtype}};
}

void strided_slice_grad_kernel(const KernelContext& c) {
  int64_t base = 0;
  auto t = strided_slice_tables(c.in(1).shape(), c.attrs, &base);
  cpu::scatter_add_offsets(c.in(0), c.out(0), t, base);
}

// ---- pad ----

std::vector<TensorMeta> infer_pad(const InferContext& c) {
  const Shape& s = c.in(0).shape;
  const Ints& p = c.attrs.get_ints("paddings");
  const std::string& mode = c.attrs.get_str("mode");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    MYCEL_THROW(ValueError, "[pad] mode must be 'constant', 'reflect' or 'edge', got '", mode, "'");
  if (p.size() != 2 * s.size())
    MYCEL_THROW(ValueError, "[pad] paddings ", shape_str(p), " must have 2 entries (before, after) "
                "per dimension of the input shape ", shape_str(s), ", flattened: expected ",
                2 * s.size(), ", got ", p.size());
  Shape out(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    int64_t b = p[2 * d], a = p[2 * d + 1], n = s[d];
    const int64_t kMax = int64_t{1} << 48;
    if (b > kMax || a > kMax)
      MYCEL_THROW(ValueError, "[pad] paddings (", b, ", ", a, ") for dimension ", d, " are too large");
    out[d] = n + b + a;
    if (b < -n || a < -n || out[d] < 0)
      MYCEL_THROW(ValueError, "[pad] paddings (", b, ", ", a, ") for dimension ", d, " of shape ",
                  shape_str(s), " remove more than its ", n, " elements");
    if (mode == "reflect" && (b > n - 1 || a > n - 1))
      MYCEL_THROW(ValueError, "[pad] reflect paddings (", b, ", ", a, ") for dimension ", d,
                  " must be smaller than its size ", n);
    if (mode == "edge" && n == 0 && (b > 0 || a > 0))
      MYCEL_THROW(ValueError, "[pad] edge mode cannot pad the empty dimension ", d);
  }
  detail::check_size(out, "pad");
  return {{out, c.in(0).dtype}};
}

// Per output dimension, the input offsets it reads (kPadOffset in constant padding).
cpu::OffsetTables pad_tables(const Shape& s, const Shape& out, const Attrs& a) {
  const Ints& p = a.get_ints("paddings");
  const std::string& mode = a.get_str("mode");
  auto st = contiguous_strides(s);
  cpu::OffsetTables t;
  for (size_t d = 0; d < s.size(); ++d) {
    const int64_t n = s[d], len = out[d];
    std::vector<int64_t> tab(len);
    for (int64_t i = 0; i < len; ++i) {
      int64_t j = i - p[2 * d];
      if (j < 0 || j >= n) {
        if (mode == "constant") { tab[i] = cpu::kPadOffset; continue; }
        if (mode == "reflect") j = j < 0 ? -j : 2 * (n - 1) - j;
        else j = std::clamp<int64_t>(j, 0, n - 1);
      }
      tab[i] = j * st[d];
    }
    t.push_back(std::move(tab));
  }
  return t;
}

void pad_kernel(const KernelContext& c) {
  auto t = pad_tables(c.in(0).shape(), c.out(0).shape(), c.attrs);
  cpu::gather_offsets(c.in(0), c.out(0), t, 0, c.attrs.get_float("value"));
}

// pad_grad(dy, like): each input element gets the sum of dy over the outputs that copied it.
std::vector<TensorMeta> infer_pad_grad(const InferContext& c) {
  const std::vector<const TensorMeta*> like = {c.inputs[1]};
  check_grad_input(c, infer_pad(InferContext{c.op, like, c.attrs})[0].shape);
  return {{c.in(1).shape, c.in(0).dtype}};
}

void pad_grad_kernel(const KernelContext& c) {
  auto t = pad_tables(c.in(1).shape(), c.in(0).shape(), c.attrs);
  cpu::scatter_add_offsets(c.in(0), c.out(0), t);
}

// ---- gathers and scatters ----

void check_index_dtype(const InferContext& c, size_t i) {
  DType t = c.in(i).dtype;
  if (t != DType::int32 && t != DType::int64)
    MYCEL_THROW(TypeError, "[", c.op.name, "] input '", input_name(c, i), "' must be int32 or int64, got ",
                dtype_name(t));
}

std::vector<TensorMeta> infer_gather(const InferContext& c) {
  check_index_dtype(c, 1);
  const Shape& p = c.in(0).shape;
  if (p.empty()) MYCEL_THROW(ValueError, "[gather] input 'params' must have rank >= 1, got shape ()");
  int64_t axis = normalize_axis(c.attrs.get_int("axis"), static_cast<int64_t>(p.size()), "gather");
  Shape out(p.begin(), p.begin() + axis);
  out.insert(out.end(), c.in(1).shape.begin(), c.in(1).shape.end());
  out.insert(out.end(), p.begin() + axis + 1, p.end());
  return {{out, c.in(0).dtype}};
}

void gather_kernel(const KernelContext& c) {
  const Shape& p = c.in(0).shape();
  int64_t axis = normalize_axis(c.attrs.get_int("axis"), c.in(0).ndim(), "gather");
  auto rows = cpu::linear_indices(c.in(1), {p[axis]}, true, "gather", axis);
  int64_t outer = numel(Shape(p.begin(), p.begin() + axis));
  int64_t inner = numel(Shape(p.begin() + axis + 1, p.end()));
  cpu::gather_blocks(c.in(0), rows, outer, inner, c.out(0));
}

// indices (..., K) address the first K dims of x; returns K.
int64_t index_depth(const InferContext& c, size_t x, size_t idx) {
  check_index_dtype(c, idx);
  const Shape& i = c.in(idx).shape;
  const int64_t nd = static_cast<int64_t>(c.in(x).shape.size());
  if (i.empty() || i.back() < 1 || i.back() > nd)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input '", input_name(c, idx), "' shape ", shape_str(i),
                ": the last dimension (index depth) must be in [1, ", nd, "], the rank of '",
                input_name(c, x), "' shape ", shape_str(c.in(x).shape));
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
  if (c.in(2).shape != want)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'updates' shape ", shape_str(c.in(2).shape),
                " must be ", shape_str(want), " for 'input' shape ", shape_str(c.in(0).shape),
                " and 'indices' shape ", shape_str(c.in(1).shape));
}

std::vector<TensorMeta> infer_tensor_scatter_add(const InferContext& c) {
  int64_t k = index_depth(c, 0, 1);
  check_updates(c, nd_result_shape(c.in(0).shape, c.in(1).shape, k));
  return {c.in(0)};
}

void tensor_scatter_add_kernel(const KernelContext& c) {
  const Shape& x = c.in(0).shape();
  const int64_t k = c.in(1).shape().back();
  auto rows = cpu::linear_indices(c.in(1), Shape(x.begin(), x.begin() + k), true, "tensor_scatter_add");
  cpu::scatter_add_blocks(c.in(0), c.in(2), rows, numel(Shape(x.begin() + k, x.end())), c.out(0));
}

std::vector<TensorMeta> infer_scatter_add(const InferContext& c) {
  check_index_dtype(c, 1);
  const Shape& x = c.in(0).shape;
  if (x.empty()) MYCEL_THROW(ValueError, "[scatter_add] input 'input' must have rank >= 1, got shape ()");
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
    MYCEL_THROW(ShapeError, "[embedding] input 'weight' must be 2-d (num_embeddings, dim), got shape ",
                shape_str(w));
  if (c.attrs.has("padding_idx")) {
    int64_t p = c.attrs.get_int("padding_idx");
    if (p < -w[0] || p >= w[0])
      MYCEL_THROW(ValueError, "[embedding] padding_idx ", p, " is out of range for ", w[0], " embeddings");
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

// Checks that `idx` (input i) has the rank of `x` (input 0) and its sizes off `axis`; returns the
// normalized axis.
int64_t check_along_axis(const InferContext& c, size_t i, int64_t axis, const char* axis_name) {
  check_index_dtype(c, i);
  const Shape& x = c.in(0).shape;
  const Shape& idx = c.in(i).shape;
  if (x.empty()) MYCEL_THROW(ValueError, "[", c.op.name, "] input '", input_name(c, 0), "' must have rank >= 1");
  int64_t a = normalize_axis(axis, static_cast<int64_t>(x.size()), c.op.name.c_str(), axis_name);
  bool ok = idx.size() == x.size();
  for (size_t d = 0; ok && d < x.size(); ++d) ok = static_cast<int64_t>(d) == a || idx[d] == x[d];
  if (!ok)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input '", input_name(c, i), "' shape ", shape_str(idx),
                " must match input '", input_name(c, 0), "' shape ", shape_str(x), " except at ",
                axis_name, " ", a);
  return a;
}

std::vector<TensorMeta> infer_gather_elements(const InferContext& c) {
  check_along_axis(c, 1, c.attrs.get_int("dim"), "dim");
  return {{c.in(1).shape, c.in(0).dtype}};
}

// (outer, n, m, inner) of an along-axis op: x viewed as (outer, n, inner), indices as (outer, m, inner).
std::array<int64_t, 4> along_axis_dims(const Shape& x, const Shape& idx, int64_t a) {
  return {numel(Shape(x.begin(), x.begin() + a)), x[a], idx[a], numel(Shape(x.begin() + a + 1, x.end()))};
}

void gather_elements_kernel(const KernelContext& c) {
  const Shape& x = c.in(0).shape();
  int64_t a = normalize_axis(c.attrs.get_int("dim"), c.in(0).ndim(), "gather_elements");
  auto [outer, n, m, inner] = along_axis_dims(x, c.in(1).shape(), a);
  auto idx = cpu::linear_indices(c.in(1), {n}, true, "gather_elements", a);
  cpu::gather_along_axis(c.in(0), idx, outer, n, m, inner, c.out(0));
}

std::vector<TensorMeta> infer_tensor_scatter_elements(const InferContext& c) {
  check_along_axis(c, 1, c.attrs.get_int("axis"), "axis");
  const std::string& red = c.attrs.get_str("reduction");
  if (red != "none" && red != "add")
    MYCEL_THROW(ValueError, "[tensor_scatter_elements] reduction must be 'none' or 'add', got '", red, "'");
  check_updates(c, c.in(1).shape);
  return {c.in(0)};
}

void tensor_scatter_elements_kernel(const KernelContext& c) {
  const Shape& x = c.in(0).shape();
  int64_t a = normalize_axis(c.attrs.get_int("axis"), c.in(0).ndim(), "tensor_scatter_elements");
  auto [outer, n, m, inner] = along_axis_dims(x, c.in(1).shape(), a);
  auto idx = cpu::linear_indices(c.in(1), {n}, true, "tensor_scatter_elements", a);
  cpu::scatter_along_axis(c.in(0), c.in(2), idx, outer, n, m, inner,
                          c.attrs.get_str("reduction") == "add", c.out(0));
}

// ---- one_hot ----

std::vector<TensorMeta> infer_one_hot(const InferContext& c) {
  check_index_dtype(c, 0);
  const int64_t depth = c.attrs.get_int("depth");
  if (depth < 0) MYCEL_THROW(ValueError, "[one_hot] depth must be >= 0, got ", depth);
  Shape out = c.in(0).shape;
  int64_t axis = c.attrs.get_int("axis");
  axis = axis == -1 ? static_cast<int64_t>(out.size())
                    : normalize_axis(axis, static_cast<int64_t>(out.size()) + 1, "one_hot");
  out.insert(out.begin() + axis, depth);
  detail::check_size(out, "one_hot");
  return {{out, c.attrs.get_dtype("dtype")}};
}

void one_hot_kernel(const KernelContext& c) {
  const Shape& s = c.in(0).shape();
  int64_t axis = c.attrs.get_int("axis");
  axis = axis == -1 ? static_cast<int64_t>(s.size()) : (axis < 0 ? axis + c.in(0).ndim() + 1 : axis);
  cpu::one_hot(c.in(0), c.out(0), numel(Shape(s.begin(), s.begin() + axis)), c.attrs.get_int("depth"),
               numel(Shape(s.begin() + axis, s.end())), c.attrs.get_float("on_value"),
               c.attrs.get_float("off_value"));
}

}  // namespace

MYCEL_REGISTER_OPS(index) {
  const std::vector<DType> idx = {DType::int32, DType::int64};
  const AttrValue zero = int64_t{0};
  r.add(make_op("slice", "Slice", "x[begin : begin + size] per dimension (size -1: to the end).",
                {{"x"}}, {attr("begin", AttrKind::kInts, {}), attr("size", AttrKind::kInts, {})},
                infer_slice, slice_kernel, all_dtypes(), "bprop"));
  const std::vector<AttrDef> slice_attrs = {
      attr("begin", AttrKind::kInts, {}), attr("end", AttrKind::kInts, {}),
      attr("strides", AttrKind::kInts, Ints{}), attr("begin_mask", AttrKind::kInt, zero),
      attr("end_mask", AttrKind::kInt, zero), attr("ellipsis_mask", AttrKind::kInt, zero),
      attr("new_axis_mask", AttrKind::kInt, zero), attr("shrink_axis_mask", AttrKind::kInt, zero)};
  r.add(make_op("strided_slice", "StridedSlice",
                "x[begin:end:strides] with MindSpore's begin/end/ellipsis/new_axis/shrink_axis masks.",
                {{"x"}}, slice_attrs, infer_strided_slice, strided_slice_kernel, all_dtypes(), "bprop"));
  r.add(make_op("strided_slice_grad", "StridedSliceGrad",
                "Backward of strided_slice: zeros shaped like `like` with dy where the slice read.",
                {{"dy"}, {"like"}}, slice_attrs, infer_strided_slice_grad, strided_slice_grad_kernel,
                float_dtypes(), "bprop"));
  const std::vector<AttrDef> pad_attrs = {attr("paddings", AttrKind::kInts, {}),
                                          attr("mode", AttrKind::kStr, std::string("constant")),
                                          attr("value", AttrKind::kFloat, 0.0)};
  r.add(make_op("pad", "Pad",
                "Pads x by flat paddings (before0, after0, before1, after1, ...); mode constant|reflect|edge.",
                {{"x"}}, pad_attrs, infer_pad, pad_kernel, all_dtypes(), "bprop"));
  r.add(make_op("pad_grad", "PadGrad",
                "Backward of pad: sums dy over the outputs that copied each element of `like`.",
                {{"dy"}, {"like"}}, pad_attrs, infer_pad_grad, pad_grad_kernel, float_dtypes(),
                "bprop"));
  r.add(make_op("gather", "Gather", "Takes slices of params along `axis` at integer indices (numpy.take).",
                {{"params"}, {"indices"}}, {attr("axis", AttrKind::kInt, zero, {"dim"})},
                infer_gather, gather_kernel, all_dtypes(), "bprop"));
  r.add(make_op("gather_nd", "GatherNd", "params[indices[..., 0], ..., indices[..., K-1]].",
                {{"params"}, {"indices"}}, {}, infer_gather_nd, gather_nd_kernel, all_dtypes(), "bprop"));
  r.add(make_op("tensor_scatter_add", "TensorScatterAdd",
                "input with updates added at index rows indices[..., :K] (duplicates accumulate).",
                {{"input"}, {"indices"}, {"updates"}}, {}, infer_tensor_scatter_add,
                tensor_scatter_add_kernel, numeric_dtypes(), "bprop"));
  r.add(make_op("scatter_add", "ScatterAdd",
                "input with updates added to rows input[indices] along axis 0 (duplicates accumulate).",
                {{"input"}, {"indices"}, {"updates"}}, {}, infer_scatter_add, scatter_add_kernel,
                numeric_dtypes(), "bprop"));
  r.add(make_op("gather_elements", "GatherD",
                "out[..., j, ...] = input[..., index[..., j, ...], ...] along `dim` (index has input's "
                "rank and sizes off dim; torch.gather).",
                {{"input"}, {"index"}}, {attr("dim", AttrKind::kInt, zero)}, infer_gather_elements,
                gather_elements_kernel, all_dtypes(), "bprop"));
  r.add(make_op("tensor_scatter_elements", "TensorScatterElements",
                "input with updates written (reduction 'none') or added ('add') at input[..., "
                "indices[..., j, ...], ...] along `axis`.",
                {{"input"}, {"indices"}, {"updates"}},
                {attr("axis", AttrKind::kInt, zero), attr("reduction", AttrKind::kStr, std::string("none"))},
                infer_tensor_scatter_elements, tensor_scatter_elements_kernel, all_dtypes(), "bprop"));
  OpDef emb = make_op("embedding", "EmbeddingLookup", "Rows of weight at input_ids: weight[input_ids].",
                      {{"input_ids"}, {"weight"}},
                      {optional_attr("padding_idx", AttrKind::kInt)}, infer_embedding, embedding_kernel,
                      all_dtypes(), "bprop");
  emb.dtype_input = 1;
  r.add(std::move(emb));
  r.add(make_op("one_hot", "OneHot", "One-hot encoding of integer indices along a new `axis`.",
                {{"indices"}},
                {attr("depth", AttrKind::kInt, {}), attr("on_value", AttrKind::kFloat, 1.0),
                 attr("off_value", AttrKind::kFloat, 0.0), attr("axis", AttrKind::kInt, int64_t{-1}),
                 attr("dtype", AttrKind::kDType, DType::float32)},
                infer_one_hot, one_hot_kernel, idx, "none"));
}

// Backward rules. Reads are adjoint to scatters: slices and pads go back through their *_grad
// ops (which differentiate back into the forward op), gathers through scatter-adds into zeros
// shaped like the forward input (no concrete sizes needed), scatters through gathers. Index
// inputs get no gradient.
namespace {

// The forward call's attributes, by name (absent optional ones left out).
std::map<std::string, AttrValue> same_attrs(BpropBuilder& g) {
  std::map<std::string, AttrValue> m;
  const auto& defs = g.op().attrs;
  const auto& vals = g.attrs().values();
  for (size_t i = 0; i < defs.size(); ++i)
    if (!std::holds_alternative<std::monostate>(vals[i])) m[defs[i].name] = vals[i];
  return m;
}

}  // namespace

MYCEL_REGISTER_BPROPS(index) {
  using bprop::is_float;
  b.add("slice", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar x = g.input(0);
    if (!is_float(g, x)) return {GradVar()};
    const Shape s = g.meta(x).shape;
    const Ints& begin = g.attrs().get_ints("begin");
    const Ints& size = g.attrs().get_ints("size");
    Ints paddings;  // zeros around the slice: size -1 runs to the end, so nothing comes after
    for (size_t d = 0; d < s.size(); ++d) {
      paddings.push_back(begin[d]);
      paddings.push_back(size[d] == -1 ? 0 : s[d] - begin[d] - size[d]);
    }
    return {g.call("pad", {g.dout()}, {{"paddings", paddings}})};
  });
  b.add("strided_slice", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_float(g, g.input(0))) return {GradVar()};
    return {g.call("strided_slice_grad", {g.dout(), g.input(0)}, same_attrs(g))};
  });
  b.add("strided_slice_grad", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {g.call("strided_slice", {g.dout()}, same_attrs(g)), GradVar()};
  });
  b.add("pad", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_float(g, g.input(0))) return {GradVar()};
    return {g.call("pad_grad", {g.dout(), g.input(0)}, same_attrs(g))};
  });
  b.add("pad_grad", [](BpropBuilder& g) -> std::vector<GradVar> {
    auto attrs = same_attrs(g);
    attrs["value"] = 0.0;  // the linear part of pad: padding carries no sensitivity
    return {g.call("pad", {g.dout()}, attrs), GradVar()};
  });
  b.add("gather", [](BpropBuilder& g) -> std::vector<GradVar> {
    // Scatter-add dout's index dims into `axis` of zeros like params: scatter_add works on axis 0,
    // so move `axis` of params (and the index dims of dout) to the front and back again.
    GradVar params = g.input(0), indices = g.input(1);
    if (!is_float(g, params)) return {GradVar(), GradVar()};
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
    GradVar acc = g.call("scatter_add",
                         {g.call("transpose", {zeros}, {{"perm", perm_p}}), indices,
                          g.call("transpose", {dout}, {{"perm", perm_d}})});
    return {g.call("transpose", {acc}, {{"perm", back}}), GradVar()};
  });
  b.add("gather_nd", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar params = g.input(0);
    if (!is_float(g, params)) return {GradVar(), GradVar()};
    return {g.call("tensor_scatter_add", {g.zeros_like(params), g.input(1), g.dout()}), GradVar()};
  });
  b.add("tensor_scatter_add", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_float(g, g.input(0))) return {GradVar(), GradVar(), GradVar()};
    return {g.dout(), GradVar(), g.call("gather_nd", {g.dout(), g.input(1)})};
  });
  b.add("scatter_add", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_float(g, g.input(0))) return {GradVar(), GradVar(), GradVar()};
    return {g.dout(), GradVar(), g.call("gather", {g.dout(), g.input(1)}, {{"axis", int64_t{0}}})};
  });
  b.add("gather_elements", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar x = g.input(0);
    if (!is_float(g, x)) return {GradVar(), GradVar()};
    return {g.call("tensor_scatter_elements", {g.zeros_like(x), g.input(1), g.dout()},
                   {{"axis", g.attrs().get_int("dim")}, {"reduction", std::string("add")}}),
            GradVar()};
  });
  b.add("tensor_scatter_elements", [](BpropBuilder& g) -> std::vector<GradVar> {
    // 'add': input passes dout through, each update gets dout where it landed. 'none': written
    // positions lose input's sensitivity; with repeated indices only the last write counts, but
    // every update gets dout at its position (exact for distinct indices).
    if (!is_float(g, g.input(0))) return {GradVar(), GradVar(), GradVar()};
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
    if (!is_float(g, weight)) return {GradVar(), GradVar()};
    GradVar dout = g.dout();
    if (g.attrs().has("padding_idx")) {
      int64_t p = g.attrs().get_int("padding_idx");
      if (p < 0) p += g.meta(weight).shape[0];
      GradVar keep = g.call("not_equal", {ids, g.scalar(static_cast<double>(p), g.meta(ids).dtype)});
      keep = g.call("expand_dims", {bprop::as_mask(g, keep, g.meta(weight).dtype)}, {{"axis", int64_t{-1}}});
      dout = g.mul(dout, keep);
    }
    return {GradVar(), g.call("scatter_add", {g.zeros_like(weight), ids, dout})};
  });
}

}  // namespace mycel
