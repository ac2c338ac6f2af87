// Ops whose output size depends on the values (ops/data_dependent.h): unique_with_counts,
// masked_select, nonzero, and masked_scatter (masked_select's gradient, fixed-shape output).
// Their infer gives kDataDependent for the counted dim; the kernel allocates that output.
#include "mycel/kernels/cpu/dynamic_shape.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/data_dependent.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

// mask: bool, shaped like x's leading dims (x[mask] in numpy). Returns x's trailing dims.
Shape check_row_mask(const InferContext& c, size_t xi, size_t mi) {
  const TensorMeta& x = c.in(xi);
  const TensorMeta& m = c.in(mi);
  MYCEL_CHECK(m.dtype == DType::bool_, TypeError, "[", c.op.name, "] input '", input_name(c, mi),
              "' must be bool, got ", dtype_name(m.dtype));
  const bool prefix = m.shape.size() <= x.shape.size() &&
                      std::equal(m.shape.begin(), m.shape.end(), x.shape.begin());
  MYCEL_CHECK(prefix, ShapeError, "[", c.op.name, "] mask with shape ", shape_str(m.shape),
              " must match the leading dims of input '", input_name(c, xi), "' with shape ",
              shape_str(x.shape), " (ops.", c.op.name, " broadcasts them first)");
  return Shape(x.shape.begin() + m.shape.size(), x.shape.end());
}

std::vector<TensorMeta> unique_infer(const InferContext& c) {
  return {{{kDataDependent}, c.in(0).dtype},
          {c.in(0).shape, DType::int64},
          {{kDataDependent}, DType::int64}};
}

std::vector<TensorMeta> masked_select_infer(const InferContext& c) {
  Shape s{kDataDependent};
  Shape rest = check_row_mask(c, 0, 1);
  s.insert(s.end(), rest.begin(), rest.end());
  return {{s, c.in(0).dtype}};
}

std::vector<TensorMeta> nonzero_infer(const InferContext& c) {
  return {{{kDataDependent, static_cast<int64_t>(c.in(0).shape.size())}, DType::int64}};
}

std::vector<TensorMeta> masked_scatter_infer(const InferContext& c) {
  check_row_mask(c, 0, 1);
  check_same_dtype(c, 0, 2);
  return {c.in(0)};
}

std::vector<TensorMeta> masked_scatter_grad_infer(const InferContext& c) {
  check_row_mask(c, 0, 1);
  return {{c.in(2).shape, c.in(0).dtype}};
}

}  // namespace

MYCEL_REGISTER_OPS(dynamic_shape) {
  using namespace cpu;
  std::vector<DType> ordered = all_dtypes();  // and the unsigned types: complex has no order
  for (DType t : {DType::uint16, DType::uint32, DType::uint64}) ordered.push_back(t);
  r.add(make_op("unique_with_counts", "UniqueWithCounts",
                "(unique values of the flattened x, int64 index of each element's value, int64 "
                "counts): sorted, in order of first appearance with sorted=False (MindSpore's "
                "Unique on CPU), or runs of equal neighbours with `consecutive`.",
                {{"x"}},
                {{"consecutive", AttrKind::kBool, false, false, {}},
                 {"sorted", AttrKind::kBool, true, false, {}}},
                unique_infer, unique_with_counts_kernel, ordered, "none"));
  r.add(make_op("masked_select", "MaskedSelect",
                "The rows x[i] where the bool mask (x's leading dims) is true, stacked: x[mask].",
                {{"x"}, {"mask"}}, {}, masked_select_infer, masked_select_kernel, every_dtype(),
                "bprop"));
  r.add(make_op("nonzero", "NonZero",
                "Int64 (count, x.ndim) coordinates of x's nonzero elements, row-major order.",
                {{"x"}}, {}, nonzero_infer, nonzero_kernel, every_dtype(), "none"));
  r.add(make_op("masked_scatter", "MaskedScatter",
                "x with the rows where the bool mask (x's leading dims) is true replaced, in "
                "order, by the rows of source.",
                {{"x"}, {"mask"}, {"source"}}, {}, masked_scatter_infer, masked_scatter_kernel,
                every_dtype(), "bprop"));
  r.add(make_op("masked_scatter_grad", "MaskedScatterGrad",
                "masked_scatter's gradient for source: dout's rows where mask is true, in order, "
                "then zeros, shaped like source.",
                {{"dout"}, {"mask"}, {"source"}}, {}, masked_scatter_grad_infer,
                masked_scatter_grad_kernel, every_dtype(), "bprop"));
}

// masked_select sends each row's sensitivity back to the row it came from; masked_scatter
// splits its sensitivity between the rows kept from x and the rows written from source.
MYCEL_REGISTER_BPROPS(dynamic_shape) {
  b.add("masked_select", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar x = g.input(0);
    if (!bprop::is_float(g, x)) return {GradVar(), GradVar()};
    return {g.call("masked_scatter", {g.zeros_like(x), g.input(1), g.dout()}), GradVar()};
  });
  b.add("masked_scatter", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar x = g.input(0), mask = g.input(1), source = g.input(2);
    if (!bprop::is_float(g, x)) return {GradVar(), GradVar(), GradVar()};
    const size_t nd = g.meta(x).shape.size(), nm = g.meta(mask).shape.size();
    GradVar m = mask;
    for (size_t k = nm; k < nd; ++k) m = g.call("expand_dims", {m}, {{"axis", int64_t{-1}}});
    GradVar dx = g.call("select", {m, g.zeros_like(g.dout()), g.dout()});
    return {dx, GradVar(), g.call("masked_scatter_grad", {g.dout(), mask, source})};
  });
  b.add("masked_scatter_grad", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar dout = g.input(0);
    if (!bprop::is_float(g, dout)) return {GradVar(), GradVar(), GradVar()};
    return {g.call("masked_scatter", {g.zeros_like(dout), g.input(1), g.dout()}), GradVar(),
            GradVar()};
  });
}

}  // namespace mycel
