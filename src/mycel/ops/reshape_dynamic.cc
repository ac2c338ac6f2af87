// reshape_dynamic(x, shape): reshape by a 1-d integer tensor whose values are known only when the
// program runs (MindSpore's P.Reshape()(x, shape_tensor) in graph mode: the "<op>_dynamic" variant
// analysis calls for an attribute given as a tensor, eval_op.cc). The result's rank is the tensor's
// length and every dim is data-dependent (ops/data_dependent.h): the kernel reads the sizes (one
// may be -1) and allocates.
#include <cstring>

#include "mycel/ops/bprop_util.h"
#include "mycel/ops/data_dependent.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

std::vector<TensorMeta> reshape_dynamic_infer(const InferContext& c) {
  const TensorMeta& s = c.in(1);
  MYCEL_CHECK(is_integral(s.dtype), TypeError,
              "[reshape_dynamic] input 'shape' must be an integer tensor, got ",
              dtype_name(s.dtype));
  MYCEL_CHECK(s.shape.size() == 1 && s.shape[0] >= 0, ValueError,
              "[reshape_dynamic] input 'shape' must be 1-d (its length is the result's rank), got "
              "shape ",
              shape_str(s.shape));
  return {{Shape(static_cast<size_t>(s.shape[0]), kDataDependent), c.in(0).dtype}};
}

// The sizes `shape` holds, its one -1 (if any) worked out from x's element count.
Shape target_shape(const Tensor& x, const Tensor& shape) {
  Tensor s = shape.to(DType::int64);
  Shape out(s.data<int64_t>(), s.data<int64_t>() + s.numel());
  int64_t known = 1, unknown = -1;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == -1 && unknown < 0) {
      unknown = static_cast<int64_t>(d);
      continue;
    }
    MYCEL_CHECK(out[d] >= 0, ValueError, "[reshape_dynamic] shape ", shape_str(out),
                " may hold one -1 and sizes >= 0");
    known *= out[d];
  }
  if (unknown >= 0 && known > 0 && x.numel() % known == 0) out[unknown] = x.numel() / known;
  MYCEL_CHECK(unknown < 0 ? known == x.numel() : out[unknown] >= 0, ValueError,
              "[reshape_dynamic] cannot reshape x of shape ", shape_str(x.shape()), " (", x.numel(),
              " elements) into ", shape_str(out));
  return out;
}

void reshape_dynamic_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  Shape s = target_shape(x, c.in(1));
  Tensor& y = c.out(0);
  if (!y.defined()) y = Tensor::empty(s, x.dtype());
  MYCEL_CHECK(y.shape() == s, RuntimeError, "[reshape_dynamic] output has shape ",
              shape_str(y.shape()), ", the values need ", shape_str(s));
  if (x.numel() > 0) std::memcpy(y.data(), x.data(), x.numel() * itemsize(x.dtype()));
}

}  // namespace

MYCEL_REGISTER_OPS(reshape_dynamic) {
  r.add(make_op("reshape_dynamic", "ReshapeDynamic",
                "x reshaped by the sizes a 1-d integer tensor holds (one may be -1), read when "
                "the kernel runs.",
                {{"x"}, {"shape"}}, {}, reshape_dynamic_infer, reshape_dynamic_kernel,
                every_dtype(), "bprop"));
}

// The sensitivity goes back to x's shape (a static one: a reshape attribute names it).
MYCEL_REGISTER_BPROPS(reshape_dynamic) {
  b.add("reshape_dynamic", [](BpropBuilder& g) -> std::vector<GradVar> {
    const Shape xs = g.meta(g.input(0)).shape;
    for (int64_t d : xs)
      MYCEL_CHECK(d >= 0, NotSupported,
                  "[reshape_dynamic] the gradient needs x's shape known when compiling, got ",
                  shape_str(xs));
    return {g.reshape(g.dout(), xs), GradVar()};
  });
}

}  // namespace mycel
