// Unary elementwise ops. Each op: name, class, doc, dtypes, output-dtype rule and a scalar functor.
// Output dtypes follow numpy: transcendental functions of ints/bools give floats (int8 -> float16,
// int32 -> float64), abs/neg/sign/square/floor/ceil/round keep the dtype, predicates give bool.
#include <cmath>
#include <limits>

#include "mycel/kernels/cpu/unary.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

using cpu::fast_exp;
using cpu::fast_tanh;
using cpu::is_nan;
using cpu::sigmoid;

// Output-dtype rules.
std::vector<TensorMeta> same_dtype(const InferContext& c) { return {c.in(0)}; }
std::vector<TensorMeta> float_dtype(const InferContext& c) {
  return {{c.in(0).shape, float_result_dtype(c.in(0).dtype)}};
}
std::vector<TensorMeta> bool_dtype(const InferContext& c) {
  return {{c.in(0).shape, DType::bool_}};
}

std::vector<TensorMeta> gelu_infer(const InferContext& c) {
  const std::string& a = c.attrs.get_str("approximate");
  if (a != "none" && a != "tanh")
    MYCEL_THROW(ValueError, "[gelu] attribute 'approximate' must be 'none' or 'tanh', got '", a,
                "'");
  return {c.in(0)};
}

OpDef unary(std::string name, std::string cls, std::string doc, std::vector<DType> dtypes,
            InferFn infer, KernelFn kernel, std::string grad = "todo",
            std::vector<AttrDef> attrs = {}) {
  return make_op(std::move(name), std::move(cls), std::move(doc), {{"x"}}, std::move(attrs),
                 std::move(infer), std::move(kernel), std::move(dtypes), std::move(grad));
}

// Numeric dtypes without bool and uint8 (abs of uint8 is the identity but numpy supports it).
template <class T>
constexpr bool is_unsigned_int = std::is_unsigned_v<T> && !std::is_same_v<T, bool>;

// gelu(x) = x * Phi(x), exactly (erf) or with the tanh approximation.
template <class T>
T gelu_erf(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
}
template <class T>
T gelu_tanh(T x) {
  const T k = T(0.79788456080286535588);  // sqrt(2 / pi)
  return T(0.5) * x * (T(1) + cpu::fast_tanh(k * (x + T(0.044715) * x * x * x)));
}

void gelu_kernel(const KernelContext& ctx) {
  bool tanh_form = ctx.attrs.get_str("approximate") == "tanh";
  visit_float_dtype(ctx.in(0).dtype(), "gelu", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if (tanh_form) cpu::unary_map<T, T>(ctx.in(0), ctx.out(0), [](C x) { return gelu_tanh(x); });
    else cpu::unary_map<T, T>(ctx.in(0), ctx.out(0), [](C x) { return gelu_erf(x); });
  });
}

}  // namespace

