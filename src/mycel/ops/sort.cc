// Sorting ops: sort, argsort, top_k. Indices are int64 (numpy's intp); ties keep index order.
#include "mycel/kernels/cpu/sort.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

// Validates attribute `axis`; a 0-d input acts as a 1-element vector (axis 0 or -1).
void check_sort_axis(const InferContext& c) {
  int64_t nd = static_cast<int64_t>(c.in(0).shape.size()), axis = c.attrs.get_int("axis");
  if (nd > 0) {
    normalize_axis(axis, nd, c.op.name.c_str());
  } else if (axis != 0 && axis != -1) {
    MYCEL_THROW(ValueError, "[", c.op.name, "] axis ", axis,
                " is out of range for a tensor of rank 0", " (expected axis 0 or -1)");
  }
}

std::vector<TensorMeta> sort_infer(const InferContext& c) {
  check_sort_axis(c);
  return {c.in(0), {c.in(0).shape, DType::int64}};
}

std::vector<TensorMeta> argsort_infer(const InferContext& c) {
  check_sort_axis(c);
  return {{c.in(0).shape, DType::int64}};
}

std::vector<TensorMeta> top_k_infer(const InferContext& c) {
  const Shape& s = c.in(0).shape;
  int64_t k = c.attrs.get_int("k"), n = s.empty() ? 1 : s.back();
  if (s.empty() && k != 1)
    MYCEL_THROW(ValueError, "[", c.op.name, "] k (", k, ") must be 1 for a 0-d input 'x'");
  if (k < 0 || k > n)
    MYCEL_THROW(ValueError, "[", c.op.name, "] k (", k, ") must be in [0, ", n,
                "], the size of the last axis of input 'x' with shape ", shape_str(s));
  Shape out = s;
  if (!out.empty()) out.back() = k;
  return {{out, c.in(0).dtype}, {out, DType::int64}};
}

// The ordered types: the core ones and the unsigned ones (complex values have no order).
std::vector<DType> ordered_dtypes() {
  std::vector<DType> v = all_dtypes();
  for (DType t : {DType::uint16, DType::uint32, DType::uint64}) v.push_back(t);
  return v;
}

OpDef sort_op(std::string name, std::string cls, std::string doc, InferFn infer, KernelFn kernel,
              std::vector<AttrDef> attrs, std::string grad) {
  return make_op(std::move(name), std::move(cls), std::move(doc), {{"x"}}, std::move(attrs),
                 std::move(infer), std::move(kernel), ordered_dtypes(), std::move(grad));
}

}  // namespace

MYCEL_REGISTER_OPS(sort) {
  using namespace cpu;
  const std::vector<AttrDef> axis_descending = {
      {"axis", AttrKind::kInt, int64_t{-1}, false, {"dim"}},
      {"descending", AttrKind::kBool, false, false, {}}};
  r.add(sort_op("sort", "Sort", "Stable sort along axis: (values, int64 indices); NaN sorts last.",
                sort_infer, sort_kernel, axis_descending, "bprop"));
  r.add(sort_op("argsort", "Argsort", "Int64 indices that stably sort x along axis.", argsort_infer,
                argsort_kernel, axis_descending, "none"));
  r.add(sort_op(
      "top_k", "TopK",
      "The k largest entries along the last axis, largest first (with sorted=False in their "
      "order in x): (values, int64 indices).",
      top_k_infer, top_k_kernel,
      {{"k", AttrKind::kInt, std::monostate{}, false, {}},
       {"sorted", AttrKind::kBool, true, false, {}}},
      "bprop"));
}

// Backward rules: each value's sensitivity goes back to the position it came from, found in the
// op's own index output (ties were broken there, so the rule picks the same element).
MYCEL_REGISTER_BPROPS(sort) {
  for (const char* name : {"sort", "top_k"}) {
    const bool is_sort = std::string(name) == "sort";
    b.add(name, [is_sort](BpropBuilder& g) -> std::vector<GradVar> {
      GradVar x = g.input(0);
      if (!bprop::is_float(g, x)) return {GradVar()};
      GradVar dvalues = g.tuple_get(g.dout(), 0);
      if (g.meta(x).shape.empty()) return {dvalues};  // a 0-d input is its own only value
      const int64_t axis = is_sort ? g.attrs().get_int("axis") : -1;
      return {g.call("tensor_scatter_elements", {g.zeros_like(x), g.tuple_get(g.out(), 1), dvalues},
                     {{"axis", axis}, {"reduction", std::string("add")}})};
    });
  }
}

}  // namespace mycel
