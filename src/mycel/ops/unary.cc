// Unary elementwise ops. Each op: name, class, doc, dtypes, output-dtype rule and a scalar functor.
// Output dtypes follow numpy: transcendental functions of ints/bools give floats (int8 -> float16,
// int32 -> float64), abs/neg/sign/square/floor/ceil/round keep the dtype, predicates give bool.
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>

#include "mycel/kernels/cpu/shape.h"
#include "mycel/kernels/cpu/unary.h"
#include "mycel/ops/bprop_complex.h"
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

// abs/real/imag of complex64 give float32, of complex128 float64; other types keep theirs.
std::vector<TensorMeta> real_of_complex(const InferContext& c) {
  DType t = c.in(0).dtype;
  if (t == DType::complex64) t = DType::float32;
  if (t == DType::complex128) t = DType::float64;
  return {{c.in(0).shape, t}};
}

// y = f(z) for complex z, y its real type.
template <class F>
void complex_to_real(const KernelContext& ctx, F f) {
  visit_any_dtype(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_complex_v<T>) {
      using V = typename T::value_type;
      cpu::unary_map<T, V>(ctx.in(0), ctx.out(0), [&f](T z) { return static_cast<V>(f(z)); });
    }
  });
}

std::vector<DType> with_extended_dtypes(std::vector<DType> v) {
  for (DType t : {DType::uint16, DType::uint32, DType::uint64, DType::complex64, DType::complex128})
    v.push_back(t);
  return v;
}

std::vector<DType> plus(std::vector<DType> v, std::initializer_list<DType> extra) {
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}
std::vector<DType> plus(std::vector<DType> v, const std::vector<DType>& extra) {
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}
constexpr std::initializer_list<DType> kUnsigned = {DType::uint16, DType::uint32, DType::uint64};
constexpr std::initializer_list<DType> kComplex = {DType::complex64, DType::complex128};

// `core` on the other types; on complex z, f(z) elementwise into the same type (or bool for
// predicates, kBool).
template <bool kBool = false, class F>
KernelFn or_complex(KernelFn core, F f) {
  return [core, f](const KernelContext& ctx) {
    DType t = ctx.in(0).dtype();
    if (!is_complex(t)) return core(ctx);
    visit_any_dtype(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using O = std::conditional_t<kBool, bool, T>;
      if constexpr (is_complex_v<T>)
        cpu::unary_map<T, O>(ctx.in(0), ctx.out(0), [&f](T z) { return static_cast<O>(f(z)); });
    });
  };
}

// `core` on the other types; on uint16/32/64 x, f(x) elementwise into the same type (or bool).
template <bool kBool = false, class F>
KernelFn or_unsigned(KernelFn core, F f) {
  return [core, f](const KernelContext& ctx) {
    DType t = ctx.in(0).dtype();
    if (!is_extended(t) || is_complex(t)) return core(ctx);
    visit_any_dtype(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using O = std::conditional_t<kBool, bool, T>;
      if constexpr (std::is_unsigned_v<T> && sizeof(T) >= 2)
        cpu::unary_map<T, O>(ctx.in(0), ctx.out(0), [&f](T x) { return static_cast<O>(f(x)); });
    });
  };
}

// 1 / x of an integer x, truncated toward 0 (only 1 and -1 have a nonzero reciprocal); 1 / 0 is
// the type's minimum (0 for unsigned; numpy's answer for int32/int64). Non-integer x (the float
// compute types the dtype visitor also instantiates) never reach it.
template <class T>
T int_reciprocal(T x) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (x == T(0)) return std::numeric_limits<T>::min();
    return x == T(1) ? T(1) : (std::is_signed_v<T> && x == T(-1) ? x : T(0));
  } else {
    return x;
  }
}

// numpy's expm1 of complex z = x + iy: (expm1(x) cos y - 2 sin^2(y/2)) + i e^x sin y, accurate
// near 0 where exp(z) - 1 cancels.
template <class V>
std::complex<V> complex_expm1(std::complex<V> z) {
  V x = z.real(), y = z.imag(), h = std::sin(y / V(2));
  return {std::expm1(x) * std::cos(y) - V(2) * h * h, std::exp(x) * std::sin(y)};
}

