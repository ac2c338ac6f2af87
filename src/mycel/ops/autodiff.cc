// Ops that exist for autodiff: stop_gradient is the identity whose gradient is zero (its policy
// "none" makes the vjp transform send no sensitivity through it).
#include "mycel/kernels/cpu/shape.h"
#include "mycel/ops/infer_util.h"

namespace mycel {

MYCEL_REGISTER_OPS(autodiff) {
  OpDef d = make_op(
      "stop_gradient", "StopGradient",
      "Returns x unchanged; autodiff treats it as a constant (no gradient flows through).", {{"x"}},
      {}, infer_same_as_input, [](const KernelContext& c) { cpu::copy_all(c.in(0), c.out(0)); },
      all_dtypes(), "none");
  d.view = [](const Tensor& x, const TensorMeta& out) { return x.view(out.shape); };
  r.add(std::move(d));
}

}  // namespace mycel
