// Special functions (MindSpore's math ops over scipy.special's definitions): the Bessel family,
// lgamma/digamma/polygamma, the regularized incomplete gamma functions, and the integer and
// bit-level helpers gcd/lcm/nextafter/population_count. Values come from special_math.h in
// float64; float32 results are rounded once.
#include <bit>
#include <cmath>
#include <type_traits>

#include "mycel/kernels/cpu/elementwise.h"
#include "mycel/kernels/cpu/special_math.h"
#include "mycel/kernels/cpu/unary.h"
#include "mycel/ops/bprop_util.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

namespace sp = cpu::special;

std::vector<DType> f32_f64() { return {DType::float32, DType::float64}; }

std::vector<TensorMeta> same_dtype(const InferContext& c) { return {c.in(0)}; }

OpDef special_unary(std::string name, std::string cls, std::string doc, double (*f)(double),
                    std::string grad = "bprop") {
  OpDef d = make_op(std::move(name), std::move(cls), std::move(doc), {{"input"}}, {}, same_dtype,
                    cpu::float_unary([f](auto x) { return decltype(x)(f(double(x))); }), f32_f64(),
                    std::move(grad));
  d.elementwise = true;
  return d;
}

OpDef special_binary(std::string name, std::string cls, std::string doc, InferFn infer,
                     KernelFn kernel, std::vector<DType> dtypes, std::string grad) {
  OpDef d = make_op(std::move(name), std::move(cls), std::move(doc), {{"input"}, {"other"}}, {},
                    std::move(infer), std::move(kernel), std::move(dtypes), std::move(grad));
  d.promote_inputs = true;
  d.elementwise = true;
  return d;
}

std::vector<TensorMeta> broadcast_same(const InferContext& c) {
  return {infer_broadcast(c, c.in(0).dtype)};
}

// out = f(a, b) in float64 for float32/float64 inputs (already promoted to one dtype).
template <class F>
KernelFn float_binary64(F f) {
  return [f](const KernelContext& ctx) {
    visit_float_dtype(ctx.in(0).dtype(), ctx.op.name.c_str(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      cpu::binary_map<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(0), [&f](auto a, auto b) {
        return static_cast<compute_t<T>>(f(double(a), double(b)));
      });
    });
  };
}

// |x| as the unsigned type of T (INT_MIN included), for Euclid's algorithm.
template <class T>
std::make_unsigned_t<T> magnitude(T x) {
  using U = std::make_unsigned_t<T>;
  if constexpr (std::is_signed_v<T>)
    return x < 0 ? static_cast<U>(U(0) - static_cast<U>(x)) : static_cast<U>(x);
  else
    return x;
}

// numpy's gcd/lcm of integers: gcd is non-negative (wrapping for INT_MIN), lcm(0, x) = 0.
template <class T>
T int_gcd(T a, T b) {
  auto x = magnitude(a), y = magnitude(b);
  while (y != 0) {
    auto r = static_cast<decltype(x)>(x % y);
    x = y;
    y = r;
  }
  return static_cast<T>(x);
}
template <class T>
T int_lcm(T a, T b) {
  auto g = magnitude(int_gcd(a, b));
  if (g == 0) return T(0);
  auto x = magnitude(a), y = magnitude(b);
  return static_cast<T>(static_cast<decltype(x)>(static_cast<decltype(x)>(x / g) * y));
}

template <class F>
KernelFn integer_binary(F f) {
  return [f](const KernelContext& ctx) {
    visit_dtype(ctx.in(0).dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (cpu::is_int_v<T>)
        cpu::binary_map<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(0),
                                 [&f](T a, T b) { return f(a, b); });
    });
  };
}

// polygamma(n, input): n an integer tensor (or whole numbers in a float one: a Python int
// arrives as a float scalar) broadcast against the float input; output input's dtype.
std::vector<TensorMeta> polygamma_infer(const InferContext& c) {
  DType n = c.in(0).dtype, x = c.in(1).dtype;
  if (n != DType::int32 && n != DType::int64 && n != DType::float32 && n != DType::float64)
    MYCEL_THROW(TypeError, "[polygamma] input 'n' must be int32 or int64, got ", dtype_name(n));
  if (x != DType::float32 && x != DType::float64)
    MYCEL_THROW(TypeError, "[polygamma] input 'input' must be float32 or float64, got ",
                dtype_name(x));
  return {infer_broadcast(c, x)};
}