std::vector<TensorMeta> gelu_infer(const InferContext& c) {
  const std::string& a = c.attrs.get_str("approximate");
  if (a != "none" && a != "tanh")
    MYCEL_THROW(ValueError, "[gelu] attribute 'approximate' must be 'none' or 'tanh', got '", a,
                "'");
  return {c.in(0)};
}

OpDef unary(std::string name, std::string cls, std::string doc, std::vector<DType> dtypes,
            InferFn infer, KernelFn kernel, std::string grad = "bprop",
            std::vector<AttrDef> attrs = {}) {
  OpDef d = make_op(std::move(name), std::move(cls), std::move(doc), {{"x"}}, std::move(attrs),
                    std::move(infer), std::move(kernel), std::move(dtypes), std::move(grad));
  d.elementwise = true;
  return d;
}

// Numeric dtypes without bool and uint8 (abs of uint8 is the identity but numpy supports it).
template <class T>
constexpr bool is_unsigned_int = std::is_unsigned_v<T> && !std::is_same_v<T, bool>;

// gelu(x) = x * Phi(x), exactly (erf) or with the tanh approximation.
template <class T>
T gelu_erf(T x) {
  return T(0.5) * x * (T(1) + cpu::fast_erf(x * T(0.70710678118654752440)));
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
    if (tanh_form)
      cpu::unary_map<T, T>(ctx.in(0), ctx.out(0), [](C x) { return gelu_tanh(x); });
    else
      cpu::unary_map<T, T>(ctx.in(0), ctx.out(0), [](C x) { return gelu_erf(x); });
  });
}

}  // namespace

