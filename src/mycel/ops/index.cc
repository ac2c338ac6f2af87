// Slicing and padding ops: slice, strided_slice, pad (offset-table gathers) and their backward
// ops strided_slice_grad and pad_grad (the matching scatters); strided_slice_dynamic and
// slice_dynamic (and their backward ops) take the bounds as tensors read at run time. Ops indexed
// by integer tensors live in gather.cc.
#include <algorithm>

#include "mycel/kernels/cpu/shape.h"
#include "mycel/ops/bprop_complex.h"
#include "mycel/ops/data_dependent.h"
#include "mycel/ops/gather_tables.h"
#include "mycel/ops/shape_common.h"

namespace mycel {
namespace {
using detail::attr;
using detail::Ints;
using detail::make_op;

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
  std::unique_ptr<GatherTables> local;
  const GatherTables& t = gather_tables(c, local, [&](GatherTables& g) {
    const Ints& begin = c.attrs.get_ints("begin");
    auto st = contiguous_strides(c.in(0).shape());
    for (size_t d = 0; d < st.size(); ++d)
      g.tables.push_back(cpu::strided_table(c.out(0).shape()[d], begin[d], 1, st[d]));
  });
  cpu::gather_offsets(c.in(0), c.out(0), t.tables);
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
    MYCEL_THROW(ValueError, "[strided_slice] ellipsis_mask ", ellipsis,
                " has more than one bit set");
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
  std::unique_ptr<GatherTables> local;
  const GatherTables& t = gather_tables(c, local, [&](GatherTables& g) {
    g.tables = strided_slice_tables(c.in(0).shape(), c.attrs, &g.base);
  });
  cpu::gather_offsets(c.in(0), c.out(0), t.tables, t.base);
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
  std::unique_ptr<GatherTables> local;  // keyed by dy's and dx's shapes (dx's is like's)
  const GatherTables& t = gather_tables(c, local, [&](GatherTables& g) {
    g.tables = strided_slice_tables(c.in(1).shape(), c.attrs, &g.base);
  });
  cpu::scatter_add_offsets(c.in(0), c.out(0), t.tables, t.base);
}

// ---- strided_slice_dynamic: begin/end/strides as int tensors known only at run time ----

// strided_slice's attributes with the bounds read from inputs `first`.. : (begin, end, strides),
// or slice_dynamic's (begin, size) checked as slice checks them (x: the sliced shape).
Attrs dynamic_slice_attrs(const KernelContext& c, size_t first, const Shape& x) {
  auto ints = [&](size_t i) {
    Tensor t = c.in(i).to(DType::int64);
    return Ints(t.data<int64_t>(), t.data<int64_t>() + t.numel());
  };
  std::map<std::string, AttrValue> m;
  if (c.inputs.size() - first == 2) {  // slice: begin, size (-1: to the end)
    Ints begin = ints(first), size = ints(first + 1), end(begin.size());
    const Attrs sa = make_attrs(Registry::get().at("slice"), {{"begin", begin}, {"size", size}});
    const TensorMeta meta{x, c.in(0).dtype()};
    const std::vector<const TensorMeta*> in = {&meta};
    infer_slice(InferContext{Registry::get().at("slice"), in, sa});  // slice's own range checks
    for (size_t d = 0; d < begin.size(); ++d) end[d] = size[d] == -1 ? x[d] : begin[d] + size[d];
    m = {{"begin", begin}, {"end", end}, {"strides", Ints(begin.size(), 1)}};
  } else {
    m = {{"begin", ints(first)}, {"end", ints(first + 1)}, {"strides", ints(first + 2)}};
    for (const char* k :
         {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"})
      m[k] = c.attrs.get_int(k);
  }
  return make_attrs(Registry::get().at("strided_slice"), m);
}

// The bounds are 1-d int tensors of one length; the output rank follows from the masks and that
// length, its sizes from the values (kDataDependent), but a new axis has size 1.
std::vector<TensorMeta> infer_strided_slice_dynamic(const InferContext& c) {
  const size_t first = c.num_inputs() - 3;
  const int64_t m = c.in(first).shape.empty() ? 1 : c.in(first).shape[0];
  for (size_t i = first; i < first + 3; ++i) {
    const TensorMeta& t = c.in(i);
    if (!is_integral(t.dtype) || t.shape.size() > 1 || (t.shape.empty() ? 1 : t.shape[0]) != m)
      MYCEL_THROW(TypeError, "[", c.op.name, "] input '", input_name(c, i),
                  "' must be an int tensor of rank <= 1 and length ", m, " (as 'begin'), got ",
                  dtype_name(t.dtype), shape_str(t.shape));
  }
  std::map<std::string, AttrValue> probe{
      {"begin", Ints(m, 0)}, {"end", Ints(m, 0)}, {"strides", Ints(m, 1)}};
  for (const char* k :
       {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"})
    probe[k] = c.attrs.get_int(k);
  Shape probe_shape = c.in(first == 1 ? 0 : 1).shape;          // x, or `like` for the backward op
  for (int64_t& d : probe_shape) d = std::max<int64_t>(d, 1);  // any size: only the rank counts
  SlicePlan p =
      plan_strided_slice(probe_shape, make_attrs(Registry::get().at("strided_slice"), probe));
  Shape out;
  for (const SliceDim& sd : p.dims) out.push_back(sd.in_dim < 0 ? 1 : kDataDependent);
  if (first == 1) return {{out, c.in(0).dtype}};
  return {{c.in(1).shape, c.in(0).dtype}};  // the backward op: shaped like `like`
}

// slice_dynamic(x, begin, size) and its backward (dy, like, begin, size): int tensors of x's rank.
std::vector<TensorMeta> infer_slice_dynamic(const InferContext& c) {
  const size_t first = c.num_inputs() - 2;
  const Shape& x = c.in(first == 1 ? 0 : 1).shape;
  for (size_t i = first; i < first + 2; ++i) {
    const TensorMeta& t = c.in(i);
    if (!is_integral(t.dtype) || t.shape.size() != 1 ||
        t.shape[0] != static_cast<int64_t>(x.size()))
      MYCEL_THROW(TypeError, "[", c.op.name, "] input '", input_name(c, i),
                  "' must be a 1-d int tensor with one entry per dimension of shape ", shape_str(x),
                  ", got ", dtype_name(t.dtype), shape_str(t.shape));
  }
  if (first == 2) return {{x, c.in(0).dtype}};
  return {{Shape(x.size(), kDataDependent), c.in(0).dtype}};
}

void strided_slice_dynamic_kernel(const KernelContext& c) {
  Attrs a = dynamic_slice_attrs(c, 1, c.in(0).shape());
  int64_t base = 0;
  auto t = strided_slice_tables(c.in(0).shape(), a, &base);
  Shape out;
  for (const auto& tab : t) out.push_back(static_cast<int64_t>(tab.size()));
  Tensor& o = c.out(0);
  if (!o.defined()) o = Tensor::empty(out, c.in(0).dtype());
  MYCEL_CHECK(o.shape() == out, RuntimeError, "[", c.op.name, "] output has shape ",
              shape_str(o.shape()), ", the bounds give ", shape_str(out));
  cpu::gather_offsets(c.in(0), o, t, base);
}

void strided_slice_dynamic_grad_kernel(const KernelContext& c) {
  Attrs a = dynamic_slice_attrs(c, 2, c.in(1).shape());
  int64_t base = 0;
  auto t = strided_slice_tables(c.in(1).shape(), a, &base);
  Shape want;
  for (const auto& tab : t) want.push_back(static_cast<int64_t>(tab.size()));
  MYCEL_CHECK(c.in(0).shape() == want, ShapeError, "[", c.op.name, "] input 'dy' has shape ",
              shape_str(c.in(0).shape()), ", the bounds give ", shape_str(want));
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
    MYCEL_THROW(ValueError, "[pad] paddings ", shape_str(p),
                " must have 2 entries (before, after) "
                "per dimension of the input shape ",
                shape_str(s), ", flattened: expected ", 2 * s.size(), ", got ", p.size());
  Shape out(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    int64_t b = p[2 * d], a = p[2 * d + 1], n = s[d];
    const int64_t kMax = int64_t{1} << 48;
    if (b > kMax || a > kMax)
      MYCEL_THROW(ValueError, "[pad] paddings (", b, ", ", a, ") for dimension ", d,
                  " are too large");
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
        if (mode == "constant") {
          tab[i] = cpu::kPadOffset;
          continue;
        }
        if (mode == "reflect")
          j = j < 0 ? -j : 2 * (n - 1) - j;
        else
          j = std::clamp<int64_t>(j, 0, n - 1);
      }
      tab[i] = j * st[d];
    }
    t.push_back(std::move(tab));
  }
  return t;
}

void pad_kernel(const KernelContext& c) {
  std::unique_ptr<GatherTables> local;
  const GatherTables& t = gather_tables(c, local, [&](GatherTables& g) {
    g.tables = pad_tables(c.in(0).shape(), c.out(0).shape(), c.attrs);
  });
  cpu::gather_offsets(c.in(0), c.out(0), t.tables, 0, c.attrs.get_float("value"));
}

// pad_grad(dy, like): each input element gets the sum of dy over the outputs that copied it.
std::vector<TensorMeta> infer_pad_grad(const InferContext& c) {
  const std::vector<const TensorMeta*> like = {c.inputs[1]};
  check_grad_input(c, infer_pad(InferContext{c.op, like, c.attrs})[0].shape);
  return {{c.in(1).shape, c.in(0).dtype}};
}

void pad_grad_kernel(const KernelContext& c) {
  std::unique_ptr<GatherTables> local;
  const GatherTables& t = gather_tables(c, local, [&](GatherTables& g) {
    g.tables = pad_tables(c.in(1).shape(), c.in(0).shape(), c.attrs);
  });
  cpu::scatter_add_offsets(c.in(0), c.out(0), t.tables);
}

}  // namespace

namespace {
// The backward ops sum into their output: floats, and complex values (gradients of complex
// slices, ops/bprop_complex.h).
std::vector<DType> float_and_complex() {
  auto v = float_dtypes();
  v.push_back(DType::complex64);
  v.push_back(DType::complex128);
  return v;
}
}  // namespace

MYCEL_REGISTER_OPS(index) {
  const AttrValue zero = int64_t{0};
  r.add(make_op("slice", "Slice", "x[begin : begin + size] per dimension (size -1: to the end).",
                {{"x"}}, {attr("begin", AttrKind::kInts, {}), attr("size", AttrKind::kInts, {})},
                infer_slice, slice_kernel, every_dtype(), "bprop"));  // bytes only
  const std::vector<AttrDef> slice_attrs = {
      attr("begin", AttrKind::kInts, {}),          attr("end", AttrKind::kInts, {}),
      attr("strides", AttrKind::kInts, Ints{}),    attr("begin_mask", AttrKind::kInt, zero),
      attr("end_mask", AttrKind::kInt, zero),      attr("ellipsis_mask", AttrKind::kInt, zero),
      attr("new_axis_mask", AttrKind::kInt, zero), attr("shrink_axis_mask", AttrKind::kInt, zero)};
  r.add(with_traits(
      make_op(
          "strided_slice", "StridedSlice",
          "x[begin:end:strides] with MindSpore's begin/end/ellipsis/new_axis/shrink_axis masks.",
          {{"x"}}, slice_attrs, infer_strided_slice, strided_slice_kernel, every_dtype(), "bprop"),
      py_op(PyOperator::kGetItem)));
  r.add(make_op("strided_slice_grad", "StridedSliceGrad",
                "Backward of strided_slice: zeros shaped like `like` with dy where the slice read.",
                {{"dy"}, {"like"}}, slice_attrs, infer_strided_slice_grad,
                strided_slice_grad_kernel, float_and_complex(), "bprop"));
  const std::vector<AttrDef> mask_attrs(slice_attrs.begin() + 3, slice_attrs.end());
  r.add(make_op("strided_slice_dynamic", "StridedSliceDynamic",
                "strided_slice with begin, end and strides given as int tensors (known at run "
                "time; graph mode's slice with run-time bounds).",
                {{"x"}, {"begin"}, {"end"}, {"strides"}}, mask_attrs, infer_strided_slice_dynamic,
                strided_slice_dynamic_kernel, every_dtype(), "bprop"));
  r.add(make_op("strided_slice_dynamic_grad", "StridedSliceDynamicGrad",
                "Backward of strided_slice_dynamic: zeros shaped like `like` with dy where the "
                "slice read.",
                {{"dy"}, {"like"}, {"begin"}, {"end"}, {"strides"}}, mask_attrs,
                infer_strided_slice_dynamic, strided_slice_dynamic_grad_kernel, float_and_complex(),
                "bprop"));
  r.add(make_op("slice_dynamic", "SliceDynamic",
                "slice with begin and size given as int tensors (known at run time; graph "
                "mode's slice with run-time bounds).",
                {{"x"}, {"begin"}, {"size"}}, {}, infer_slice_dynamic, strided_slice_dynamic_kernel,
                every_dtype(), "bprop"));
  r.add(make_op("slice_dynamic_grad", "SliceDynamicGrad",
                "Backward of slice_dynamic: zeros shaped like `like` with dy where the slice read.",
                {{"dy"}, {"like"}, {"begin"}, {"size"}}, {}, infer_slice_dynamic,
                strided_slice_dynamic_grad_kernel, float_and_complex(), "bprop"));
  const std::vector<AttrDef> pad_attrs = {attr("paddings", AttrKind::kInts, {}),
                                          attr("mode", AttrKind::kStr, std::string("constant")),
                                          attr("value", AttrKind::kFloat, 0.0)};
  r.add(make_op("pad", "Pad",
                "Pads x by flat paddings (before0, after0, before1, after1, ...); mode "
                "constant|reflect|edge.",
                {{"x"}}, pad_attrs, infer_pad, pad_kernel, every_dtype(), "bprop"));
  r.add(make_op("pad_grad", "PadGrad",
                "Backward of pad: sums dy over the outputs that copied each element of `like`.",
                {{"dy"}, {"like"}}, pad_attrs, infer_pad_grad, pad_grad_kernel, float_and_complex(),
                "bprop"));
}

// Backward rules: slices and pads go back through their *_grad ops, which differentiate back
// into the forward op (second derivatives).
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
  using bprop::is_diff;  // linear data movement: complex values need no conjugation
  b.add("slice", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar x = g.input(0);
    if (!is_diff(g, x)) return {GradVar()};
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
    if (!is_diff(g, g.input(0))) return {GradVar()};
    return {g.call("strided_slice_grad", {g.dout(), g.input(0)}, same_attrs(g))};
  });
  b.add("strided_slice_grad", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {g.call("strided_slice", {g.dout()}, same_attrs(g)), GradVar()};
  });
  b.add("strided_slice_dynamic", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_diff(g, g.input(0))) return {GradVar(), GradVar(), GradVar(), GradVar()};
    return {g.call("strided_slice_dynamic_grad",
                   {g.dout(), g.input(0), g.input(1), g.input(2), g.input(3)}, same_attrs(g)),
            GradVar(), GradVar(), GradVar()};
  });
  b.add("strided_slice_dynamic_grad", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {g.call("strided_slice_dynamic", {g.dout(), g.input(2), g.input(3), g.input(4)},
                   same_attrs(g)),
            GradVar(), GradVar(), GradVar(), GradVar()};
  });
  b.add("slice_dynamic", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_diff(g, g.input(0))) return {GradVar(), GradVar(), GradVar()};
    return {g.call("slice_dynamic_grad", {g.dout(), g.input(0), g.input(1), g.input(2)}), GradVar(),
            GradVar()};
  });
  b.add("slice_dynamic_grad", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {g.call("slice_dynamic", {g.dout(), g.input(2), g.input(3)}), GradVar(), GradVar(),
            GradVar()};
  });
  b.add("pad", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!is_diff(g, g.input(0))) return {GradVar()};
    return {g.call("pad_grad", {g.dout(), g.input(0)}, same_attrs(g))};
  });
  b.add("pad_grad", [](BpropBuilder& g) -> std::vector<GradVar> {
    auto attrs = same_attrs(g);
    attrs["value"] = 0.0;  // the linear part of pad: padding carries no sensitivity
    return {g.call("pad", {g.dout()}, attrs), GradVar()};
  });
}

}  // namespace mycel