void polygamma_kernel(const KernelContext& ctx) {
  if (is_floating(ctx.in(0).dtype())) {
    Tensor nf = ctx.in(0).to(DType::float64);
    const double* p = nf.data<double>();
    for (int64_t i = 0, e = nf.numel(); i < e; ++i)
      if (!(p[i] == std::floor(p[i]) && p[i] < 1e9))
        MYCEL_THROW(ValueError, "[polygamma] input 'n' must hold whole numbers, got ", p[i]);
  }
  Tensor n = ctx.in(0).to(DType::int64);
  const int64_t* pn = n.data<int64_t>();
  for (int64_t i = 0, e = n.numel(); i < e; ++i)
    if (pn[i] < 0)
      MYCEL_THROW(ValueError, "[polygamma] input 'n' must be non-negative, got ", pn[i]);
  visit_float_dtype(ctx.in(1).dtype(), "polygamma", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::binary_map<int64_t, T, T>(n, ctx.in(1), ctx.out(0), [](int64_t k, auto x) {
      return static_cast<decltype(x)>(sp::polygamma(k, double(x)));
    });
  });
}

// population_count: set bits of each integer's two's-complement pattern, as uint8.
void popcount_kernel(const KernelContext& ctx) {
  visit_dtype(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (cpu::is_int_v<T>)
      cpu::unary_map<T, uint8_t>(ctx.in(0), ctx.out(0), [](auto x) {
        return static_cast<uint8_t>(std::popcount(static_cast<std::make_unsigned_t<T>>(x)));
      });
  });
}

double i0(double x) { return sp::bessel_i0(x); }
double i0e(double x) { return sp::bessel_i0e(x); }
double i1(double x) { return sp::bessel_i1(x); }
double i1e(double x) { return sp::bessel_i1e(x); }
double j0(double x) { return sp::bessel_j0(x); }
double j1(double x) { return sp::bessel_j1(x); }
double y0(double x) { return sp::bessel_y(0, x); }
double y1(double x) { return sp::bessel_y(1, x); }
double k0(double x) { return sp::bessel_k(0, x); }
double k0e(double x) { return sp::bessel_ke(0, x); }
double k1(double x) { return sp::bessel_k(1, x); }
double k1e(double x) { return sp::bessel_ke(1, x); }
double lgamma(double x) { return std::lgamma(x); }

}  // namespace

