// Complex construction and polar angle: complex(real, imag) and angle(x) (numpy's np.angle).
// real/imag/conj/abs live with the unary family; their complex gradients follow bprop_complex.h.
#include <cmath>
#include <complex>

#include "mycel/kernels/cpu/elementwise.h"
#include "mycel/ops/bprop_complex.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

DType complex_of_float(DType t) {
  return t == DType::float64 ? DType::complex128 : DType::complex64;
}

std::vector<TensorMeta> complex_infer(const InferContext& c) {
  const TensorMeta& re = c.in(0);
  MYCEL_CHECK(re.dtype == DType::float32 || re.dtype == DType::float64, TypeError,
              "[complex] input 'real' must be float32 or float64, got ", dtype_name(re.dtype));
  check_same_dtype(c, 0, 1);
  return {infer_broadcast(c, complex_of_float(re.dtype))};  // numpy's broadcasting
}

void complex_kernel(const KernelContext& ctx) {
  auto run = [&](auto zero) {
    using V = decltype(zero);
    cpu::binary_map<V, V, std::complex<V>>(ctx.in(0), ctx.in(1), ctx.out(0),
                                           [](V re, V im) { return std::complex<V>(re, im); });
  };
  if (ctx.in(0).dtype() == DType::float64)
    run(0.0);
  else
    run(0.0f);
}

// Complex input: its real type; real floats keep theirs (angle 0 or pi).
std::vector<TensorMeta> angle_infer(const InferContext& c) {
  DType t = c.in(0).dtype;
  if (t == DType::complex64) t = DType::float32;
  if (t == DType::complex128) t = DType::float64;
  return {{c.in(0).shape, t}};
}

void angle_kernel(const KernelContext& ctx) {
  visit_any_dtype(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_complex_v<T>) {
      using V = typename T::value_type;
      cpu::unary_map<T, V>(ctx.in(0), ctx.out(0), [](T z) { return std::arg(z); });
    } else if constexpr (std::is_floating_point_v<compute_t<T>>) {
      using K = compute_t<T>;  // numpy: pi for negative numbers (and -0.0), NaN stays NaN
      cpu::unary_map<T, T>(ctx.in(0), ctx.out(0), [](K v) {
        return v != v ? v : std::signbit(v) ? static_cast<K>(3.14159265358979323846) : K(0);
      });
    }
  });
}

}  // namespace

MYCEL_REGISTER_OPS(complex) {
  // Elementwise: vmap batches them as such, the planner may write angle over a dying input.
  auto elementwise = [](OpDef& d) { d.elementwise = true; };
  r.add(with_traits(
      make_op("complex", "Complex", "The complex tensor real + i imag (float32 -> complex64).",
              {{"real"}, {"imag"}}, {}, complex_infer, complex_kernel,
              {DType::float32, DType::float64}, "bprop"),
      elementwise));
  r.add(with_traits(
      make_op("angle", "Angle", "Elementwise argument of complex x in (-pi, pi] (numpy.angle).",
              {{"x"}}, {}, angle_infer, angle_kernel,
              {DType::float16, DType::bfloat16, DType::float32, DType::float64, DType::complex64,
               DType::complex128},
              "bprop"),
      elementwise));
}

MYCEL_REGISTER_BPROPS(complex) {
  // z = a + ib: dL/da = Re(dz), dL/db = Im(dz) under the convention of bprop_complex.h (summed
  // back over broadcast dims).
  b.add("complex", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {g.reduce_to(g.call("real", {g.dout()}), g.input(0)),
            g.reduce_to(g.call("imag", {g.dout()}), g.input(1))};
  });
  // angle = atan2(y, x): dL/dx + i dL/dy = d (-y + ix) / |z|^2 = d (i z) / |z|^2, 0 at z = 0;
  // a real input's angle is piecewise constant.
  b.add("angle", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar z = g.input(0);
    const DType t = g.meta(z).dtype;
    if (!is_complex(t)) return {g.zeros_like(z)};
    GradVar re = g.call("real", {z}), im = g.call("imag", {z});
    GradVar r2 = g.add(g.mul(re, re), g.mul(im, im));
    GradVar zero = g.call("equal", {r2, g.zeros_like(r2)});
    GradVar safe = g.call("select", {zero, g.ones_like(r2), r2});
    GradVar scale = g.call("select", {zero, g.zeros_like(r2), g.div(g.dout(), safe)});
    return {g.call("complex", {g.mul(g.neg(im), scale), g.mul(re, scale)})};
  });
}

}  // namespace mycel
