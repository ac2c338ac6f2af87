// Triangular parts of the last two dims: tril and triu (MindSpore's ops.tril / ops.triu, numpy's
// np.tril / np.triu), the causal masks of attention. Linear, so each is its own gradient.
#include "mycel/kernels/cpu/shape.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/infer_util.h"
#include "mycel/ops/shape_common.h"

namespace mycel {
namespace {

std::vector<TensorMeta> infer_triangle(const InferContext& c) {
  if (c.in(0).shape.size() < 2)
    MYCEL_THROW(ValueError, "[", c.op.name, "] input 'x' must have rank >= 2, got shape ",
                shape_str(c.in(0).shape));
  return {c.in(0)};
}

template <bool Lower>
void triangle_kernel(const KernelContext& c) {
  cpu::triangle(c.in(0), c.out(0), c.attrs.get_int("diagonal"), Lower);
}

}  // namespace

MYCEL_REGISTER_OPS(triangle) {
  using detail::attr;
  using detail::make_op;
  r.add(make_op("tril", "Tril",
                "The lower triangle of the last two dims: elements with "
                "j - i <= diagonal kept, the rest 0.",
                {{"x"}}, {attr("diagonal", AttrKind::kInt, int64_t{0})}, infer_triangle,
                triangle_kernel<true>, every_dtype(), "bprop"));  // bytes only
  r.add(make_op("triu", "Triu",
                "The upper triangle of the last two dims: elements with "
                "j - i >= diagonal kept, the rest 0.",
                {{"x"}}, {attr("diagonal", AttrKind::kInt, int64_t{0})}, infer_triangle,
                triangle_kernel<false>, every_dtype(), "bprop"));
}

// Masking is linear and self-adjoint: the gradient keeps the same triangle of dout.
MYCEL_REGISTER_BPROPS(triangle) {
  for (const char* name : {"tril", "triu"}) {
    b.add(name, [name](BpropBuilder& g) -> std::vector<GradVar> {
      if (!bprop::is_float(g, g.input(0))) return {GradVar()};
      return {g.call(name, {g.dout()}, {{"diagonal", g.attrs().get_int("diagonal")}})};
    });
  }
}

}  // namespace mycel