MYCEL_REGISTER_OPS(special) {
  r.add(special_unary("bessel_i0", "BesselI0", "Modified Bessel function I0.", i0));
  r.add(special_unary("bessel_i0e", "BesselI0e", "Scaled modified Bessel function e^-|x| I0(x).",
                      i0e));
  r.add(special_unary("bessel_i1", "BesselI1", "Modified Bessel function I1.", i1));
  r.add(special_unary("bessel_i1e", "BesselI1e", "Scaled modified Bessel function e^-|x| I1(x).",
                      i1e));
  r.add(special_unary("bessel_j0", "BesselJ0", "Bessel function of the first kind J0.", j0));
  r.add(special_unary("bessel_j1", "BesselJ1", "Bessel function of the first kind J1.", j1));
  r.add(special_unary("bessel_y0", "BesselY0",
                      "Bessel function of the second kind Y0 (NaN for x < 0).", y0));
  r.add(special_unary("bessel_y1", "BesselY1",
                      "Bessel function of the second kind Y1 (NaN for x < 0).", y1));
  r.add(special_unary("bessel_k0", "BesselK0", "Modified Bessel function K0 (NaN for x < 0).", k0));
  r.add(
      special_unary("bessel_k0e", "BesselK0e", "Scaled modified Bessel function e^x K0(x).", k0e));
  r.add(special_unary("bessel_k1", "BesselK1", "Modified Bessel function K1 (NaN for x < 0).", k1));
  r.add(
      special_unary("bessel_k1e", "BesselK1e", "Scaled modified Bessel function e^x K1(x).", k1e));
  r.add(special_unary("lgamma", "Lgamma", "Elementwise log |Gamma(x)|.", lgamma));
  r.add(special_unary("digamma", "Digamma", "Elementwise digamma psi(x) = d/dx log Gamma(x).",
                      sp::digamma));
  {
    OpDef d =
        make_op("polygamma", "Polygamma",
                "Elementwise n-th derivative of digamma, psi^(n)(x); n an integer tensor.",
                {{"n"}, {"input"}}, {}, polygamma_infer, polygamma_kernel, f32_f64(), "bprop");
    d.dtype_input = 1;
    d.elementwise = true;
    r.add(std::move(d));
  }
  r.add(special_binary(
      "igamma", "Igamma", "Regularized lower incomplete gamma P(a, x) (scipy's gammainc).",
      broadcast_same, float_binary64([](double a, double x) { return sp::igamma(a, x, true); }),
      f32_f64(), "bprop"));
  r.add(special_binary("igammac", "Igammac",
                       "Regularized upper incomplete gamma Q(a, x) = 1 - P(a, x).", broadcast_same,
                       float_binary64([](double a, double x) { return sp::igamma(a, x, false); }),
                       f32_f64(), "bprop"));
  r.add(special_binary("igamma_grad_a", "IgammaGradA",
                       "Derivative of the regularized lower incomplete gamma P(a, x) in a.",
                       broadcast_same, float_binary64(sp::igamma_grad_a), f32_f64(),
                       "unsupported"));
  r.add(special_binary("gcd", "Gcd", "Elementwise greatest common divisor of integers (>= 0).",
                       broadcast_same, integer_binary([](auto a, auto b) { return int_gcd(a, b); }),
                       integer_dtypes(), "none"));
  r.add(special_binary("lcm", "Lcm", "Elementwise least common multiple of integers (>= 0).",
                       broadcast_same, integer_binary([](auto a, auto b) { return int_lcm(a, b); }),
                       integer_dtypes(), "none"));
  r.add(special_binary(
      "nextafter", "NextAfter", "Elementwise next representable float after input towards other.",
      broadcast_same,
      [](const KernelContext& ctx) {
        visit_float_dtype(ctx.in(0).dtype(), "nextafter", [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_floating_point_v<T>)
            cpu::binary_map<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(0),
                                     [](T a, T b) { return std::nextafter(a, b); });
        });
      },
      f32_f64(), "none"));
  {
    OpDef d = make_op(
        "population_count", "PopulationCount",
        "Elementwise number of set bits of each integer (two's complement), as uint8.", {{"input"}},
        {},
        [](const InferContext& c) -> std::vector<TensorMeta> {
          return {{c.in(0).shape, DType::uint8}};
        },
        popcount_kernel, integer_dtypes(), "none");
    d.elementwise = true;
    r.add(std::move(d));
  }
}