MYCEL_REGISTER_OPS(unary) {
  using namespace cpu;
  const auto all = all_dtypes(), numeric = numeric_dtypes(), floats = float_dtypes();

  // Sign, magnitude and powers (integer dtypes kept, wrapping like numpy).
  {
    // complex64/128 negate apart from the core kernel (its functors assume real values).
    // Unsigned x wraps to 2**bits - x, as numpy's negative and MindSpore's Neg on uint8..uint64.
    KernelFn core = or_unsigned(same_dtype_unary([](auto x) { return wrap_neg(x); }),
                                [](auto x) { return wrap_neg(x); });
    auto dtypes = plus(plus(signed_dtypes(), {DType::uint8}), kUnsigned);
    dtypes.push_back(DType::complex64);
    dtypes.push_back(DType::complex128);
    r.add(with_traits(unary("neg", "Neg", "Elementwise -x.", dtypes, same_dtype,
                            [core](const KernelContext& ctx) {
                              DType t = ctx.in(0).dtype();
                              if (!is_complex(t)) return core(ctx);
                              visit_any_dtype(t, [&](auto tag) {
                                using T = typename decltype(tag)::type;
                                if constexpr (is_complex_v<T>)
                                  cpu::unary_map<T, T>(ctx.in(0), ctx.out(0),
                                                       [](T x) { return -x; });
                              });
                            }),
                      ew_step(cpu::EwOp::kNeg, kKeepsZero)));
  }
  {
    // The wider unsigned types keep their value; complex values give their modulus (a float).
    KernelFn core = same_dtype_unary([](auto x) -> decltype(x) {
      using C = decltype(x);
      if constexpr (std::is_same_v<C, bool> || is_unsigned_int<C>)
        return x;
      else if constexpr (std::is_floating_point_v<C>)
        return std::fabs(x);
      else
        return x < C(0) ? wrap_neg(x) : x;
    });
    r.add(with_traits(unary("abs", "Abs", "Elementwise |x| (the modulus, a float, for complex x).",
                            with_extended_dtypes(all), real_of_complex,
                            [core](const KernelContext& ctx) {
                              DType t = ctx.in(0).dtype();
                              if (!is_extended(t)) return core(ctx);
                              if (!is_complex(t)) return cpu::copy_all(ctx.in(0), ctx.out(0));
                              complex_to_real(ctx, [](auto z) { return std::abs(z); });
                            }),
                      ew_step(cpu::EwOp::kAbs, kKeepsZero)));
  }
  // Complex parts (numpy's real/imag/conj): real x is its own real part and conjugate, and has
  // imaginary part 0.
  r.add(unary("real", "Real", "Elementwise real part (x itself for real x).",
              with_extended_dtypes(all), real_of_complex, [](const KernelContext& ctx) {
                if (!is_complex(ctx.in(0).dtype())) return cpu::copy_all(ctx.in(0), ctx.out(0));
                complex_to_real(ctx, [](auto z) { return z.real(); });
              }));
  r.add(unary("imag", "Imag", "Elementwise imaginary part (0 for real x).",
              with_extended_dtypes(all), real_of_complex, [](const KernelContext& ctx) {
                Tensor& out = ctx.out(0);
                if (!is_complex(ctx.in(0).dtype())) {  // all-zero bytes: 0 in every type
                  if (out.nbytes()) std::memset(out.data(), 0, out.nbytes());
                  return;
                }
                complex_to_real(ctx, [](auto z) { return z.imag(); });
              }));
  r.add(unary("conj", "Conj", "Elementwise complex conjugate (x itself for real x).",
              with_extended_dtypes(all), same_dtype, [](const KernelContext& ctx) {
                DType t = ctx.in(0).dtype();
                if (!is_complex(t)) return cpu::copy_all(ctx.in(0), ctx.out(0));
                visit_any_dtype(t, [&](auto tag) {
                  using T = typename decltype(tag)::type;
                  if constexpr (is_complex_v<T>)
                    cpu::unary_map<T, T>(ctx.in(0), ctx.out(0), [](T z) { return std::conj(z); });
                });
              }));
  // Of complex z: z / |z| (0 at 0), numpy 2's sign.
  r.add(unary("sign", "Sign", "Elementwise sign: -1, 0 or 1 (NaN stays NaN); z / |z| of complex z.",
              plus(plus(numeric, kUnsigned), kComplex), same_dtype,
              or_complex(or_unsigned(same_dtype_unary([](auto x) -> decltype(x) {
                                       using C = decltype(x);
                                       if constexpr (is_unsigned_int<C>)
                                         return x > C(0) ? C(1) : C(0);
                                       else
                                         return x > C(0) ? C(1) : (x < C(0) ? C(-1) : x);
                                     }),
                                     [](auto x) { return x > 0 ? 1 : 0; }),
                         [](auto z) { return z == decltype(z)(0) ? z : z / std::abs(z); }),
              "none"));
  r.add(with_traits(unary("square", "Square", "Elementwise x * x (wrapping for integers).",
                          plus(plus(numeric, kUnsigned), kComplex), same_dtype,
                          or_complex(or_unsigned(same_dtype_unary([](auto x) -> decltype(x) {
                                                   return wrap_mul(x, x);
                                                 }),
                                                 [](auto x) { return wrap_mul(x, x); }),
                                     [](auto z) { return z * z; })),
                    ew_step(cpu::EwOp::kSquare, kKeepsZero)));
  r.add(with_traits(
      unary("reciprocal", "Reciprocal",
            "Elementwise 1 / x; integers keep their dtype (1 / x truncated, as numpy and "
            "MindSpore's Inv; 1 / 0, undefined there, gives the type's minimum, 0 for unsigned).",
            plus(plus(plus(floats, integer_dtypes()), kUnsigned), kComplex), same_dtype,
            [](const KernelContext& ctx) {
              static const KernelFn real =
                  or_complex(float_unary([](auto x) { return decltype(x)(1) / x; }),
                             [](auto z) { return decltype(z)(1) / z; });
              static const KernelFn ints =
                  or_unsigned(same_dtype_unary([](auto x) { return int_reciprocal(x); }),
                              [](auto x) { return int_reciprocal(x); });
              DType t = ctx.in(0).dtype();
              return (is_floating(t) || is_complex(t)) ? real(ctx) : ints(ctx);
            }),
      ew_step(cpu::EwOp::kReciprocal)));
  {  // MindSpore's Invert: bitwise not of integers (two's complement), logical not of bools.
    std::vector<DType> bits = plus(integer_dtypes(), kUnsigned);
    bits.push_back(DType::bool_);
    r.add(unary("invert", "Invert", "Elementwise bitwise not (~x); not x for bool.", bits,
                same_dtype,
                or_unsigned(same_dtype_unary([](auto x) -> decltype(x) {
                              using C = decltype(x);
                              if constexpr (std::is_same_v<C, bool>)
                                return !x;
                              else if constexpr (std::is_integral_v<C>)
                                return static_cast<C>(~x);
                              else
                                return x;  // float dtypes are not registered for invert
                            }),
                            [](auto x) { return static_cast<decltype(x)>(~x); }),
                "none"));
  }
  // Transcendental functions take every type: integers (the wider unsigned ones too) give floats
  // as in numpy; complex values take the principal branch (std::complex's, as numpy's).
  const auto any = with_extended_dtypes(all);
  r.add(with_traits(unary("sqrt", "Sqrt", "Elementwise square root.", any, float_dtype,
                          or_complex(float_unary([](auto x) { return std::sqrt(x); }),
                                     [](auto z) { return std::sqrt(z); })),
                    ew_step(cpu::EwOp::kSqrt)));
  r.add(unary("rsqrt", "Rsqrt", "Elementwise 1 / sqrt(x).", any, float_dtype,
              or_complex(float_unary([](auto x) { return decltype(x)(1) / std::sqrt(x); }),
                         [](auto z) { return decltype(z)(1) / std::sqrt(z); })));

  // Exponentials and logarithms.
  r.add(with_traits(unary("exp", "Exp", "Elementwise e**x.", any, float_dtype,
                          or_complex(float_unary([](auto x) { return fast_exp(x); }),
                                     [](auto z) { return std::exp(z); })),
                    ew_step(cpu::EwOp::kExp)));
  r.add(unary("expm1", "Expm1", "Elementwise e**x - 1, accurate near 0.", any, float_dtype,
              or_complex(float_unary([](auto x) { return std::expm1(x); }),
                         [](auto z) { return complex_expm1(z); })));
  r.add(unary("log", "Log", "Elementwise natural logarithm.", any, float_dtype,
              or_complex(float_unary([](auto x) { return std::log(x); }),
                         [](auto z) { return std::log(z); })));
  r.add(unary("log1p", "Log1p", "Elementwise log(1 + x), accurate near 0.", any, float_dtype,
              or_complex(float_unary([](auto x) { return std::log1p(x); }),
                         [](auto z) { return std::log(decltype(z)(1) + z); })));

  // Trigonometric and hyperbolic.
  r.add(unary("sin", "Sin", "Elementwise sine.", any, float_dtype,
              or_complex(float_unary([](auto x) { return std::sin(x); }),
                         [](auto z) { return std::sin(z); })));
  r.add(unary("cos", "Cos", "Elementwise cosine.", any, float_dtype,
              or_complex(float_unary([](auto x) { return std::cos(x); }),
                         [](auto z) { return std::cos(z); })));
  r.add(unary("tan", "Tan", "Elementwise tangent.", any, float_dtype,
              or_complex(float_unary([](auto x) { return std::tan(x); }),
                         [](auto z) { return std::tan(z); })));
  r.add(with_traits(
      unary("tanh", "Tanh", "Elementwise hyperbolic tangent.", plus(floats, kComplex), same_dtype,
            or_complex(float_unary([](auto x) { return fast_tanh(x); }),
                       [](auto z) { return std::tanh(z); })),
      ew_step(cpu::EwOp::kTanh)));
  r.add(with_traits(unary("erf", "Erf", "Elementwise Gauss error function.", floats, same_dtype,
                          float_unary([](auto x) { return cpu::fast_erf(x); })),
                    ew_step(cpu::EwOp::kErf)));

  // Activations (float only).
  r.add(with_traits(unary("sigmoid", "Sigmoid", "Elementwise 1 / (1 + e**-x).",
                          plus(floats, kComplex), same_dtype,
                          or_complex(float_unary([](auto x) { return sigmoid(x); }),
                                     [](auto z) {
                                       using Z = decltype(z);
                                       return Z(1) / (Z(1) + std::exp(-z));
                                     })),
                    ew_step(cpu::EwOp::kSigmoid)));
  r.add(unary("softsign", "Softsign", "Elementwise x / (1 + |x|).", floats, same_dtype,
              float_unary([](auto x) { return x / (decltype(x)(1) + std::fabs(x)); })));
  r.add(unary("silu", "SiLU", "Elementwise x * sigmoid(x).", floats, same_dtype,
              float_unary([](auto x) { return x * sigmoid(x); })));
  // ReLU takes MindSpore's every numeric type: unsigned values are their own ReLU.
  r.add(with_traits(unary("relu", "ReLU", "Elementwise max(x, 0) (NaN stays NaN).",
                          plus(plus(signed_dtypes(), {DType::uint8}), kUnsigned), same_dtype,
                          or_unsigned(same_dtype_unary([](auto x) {
                                        return x < decltype(x)(0) ? decltype(x)(0) : x;
                                      }),
                                      [](auto x) { return x; })),
                    ew_step(cpu::EwOp::kRelu, kKeepsZero), as_post_op(kPostRelu)));
  r.add(with_traits(unary("relu6", "ReLU6", "Elementwise min(max(x, 0), 6) (NaN stays NaN).",
                          floats, same_dtype, float_unary([](auto x) {
                            using C = decltype(x);
                            return x < C(0) ? C(0) : (x > C(6) ? C(6) : x);
                          })),
                    as_post_op(kPostRelu6)));
  r.add(unary("leaky_relu", "LeakyReLU", "Elementwise x if x > 0 else alpha * x.", floats,
              same_dtype, float_unary_attrs([](const Attrs& a, auto tag) {
                using C = decltype(tag);
                C alpha = C(a.get_float("alpha"));
                return [alpha](C x) { return x > C(0) ? x : alpha * x; };
              }),
              "bprop", {{"alpha", AttrKind::kFloat, 0.2, false, {"negative_slope"}}}));
  r.add(unary("elu", "Elu", "Elementwise x if x > 0 else alpha * (e**x - 1).", floats, same_dtype,
              float_unary_attrs([](const Attrs& a, auto tag) {
                using C = decltype(tag);
                C alpha = C(a.get_float("alpha"));
                return [alpha](C x) { return x > C(0) ? x : alpha * std::expm1(x); };
              }),
              "bprop", {{"alpha", AttrKind::kFloat, 1.0, false, {}}}));
  r.add(unary("gelu", "GeLU", "Elementwise x * Phi(x): approximate='none' (erf form) or 'tanh'.",
              floats, gelu_infer, gelu_kernel, "bprop",
              {{"approximate", AttrKind::kStr, std::string("none"), false, {}}}));
  r.add(unary("softplus", "Softplus",
              "Elementwise log(1 + e**(beta*x)) / beta; x where beta*x > threshold (as torch).",
              floats, same_dtype, float_unary_attrs([](const Attrs& a, auto tag) {
                using C = decltype(tag);
                C beta = C(a.get_float("beta")), threshold = C(a.get_float("threshold"));
                return [beta, threshold](C x) {
                  C bx = beta * x;
                  return bx > threshold ? x : std::log1p(std::exp(bx)) / beta;
                };
              }),
              "bprop",
              {{"beta", AttrKind::kFloat, 1.0, false, {}},
               {"threshold", AttrKind::kFloat, 20.0, false, {}}}));

  // Rounding (integer dtypes kept; round is half to even like numpy). Piecewise constant, so
  // not differentiable: their gradient is zero almost everywhere (policy "none").
  // Integers (the wider unsigned ones too) round to themselves.
  const auto rounding = plus(numeric, kUnsigned);
  auto keep_unsigned = [](KernelFn core) { return or_unsigned(core, [](auto x) { return x; }); };
  r.add(unary("floor", "Floor", "Elementwise floor.", rounding, same_dtype,
              keep_unsigned(same_dtype_unary([](auto x) -> decltype(x) {
                if constexpr (std::is_floating_point_v<decltype(x)>)
                  return std::floor(x);
                else
                  return x;
              })),
              "none"));
  r.add(unary("ceil", "Ceil", "Elementwise ceiling.", rounding, same_dtype,
              keep_unsigned(same_dtype_unary([](auto x) -> decltype(x) {
                if constexpr (std::is_floating_point_v<decltype(x)>)
                  return std::ceil(x);
                else
                  return x;
              })),
              "none"));
  r.add(unary("round", "Round", "Elementwise rounding to the nearest integer, ties to even.",
              rounding, same_dtype, keep_unsigned(same_dtype_unary([](auto x) -> decltype(x) {
                // std::rint in the default rounding mode: ties to even, and it vectorizes.
                if constexpr (std::is_floating_point_v<decltype(x)>)
                  return std::rint(x);
                else
                  return x;
              })),
              "none"));

  // Predicates (bool output, not differentiable); a complex value is NaN or inf when a part is.
  auto predicate = [&](const char* name, const char* cls, const char* doc, KernelFn core, auto u,
                       auto c) {
    r.add(unary(name, cls, doc, any, bool_dtype, or_complex<true>(or_unsigned<true>(core, u), c),
                "none"));
  };
  predicate(
      "logical_not", "LogicalNot", "Elementwise not x (nonzero is true).",
      predicate_unary([](auto x) { return x == decltype(x)(0); }), [](auto x) { return x == 0; },
      [](auto z) { return z == decltype(z)(0); });
  predicate(
      "isnan", "IsNan", "Elementwise test for NaN.",
      predicate_unary([](auto x) { return is_nan(x); }), [](auto) { return false; },
      [](auto z) { return std::isnan(z.real()) || std::isnan(z.imag()); });
  predicate(
      "isinf", "IsInf", "Elementwise test for +inf or -inf.", predicate_unary([](auto x) {
        using C = decltype(x);
        if constexpr (std::is_floating_point_v<C>)
          return std::fabs(x) == C(INFINITY);
        else
          return false;
      }),
      [](auto) { return false; },
      [](auto z) { return std::isinf(z.real()) || std::isinf(z.imag()); });
  predicate(
      "isfinite", "IsFinite", "Elementwise test for a finite value (not NaN or inf).",
      predicate_unary([](auto x) {
        if constexpr (std::is_floating_point_v<decltype(x)>)
          return x - x == decltype(x)(0);
        else
          return true;
      }),
      [](auto) { return true; },
      [](auto z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); });
}

