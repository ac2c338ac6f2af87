// shift: moves x along one axis by `periods` places and fills the vacated ones with fill_value
// (pandas' shift; MindSpore's Shift kernel). One offset-table gather, like pad.
#include "mycel/kernels/cpu/shape.h"
#include "mycel/ops/bprop_complex.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/shape_common.h"

namespace mycel {
namespace {
using detail::attr;

// x has rank >= 1; fill_value holds one element (any dtype: converted to x's, as pad's value).
std::vector<TensorMeta> infer_shift(const InferContext& c) {
  const Shape& s = c.in(0).shape;
  if (s.empty())
    MYCEL_THROW(ValueError,
                "[shift] input 'x' must have rank >= 1 to shift along 'axis', got shape ()");
  normalize_axis(c.attrs.get_int("axis"), static_cast<int64_t>(s.size()), "shift", "axis");
  if (numel(c.in(1).shape) != 1)
    MYCEL_THROW(ValueError, "[shift] input 'fill_value' must hold one value (a scalar), got shape ",
                shape_str(c.in(1).shape));
  return {c.in(0)};
}

void shift_kernel(const KernelContext& c) {
  const Shape& s = c.in(0).shape();
  const int64_t axis = normalize_axis(c.attrs.get_int("axis"), c.in(0).ndim(), "shift");
  const int64_t p = c.attrs.get_int("periods");
  auto st = contiguous_strides(s);
  cpu::OffsetTables t;
  for (size_t d = 0; d < s.size(); ++d) {
    if (static_cast<int64_t>(d) != axis) {
      t.push_back(cpu::strided_table(s[d], 0, 1, st[d]));
      continue;
    }
    std::vector<int64_t> tab(s[d]);  // output place i reads i - periods, if there is one
    for (int64_t i = 0; i < s[d]; ++i)
      tab[i] = (i - p >= 0 && i - p < s[d]) ? (i - p) * st[d] : cpu::kPadOffset;
    t.push_back(std::move(tab));
  }
  cpu::gather_offsets(c.in(0), c.out(0), t, 0, c.in(1).item_as_double());
}

}  // namespace

MYCEL_REGISTER_OPS(shift) {
  r.add(make_op(
      "shift", "Shift",
      "x moved by `periods` places along `axis` (positive: towards higher indices), the "
      "vacated places set to fill_value.",
      {{"x"}, {"fill_value"}},
      {attr("periods", AttrKind::kInt, int64_t{1}), attr("axis", AttrKind::kInt, int64_t{-1})},
      infer_shift, shift_kernel, every_dtype(), "bprop"));
}

// Backward: x's sensitivity shifts back (vacated places get zero); fill_value's is the sum of
// dout over the places it filled, i.e. dout less what the shift back and forth keeps.
MYCEL_REGISTER_BPROPS(shift) {
  b.add("shift", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar x = g.input(0);
    if (!bprop::is_diff(g, x)) return {GradVar(), GradVar()};
    const int64_t p = g.attrs().get_int("periods"), axis = g.attrs().get_int("axis");
    GradVar zero = g.scalar(0.0, g.meta(x).dtype);
    GradVar dx = g.call("shift", {g.dout(), zero}, {{"periods", -p}, {"axis", axis}});
    GradVar kept = g.call("shift", {dx, zero}, {{"periods", p}, {"axis", axis}});
    return {dx, bprop::to_input(g, g.sub(g.dout(), kept), 1)};
  });
}

}  // namespace mycel