MYCEL_REGISTER_OPS(unary) {
  using namespace cpu;
  const auto all = all_dtypes(), numeric = numeric_dtypes(), floats = float_dtypes();

  // Sign, magnitude and powers (integer dtypes kept, wrapping like numpy).
  r.add(unary("neg", "Neg", "Elementwise -x.", signed_dtypes(), same_dtype,
              same_dtype_unary([](auto x) { return wrap_neg(x); })));
  r.add(unary("abs", "Abs", "Elementwise |x|.", all, same_dtype,
              same_dtype_unary([](auto x) -> decltype(x) {
                using C = decltype(x);
                if constexpr (std::is_same_v<C, bool> || is_unsigned_int<C>) return x;
                else if constexpr (std::is_floating_point_v<C>) return std::fabs(x);
                else return x < C(0) ? wrap_neg(x) : x;
              })));
  r.add(unary("sign", "Sign", "Elementwise sign: -1, 0 or 1 (NaN stays NaN).", numeric, same_dtype,
              same_dtype_unary([](auto x) -> decltype(x) {
                using C = decltype(x);
                if constexpr (is_unsigned_int<C>) return x > C(0) ? C(1) : C(0);
                else return x > C(0) ? C(1) : (x < C(0) ? C(-1) : x);
              })));
  r.add(unary("square", "Square", "Elementwise x * x.", numeric, same_dtype,
              same_dtype_unary([](auto x) -> decltype(x) { return wrap_mul(x, x); })));
  r.add(unary("reciprocal", "Reciprocal", "Elementwise 1 / x.", floats, same_dtype,
              float_unary([](auto x) { return decltype(x)(1) / x; })));
  r.add(unary("sqrt", "Sqrt", "Elementwise square root.", all, float_dtype,
              float_unary([](auto x) { return std::sqrt(x); })));
  r.add(unary("rsqrt", "Rsqrt", "Elementwise 1 / sqrt(x).", all, float_dtype,
              float_unary([](auto x) { return decltype(x)(1) / std::sqrt(x); })));

  // Exponentials and logarithms.
  r.add(unary("exp", "Exp", "Elementwise e**x.", all, float_dtype,
              float_unary([](auto x) { return fast_exp(x); })));
  r.add(unary("expm1", "Expm1", "Elementwise e**x - 1, accurate near 0.", all, float_dtype,
              float_unary([](auto x) { return std::expm1(x); })));
  r.add(unary("log", "Log", "Elementwise natural logarithm.", all, float_dtype,
              float_unary([](auto x) { return std::log(x); })));
  r.add(unary("log1p", "Log1p", "Elementwise log(1 + x), accurate near 0.", all, float_dtype,
              float_unary([](auto x) { return std::log1p(x); })));

  // Trigonometric and hyperbolic.
  r.add(unary("sin", "Sin", "Elementwise sine.", all, float_dtype,
              float_unary([](auto x) { return std::sin(x); })));
  r.add(unary("cos", "Cos", "Elementwise cosine.", all, float_dtype,
              float_unary([](auto x) { return std::cos(x); })));
  r.add(unary("tan", "Tan", "Elementwise tangent.", all, float_dtype,
              float_unary([](auto x) { return std::tan(x); })));
  r.add(unary("tanh", "Tanh", "Elementwise hyperbolic tangent.", floats, same_dtype,
              float_unary([](auto x) { return fast_tanh(x); })));
  r.add(unary("erf", "Erf", "Elementwise Gauss error function.", floats, same_dtype,
              float_unary([](auto x) { return std::erf(x); })));

  // Activations (float only).
  r.add(unary("sigmoid", "Sigmoid", "Elementwise 1 / (1 + e**-x).", floats, same_dtype,
              float_unary([](auto x) { return sigmoid(x); })));
  r.add(unary("silu", "SiLU", "Elementwise x * sigmoid(x).", floats, same_dtype,
              float_unary([](auto x) { return x * sigmoid(x); })));
  r.add(unary("relu", "ReLU", "Elementwise max(x, 0) (NaN stays NaN).", signed_dtypes(), same_dtype,
              same_dtype_unary([](auto x) { return x < decltype(x)(0) ? decltype(x)(0) : x; })));
  r.add(unary("relu6", "ReLU6", "Elementwise min(max(x, 0), 6) (NaN stays NaN).", floats,
              same_dtype,
              float_unary([](auto x) {
                using C = decltype(x);
                return x < C(0) ? C(0) : (x > C(6) ? C(6) : x);
              })));
  r.add(unary("leaky_relu", "LeakyReLU", "Elementwise x if x > 0 else alpha * x.", floats,
              same_dtype,
              float_unary_attrs([](const Attrs& a, auto tag) {
                using C = decltype(tag);
                C alpha = C(a.get_float("alpha"));
                return [alpha](C x) { return x > C(0) ? x : alpha * x; };
              }),
              "todo", {{"alpha", AttrKind::kFloat, 0.2, false, {"negative_slope"}}}));
  r.add(unary("elu", "Elu", "Elementwise x if x > 0 else alpha * (e**x - 1).", floats, same_dtype,
              float_unary_attrs([](const Attrs& a, auto tag) {
                using C = decltype(tag);
                C alpha = C(a.get_float("alpha"));
                return [alpha](C x) { return x > C(0) ? x : alpha * std::expm1(x); };
              }),
              "todo", {{"alpha", AttrKind::kFloat, 1.0, false, {}}}));
  r.add(unary("gelu", "GeLU",
              "Elementwise x * Phi(x): approximate='none' (erf form) or 'tanh'.", floats,
              gelu_infer, gelu_kernel, "todo",
              {{"approximate", AttrKind::kStr, std::string("none"), false, {}}}));
  r.add(unary("softplus", "Softplus",
              "Elementwise log(1 + e**(beta*x)) / beta; x where beta*x > threshold (as torch).",
              floats, same_dtype,
              float_unary_attrs([](const Attrs& a, auto tag) {
                using C = decltype(tag);
                C beta = C(a.get_float("beta")), threshold = C(a.get_float("threshold"));
                return [beta, threshold](C x) {
                  C bx = beta * x;
                  return bx > threshold ? x : std::log1p(std::exp(bx)) / beta;
                };
              }),
              "todo", {{"beta", AttrKind::kFloat, 1.0, false, {}},
               {"threshold", AttrKind::kFloat, 20.0, false, {}}}));

  // Rounding (integer dtypes kept; round is half to even like numpy).
  r.add(unary("floor", "Floor", "Elementwise floor.", numeric, same_dtype,
              same_dtype_unary([](auto x) -> decltype(x) {
                if constexpr (std::is_floating_point_v<decltype(x)>) return std::floor(x);
                else return x;
              })));
  r.add(unary("ceil", "Ceil", "Elementwise ceiling.", numeric, same_dtype,
              same_dtype_unary([](auto x) -> decltype(x) {
                if constexpr (std::is_floating_point_v<decltype(x)>) return std::ceil(x);
                else return x;
              })));
  r.add(unary("round", "Round", "Elementwise rounding to the nearest integer, ties to even.",
              numeric, same_dtype,
              same_dtype_unary([](auto x) -> decltype(x) {
                // std::rint in the default rounding mode: ties to even, and it vectorizes.
                if constexpr (std::is_floating_point_v<decltype(x)>) return std::rint(x);
                else return x;
              })));

  // Predicates (bool output, not differentiable).
  r.add(unary("logical_not", "LogicalNot", "Elementwise not x (nonzero is true).", all, bool_dtype,
              predicate_unary([](auto x) { return x == decltype(x)(0); }), "none"));
  r.add(unary("isnan", "IsNan", "Elementwise test for NaN.", all, bool_dtype,
              predicate_unary([](auto x) { return is_nan(x); }), "none"));
  r.add(unary("isinf", "IsInf", "Elementwise test for +inf or -inf.", all, bool_dtype,
              predicate_unary([](auto x) {
                using C = decltype(x);
                if constexpr (std::is_floating_point_v<C>) return std::fabs(x) == C(INFINITY);
                else return false;
              }), "none"));
  r.add(unary("isfinite", "IsFinite", "Elementwise test for a finite value (not NaN or inf).", all,
              bool_dtype,
              predicate_unary([](auto x) {
                if constexpr (std::is_floating_point_v<decltype(x)>) return x - x == decltype(x)(0);
                else return true;
              }), "none"));
}

}  // namespace mycel