// Backward rules, written with differentiable ops so that they differentiate again; rules reuse
// the forward output where it is cheaper (exp, tanh, sigmoid). Integer and bool inputs (promoted
// to float by sqrt, exp, ...) get no gradient.
MYCEL_REGISTER_BPROPS(unary) {
  // f(g, x, out, dout, c) -> dx, where c(v) is the constant v in x's dtype.
  using Scalar = std::function<GradVar(double)>;
  using Rule = std::function<GradVar(BpropBuilder&, GradVar, GradVar, GradVar, const Scalar&)>;
  auto rule = [&b](const char* name, Rule f) {
    b.add(name, [f](BpropBuilder& g) -> std::vector<GradVar> {
      GradVar x = g.input(0);
      if (!bprop::is_float(g, x)) return {GradVar()};
      DType t = g.meta(x).dtype;
      Scalar c = [&g, t](double v) { return g.scalar(v, t); };
      return {f(g, x, g.out(), g.dout(), c)};
    });
  };
  // The same for the rules that also take complex x (bprop_complex.h's convention).
  auto crule = [&b](const char* name, Rule f) {
    b.add(name, [f](BpropBuilder& g) -> std::vector<GradVar> {
      GradVar x = g.input(0);
      if (!bprop::is_diff(g, x)) return {GradVar()};
      DType t = g.meta(x).dtype;
      Scalar c = [&g, t](double v) { return g.scalar(v, t); };
      return {f(g, x, g.out(), g.dout(), c)};
    });
  };
  auto call1 = [](BpropBuilder& g, const char* op, GradVar v) { return g.call(op, {v}); };
  auto is_c = [](BpropBuilder& g, GradVar x) { return is_complex(g.meta(x).dtype); };
  auto where = [](BpropBuilder& g, GradVar cond, GradVar a, GradVar b) {
    return g.call("select", {cond, a, b});
  };
  auto positive = [](BpropBuilder& g, GradVar x, const Scalar& c) {
    return g.call("greater", {x, c(0)});
  };

  crule("neg",
        [](BpropBuilder& g, GradVar, GradVar, GradVar d, const Scalar&) { return g.neg(d); });
  crule("abs", [call1, is_c](BpropBuilder& g, GradVar x, GradVar y, GradVar d, const Scalar&) {
    if (!is_c(g, x)) return g.mul(d, call1(g, "sign", x));  // 0 at x == 0 (numpy-like libs)
    // |z|: d z / |z| (0 at z == 0).
    GradVar zero = g.call("equal", {y, g.zeros_like(y)});
    GradVar safe = g.call("select", {zero, g.ones_like(y), y});
    GradVar scale = g.call("select", {zero, g.zeros_like(y), g.div(d, safe)});
    return g.mul(x, g.call("complex", {scale, g.zeros_like(scale)}));
  });
  // Of real x: real and conj are the identity, imag a constant. Of complex x: Re z gives d,
  // Im z gives i d, conj z gives conj(d).
  crule("real", [is_c](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar&) {
    return is_c(g, x) ? g.call("complex", {d, g.zeros_like(d)}) : d;
  });
  crule("conj", [is_c](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar&) {
    return is_c(g, x) ? g.call("conj", {d}) : d;
  });
  crule("imag", [is_c](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar&) {
    return is_c(g, x) ? g.call("complex", {g.zeros_like(d), d}) : g.call("zeros_like", {x});
  });
  rule("square", [](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar& c) {
    return g.mul(d, g.mul(x, c(2)));
  });
  rule("reciprocal", [](BpropBuilder& g, GradVar, GradVar y, GradVar d, const Scalar&) {
    return g.neg(g.mul(d, g.mul(y, y)));
  });
  rule("sqrt", [](BpropBuilder& g, GradVar, GradVar y, GradVar d, const Scalar& c) {
    return g.div(g.mul(d, c(0.5)), y);
  });
  rule("rsqrt", [](BpropBuilder& g, GradVar, GradVar y, GradVar d, const Scalar& c) {
    return g.mul(d, g.mul(c(-0.5), g.mul(y, g.mul(y, y))));  // d x^-1/2 = -x^-3/2 / 2
  });
  crule("exp", [](BpropBuilder& g, GradVar x, GradVar y, GradVar d, const Scalar&) {
    return g.mul(d, bprop::conj_if_complex(g, y, g.meta(x).dtype));
  });
  rule("expm1", [](BpropBuilder& g, GradVar, GradVar y, GradVar d, const Scalar& c) {
    return g.mul(d, g.add(y, c(1)));
  });
  rule("log",
       [](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar&) { return g.div(d, x); });
  rule("log1p", [](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar& c) {
    return g.div(d, g.add(x, c(1)));
  });
  rule("sin", [call1](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar&) {
    return g.mul(d, call1(g, "cos", x));
  });
  rule("cos", [call1](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar&) {
    return g.neg(g.mul(d, call1(g, "sin", x)));
  });
  rule("tan", [](BpropBuilder& g, GradVar, GradVar y, GradVar d, const Scalar& c) {
    return g.mul(d, g.add(c(1), g.mul(y, y)));
  });
  rule("tanh", [](BpropBuilder& g, GradVar, GradVar y, GradVar d, const Scalar& c) {
    return g.mul(d, g.sub(c(1), g.mul(y, y)));
  });
  rule("erf", [call1](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar& c) {
    const double two_over_sqrt_pi = 1.12837916709551257390;
    return g.mul(d, g.mul(c(two_over_sqrt_pi), call1(g, "exp", g.neg(g.mul(x, x)))));
  });
  rule("sigmoid", [](BpropBuilder& g, GradVar, GradVar y, GradVar d, const Scalar& c) {
    return g.mul(d, g.mul(y, g.sub(c(1), y)));
  });
  rule("softsign", [call1](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar& c) {
    GradVar den = g.add(c(1), call1(g, "abs", x));  // d/dx x / (1 + |x|) = 1 / (1 + |x|)^2
    return g.div(d, g.mul(den, den));
  });
  rule("silu", [call1](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar& c) {
    GradVar s = call1(g, "sigmoid", x);  // d(x s) = s (1 + x (1 - s))
    return g.mul(d, g.mul(s, g.add(c(1), g.mul(x, g.sub(c(1), s)))));
  });
  // Kinks: relu, relu6 and leaky_relu take the gradient of the left piece at the kink (0 at x ==
  // 0).
  // relu's mask reads its output (y > 0 exactly where x > 0, NaN included), so x need not stay
  // alive: the backend can then fuse relu into the conv2d/dense that produces x when training.
  rule("relu", [positive](BpropBuilder& g, GradVar, GradVar y, GradVar d, const Scalar& c) {
    return g.mul(d, bprop::as_mask(g, positive(g, y, c), g.meta(y).dtype));
  });
  // relu6: the left piece at both kinks, so 0 at x == 0 and 1 at x == 6 (MindSpore's ReLU6Grad).
  rule("relu6", [positive](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar& c) {
    GradVar inside = g.call("logical_and", {positive(g, x, c), g.call("less_equal", {x, c(6)})});
    return g.mul(d, bprop::as_mask(g, inside, g.meta(x).dtype));
  });
  rule("leaky_relu",
       [where, positive](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar& c) {
         return where(g, positive(g, x, c), d, g.mul(d, c(g.attrs().get_float("alpha"))));
       });
  rule("elu", [where, positive](BpropBuilder& g, GradVar x, GradVar y, GradVar d, const Scalar& c) {
    // For x <= 0, y = alpha (e^x - 1), so dy/dx = alpha e^x = y + alpha.
    return where(g, positive(g, x, c), d, g.mul(d, g.add(y, c(g.attrs().get_float("alpha")))));
  });
  rule("gelu", [call1](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar& c) {
    if (g.attrs().get_str("approximate") == "tanh") {
      // y = x (1 + t) / 2 with t = tanh(k (x + a x^3)):
      // dy/dx = (1 + t) / 2 + x (1 - t^2) k (1 + 3 a x^2) / 2.
      const double k = 0.79788456080286535588, a = 0.044715;
      GradVar x2 = g.mul(x, x);
      GradVar t = call1(g, "tanh", g.mul(c(k), g.add(x, g.mul(c(a), g.mul(x2, x)))));
      GradVar du = g.mul(c(k), g.add(c(1), g.mul(c(3 * a), x2)));
      GradVar dy = g.add(g.mul(c(0.5), g.add(c(1), t)),
                         g.mul(g.mul(c(0.5), x), g.mul(g.sub(c(1), g.mul(t, t)), du)));
      return g.mul(d, dy);
    }
    // y = x Phi(x): dy/dx = Phi(x) + x phi(x).
    const double inv_sqrt2 = 0.70710678118654752440, inv_sqrt_2pi = 0.39894228040143267794;
    GradVar cdf = g.mul(c(0.5), g.add(c(1), call1(g, "erf", g.mul(x, c(inv_sqrt2)))));
    GradVar pdf = g.mul(c(inv_sqrt_2pi), call1(g, "exp", g.mul(c(-0.5), g.mul(x, x))));
    return g.mul(d, g.add(cdf, g.mul(x, pdf)));
  });
  rule("softplus", [where, call1](BpropBuilder& g, GradVar x, GradVar, GradVar d, const Scalar& c) {
    // sigmoid(beta x) below the threshold; 1 where the op returns x itself.
    const Attrs& a = g.attrs();
    GradVar bx = g.mul(x, c(a.get_float("beta")));
    GradVar linear = g.call("greater", {bx, c(a.get_float("threshold"))});
    return where(g, linear, d, g.mul(d, call1(g, "sigmoid", bx)));
  });
}

}  // namespace mycel