// Backward rules in the op vocabulary (so they differentiate again): Bessel recurrences
// (I0' = I1, I1' = I0 - I1/x, J0' = -J1, ...), lgamma' = digamma, psi^(n)' = psi^(n+1), and
// dP/dx = x^(a-1) e^-x / Gamma(a), dP/da = igamma_grad_a.
MYCEL_REGISTER_BPROPS(special) {
  using Rule = std::function<GradVar(BpropBuilder&, GradVar, GradVar, GradVar)>;
  auto rule = [&b](const char* name, Rule f) {
    b.add(name, [f](BpropBuilder& g) -> std::vector<GradVar> {
      GradVar x = g.input(0);
      if (!bprop::is_float(g, x)) return {GradVar()};
      return {f(g, x, g.out(), g.dout())};
    });
  };
  auto c = [](BpropBuilder& g, GradVar like, double v) { return g.scalar(v, g.meta(like).dtype); };
  auto f1 = [](BpropBuilder& g, const char* op, GradVar x) { return g.call(op, {x}); };
  // out / x with its limit `at0` at x == 0 (I1, J1 and their scaled forms are 0 there).
  auto over_x = [c](BpropBuilder& g, GradVar x, GradVar out, double at0) {
    GradVar zero = g.call("equal", {x, c(g, x, 0)});
    GradVar safe = g.call("select", {zero, g.ones_like(x), x});
    return g.call("select", {zero, g.mul(g.ones_like(x), c(g, x, at0)), g.div(out, safe)});
  };
  // d/dx of I1, J1 (both x/2 near 0): their slope at 0 is 1/2, so out/x -> 1/2.
  rule("bessel_i0", [f1](BpropBuilder& g, GradVar x, GradVar, GradVar d) {
    return g.mul(d, f1(g, "bessel_i1", x));
  });
  rule("bessel_i0e", [f1](BpropBuilder& g, GradVar x, GradVar out, GradVar d) {
    return g.mul(d, g.sub(f1(g, "bessel_i1e", x), g.mul(f1(g, "sign", x), out)));
  });
  rule("bessel_i1", [f1, over_x](BpropBuilder& g, GradVar x, GradVar out, GradVar d) {
    return g.mul(d, g.sub(f1(g, "bessel_i0", x), over_x(g, x, out, 0.5)));
  });
  rule("bessel_i1e", [f1, over_x](BpropBuilder& g, GradVar x, GradVar out, GradVar d) {
    // e^-|x| (I0 - I1/x) - sign(x) e^-|x| I1
    GradVar v = g.sub(f1(g, "bessel_i0e", x), over_x(g, x, out, 0.5));
    return g.mul(d, g.sub(v, g.mul(f1(g, "sign", x), out)));
  });
  rule("bessel_j0", [f1](BpropBuilder& g, GradVar x, GradVar, GradVar d) {
    return g.neg(g.mul(d, f1(g, "bessel_j1", x)));
  });
  rule("bessel_j1", [f1, over_x](BpropBuilder& g, GradVar x, GradVar out, GradVar d) {
    return g.mul(d, g.sub(f1(g, "bessel_j0", x), over_x(g, x, out, 0.5)));
  });
  rule("bessel_y0", [f1](BpropBuilder& g, GradVar x, GradVar, GradVar d) {
    return g.neg(g.mul(d, f1(g, "bessel_y1", x)));
  });
  rule("bessel_y1", [f1](BpropBuilder& g, GradVar x, GradVar out, GradVar d) {
    return g.mul(d, g.sub(f1(g, "bessel_y0", x), g.div(out, x)));
  });
  rule("bessel_k0", [f1](BpropBuilder& g, GradVar x, GradVar, GradVar d) {
    return g.neg(g.mul(d, f1(g, "bessel_k1", x)));
  });
  rule("bessel_k0e", [f1](BpropBuilder& g, GradVar x, GradVar out, GradVar d) {
    return g.mul(d, g.sub(out, f1(g, "bessel_k1e", x)));
  });
  rule("bessel_k1", [f1](BpropBuilder& g, GradVar x, GradVar out, GradVar d) {
    return g.neg(g.mul(d, g.add(f1(g, "bessel_k0", x), g.div(out, x))));
  });
  rule("bessel_k1e", [f1](BpropBuilder& g, GradVar x, GradVar out, GradVar d) {
    // e^x (K1 - K0 - K1/x)
    return g.mul(d, g.sub(g.sub(out, f1(g, "bessel_k0e", x)), g.div(out, x)));
  });
  rule("lgamma", [f1](BpropBuilder& g, GradVar x, GradVar, GradVar d) {
    return g.mul(d, f1(g, "digamma", x));
  });
  rule("digamma", [](BpropBuilder& g, GradVar x, GradVar, GradVar d) {
    return g.mul(d, g.call("polygamma", {g.scalar(1, DType::int64), x}));
  });
  b.add("polygamma", [](BpropBuilder& g) -> std::vector<GradVar> {
    GradVar n = g.input(0), x = g.input(1);
    GradVar next = g.add(n, g.scalar(1, g.meta(n).dtype));
    GradVar dx = g.mul(g.dout(), g.call("polygamma", {next, x}));
    return {GradVar(), bprop::to_input(g, dx, 1)};
  });
  for (const char* name : {"igamma", "igammac"}) {
    const double sign = std::string(name) == "igamma" ? 1.0 : -1.0;
    b.add(name, [sign](BpropBuilder& g) -> std::vector<GradVar> {
      GradVar a = g.input(0), x = g.input(1);
      DType t = g.out_meta(0).dtype;
      if (!is_floating(t)) return {GradVar(), GradVar()};
      // x^(a-1) e^-x / Gamma(a), as exp((a - 1) log x - x - lgamma(a)).
      GradVar one = g.scalar(1, t);
      GradVar log_density =
          g.sub(g.sub(g.mul(g.sub(a, one), g.call("log", {x})), x), g.call("lgamma", {a}));
      GradVar dx = g.mul(g.dout(), g.call("exp", {log_density}));
      GradVar da = g.mul(g.dout(), g.call("igamma_grad_a", {a, x}));
      if (sign < 0) {
        dx = g.neg(dx);
        da = g.neg(da);
      }
      return {bprop::to_input(g, da, 0), bprop::to_input(g, dx, 1)};
    });
  }
}

}  // namespace mycel
