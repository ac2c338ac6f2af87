// Binary elementwise ops with numpy broadcasting and type promotion (inputs arrive promoted to
// one dtype). Output dtypes follow numpy: true division of ints is float64, atan2 of ints is the
// float numpy picks (int8 -> float16), comparisons and logical ops give bool.
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>

#include "mycel/kernels/cpu/binary.h"
#include "mycel/kernels/cpu/binary_bf16.h"
#include "mycel/ops/bprop_complex.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

std::vector<TensorMeta> same_dtype(const InferContext& c) {
  return {infer_broadcast(c, c.in(0).dtype)};
}
std::vector<TensorMeta> float_dtype(const InferContext& c) {
  return {infer_broadcast(c, float_result_dtype(c.in(0).dtype))};
}
// numpy's true division of integers is float64 whatever their width.
std::vector<TensorMeta> div_dtype(const InferContext& c) {
  DType t = c.in(0).dtype;
  return {infer_broadcast(c, is_floating(t) || is_complex(t) ? t : DType::float64)};
}

// Same-shape bfloat16 operands first through binary_bf16.h's vector lanes (the same bits as
// `core`'s scalar loop), everything else through `core`.
KernelFn bf16_lanes_first(cpu::Bf16BinOp op, KernelFn core) {
  return [op, core](const KernelContext& ctx) {
    if (!cpu::bf16_binary_same_shape(op, ctx.in(0), ctx.in(1), ctx.out(0))) core(ctx);
  };
}

// The unsigned and complex types run apart from the core kernels (whose functors compare,
// saturate or use SIMD paths that complex values do not have): `core` for the core types, f over
// T (the promoted input type) for the extended ones.
template <class Out, class F>
KernelFn with_extended(KernelFn core, F f) {
  return [core, f](const KernelContext& ctx) {
    DType t = ctx.in(0).dtype();
    if (!is_extended(t)) return core(ctx);
    visit_any_dtype(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (is_complex_v<T> || (std::is_unsigned_v<T> && sizeof(T) >= 2)) {
        using O = std::conditional_t<std::is_same_v<Out, void>, T, Out>;
        cpu::binary_map<T, T, O>(ctx.in(0), ctx.in(1), ctx.out(0), f);
      }
    });
  };
}

// The unsigned types (uint16/32/64) apart from the core kernels, giving Out (bool for the
// ordered comparisons, T for arithmetic); complex values have no order.
template <class Out, class F>
KernelFn unsigned_too(KernelFn core, F f) {
  return [core, f](const KernelContext& ctx) {
    DType t = ctx.in(0).dtype();
    if (!is_extended(t)) return core(ctx);
    visit_any_dtype(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_unsigned_v<T> && sizeof(T) >= 2)
        cpu::binary_map<T, T, std::conditional_t<std::is_void_v<Out>, T, Out>>(ctx.in(0), ctx.in(1),
                                                                               ctx.out(0), f);
    });
  };
}

template <class F>
KernelFn with_unsigned(KernelFn core, F f) {
  return unsigned_too<bool>(std::move(core), f);
}

template <class F>
KernelFn with_unsigned_same(KernelFn core, F f) {
  return unsigned_too<void>(std::move(core), f);
}

// x ** y of the extended types: unsigned powers wrap (square and multiply, modulo 2^bits, as
// numpy's); complex ones are exp(y log x), with numpy's 0 ** 0 = 1 and 0 ** y = 0 (Re y > 0).
template <class T>
T pow_extended(T x, T y) {
  if constexpr (is_complex_v<T>) {
    if (y == T(0)) return T(1);
    if (x == T(0))
      return y.real() > 0 ? T(0) : T(std::numeric_limits<typename T::value_type>::quiet_NaN());
    return std::pow(x, y);
  } else {  // in at least unsigned int: uint16 * uint16 would promote to (signed) int
    using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, T>;
    W r = 1, b = x;
    for (W e = y; e; e >>= 1, b *= b)
      if (e & 1) r *= b;
    return T(r);
  }
}

// True division: unsigned inputs divide as float64, complex ones as themselves.
KernelFn div_extended(KernelFn core) {
  return [core](const KernelContext& ctx) {
    DType t = ctx.in(0).dtype();
    if (!is_extended(t)) return core(ctx);
    DType od = ctx.out(0).dtype();
    Tensor a = ctx.in(0).to(od), b = ctx.in(1).to(od);
    visit_any_dtype(od, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (is_complex_v<T> || std::is_same_v<T, double>)
        cpu::binary_map<T, T, T>(a, b, ctx.out(0), [](T x, T y) { return x / y; });
    });
  };
}

// (x - y)^2 in T's own arithmetic: integers wrap (as MindSpore's kernel, numpy's multiply);
// complex values square without a conjugate, as MindSpore defines SquaredDifference.
template <class T>
T squared_diff(T x, T y) {
  if constexpr (is_complex_v<T>) {
    T d = x - y;
    return d * d;
  } else {
    T d = cpu::wrap_sub(x, y);
    return cpu::wrap_mul(d, d);
  }
}

std::vector<DType> with_unsigned(std::vector<DType> v) {
  for (DType t : {DType::uint16, DType::uint32, DType::uint64}) v.push_back(t);
  return v;
}
std::vector<DType> with_unsigned_and_complex(std::vector<DType> v) {
  for (DType t : {DType::uint16, DType::uint32, DType::uint64, DType::complex64, DType::complex128})
    v.push_back(t);
  return v;
}
std::vector<TensorMeta> bool_dtype(const InferContext& c) {
  return {infer_broadcast(c, DType::bool_)};
}

OpDef binary(std::string name, std::string cls, std::string doc, std::vector<DType> dtypes,
             InferFn infer, KernelFn kernel, std::string grad = "todo") {
  OpDef d = make_op(std::move(name), std::move(cls), std::move(doc), {{"x"}, {"y"}}, {},
                    std::move(infer), std::move(kernel), std::move(dtypes), std::move(grad));
  d.promote_inputs = true;
  d.elementwise = true;
  return d;
}

// Integer powers with a negative exponent raise ValueError, as numpy does: the exponent tensor is
// scanned once before the loop (cheap next to the powers themselves).
void pow_kernel(const KernelContext& ctx) {
  visit_dtype(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      MYCEL_THROW(TypeError, "[pow] does not support bool inputs");
    } else if constexpr (std::is_integral_v<T>) {
      if constexpr (std::is_signed_v<T>) {
        const T* e = ctx.in(1).data<T>();
        for (int64_t i = 0, n = ctx.in(1).numel(); i < n; ++i)
          if (e[i] < 0)
            MYCEL_THROW(ValueError,
                        "[pow] integers to negative integer powers are not allowed "
                        "(input 'y' holds ",
                        int64_t(e[i]), "); cast 'x' to a float dtype first");
      }
      cpu::binary_map<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(0),
                               [](T x, T y) { return cpu::int_pow(x, y); });
    } else {
      using C = compute_t<T>;
      cpu::binary_map<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(0),
                               [](C x, C y) { return std::pow(x, y); });
    }
  });
}

// Bitwise ops: integers as two's complement (every integer type, the wider unsigned included),
// bools as bits (and/or/xor only).
template <class F>
KernelFn bitwise_binary(F f) {
  return [f](const KernelContext& ctx) {
    visit_any_dtype(ctx.in(0).dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T>)
        cpu::binary_map<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(0),
                                 [f](T x, T y) { return static_cast<T>(f(x, y)); });
    });
  };
}

// Shifts by a count outside [0, bits) are undefined in C++; numpy gives 0 (and -1 for a right
// shift of a negative signed value), which these return.
template <class T>
bool shift_out_of_range(T n) {
  if constexpr (std::is_signed_v<T>)
    if (n < 0) return true;
  return static_cast<uint64_t>(n) >= sizeof(T) * 8;
}
template <class T>
T shift_left(T x, T n) {
  using U = std::make_unsigned_t<T>;
  if (shift_out_of_range(n)) return T(0);
  return static_cast<T>(static_cast<U>(static_cast<U>(x) << n));
}
template <class T>
T shift_right(T x, T n) {
  if (shift_out_of_range(n)) {
    if constexpr (std::is_signed_v<T>)
      return x < 0 ? T(-1) : T(0);
    else
      return T(0);
  }
  return static_cast<T>(x >> n);  // arithmetic for signed x, as numpy
}

}  // namespace

MYCEL_REGISTER_OPS(binary) {
  using namespace cpu;
  const auto all = all_dtypes(), numeric = numeric_dtypes();

  // Arithmetic.
  const auto all_ext = with_unsigned_and_complex(all),
             numeric_ext = with_unsigned_and_complex(numeric);
  std::vector<DType> all_uint = all;
  for (DType t : {DType::uint16, DType::uint32, DType::uint64}) all_uint.push_back(t);
  r.add(with_traits(
      binary(
          "add", "Add", "Elementwise x + y with broadcasting.", all_ext, same_dtype,
          bf16_lanes_first(cpu::Bf16BinOp::kAdd,
                           with_extended<void>(same_dtype_binary([](auto x, auto y) -> decltype(x) {
                                                 if constexpr (std::is_same_v<decltype(x), bool>)
                                                   return x || y;
                                                 else
                                                   return wrap_add(x, y);
                                               }),
                                               [](auto x, auto y) -> decltype(x) {
                                                 if constexpr (is_complex_v<decltype(x)>)
                                                   return x + y;
                                                 else
                                                   return wrap_add(x, y);
                                               })),
          "bprop"),
      py_op(PyOperator::kAdd), ew_step(cpu::EwOp::kAdd, kKeepsZero), as_post_op(kPostAddRow)));
  r.add(with_traits(
      binary("sub", "Sub", "Elementwise x - y with broadcasting.", numeric_ext, same_dtype,
             bf16_lanes_first(cpu::Bf16BinOp::kSub,
                              with_extended<void>(numeric_binary([](auto x, auto y) -> decltype(x) {
                                                    return wrap_sub(x, y);
                                                  }),
                                                  [](auto x, auto y) -> decltype(x) {
                                                    if constexpr (is_complex_v<decltype(x)>)
                                                      return x - y;
                                                    else
                                                      return wrap_sub(x, y);
                                                  })),
             "bprop"),
      py_op(PyOperator::kSub), ew_step(cpu::EwOp::kSub, kKeepsZero)));
  r.add(with_traits(
      binary(
          "mul", "Mul", "Elementwise x * y with broadcasting.", all_ext, same_dtype,
          bf16_lanes_first(cpu::Bf16BinOp::kMul,
                           with_extended<void>(same_dtype_binary([](auto x, auto y) -> decltype(x) {
                                                 if constexpr (std::is_same_v<decltype(x), bool>)
                                                   return x && y;
                                                 else
                                                   return wrap_mul(x, y);
                                               }),
                                               [](auto x, auto y) -> decltype(x) {
                                                 if constexpr (is_complex_v<decltype(x)>)
                                                   return x * y;
                                                 else
                                                   return wrap_mul(x, y);
                                               })),
          "bprop"),
      py_op(PyOperator::kMul), ew_step(cpu::EwOp::kMul, kKeepsZero)));
  r.add(with_traits(
      binary("div", "Div", "Elementwise true division x / y (integers give floats).", all_ext,
             div_dtype, div_extended(float_binary([](auto x, auto y) { return x / y; })), "bprop"),
      py_op(PyOperator::kDiv), ew_step(cpu::EwOp::kDiv)));
  r.add(with_traits(
      binary("floor_div", "FloorDiv",
             "Elementwise floor(x / y) (numpy floor_divide; integer x // 0 gives 0).",
             with_unsigned(numeric), same_dtype,
             with_unsigned_same(numeric_binary([](auto x, auto y) { return floor_div(x, y); }),
                                [](auto x, auto y) { return decltype(x)(y ? x / y : 0); }),
             "none"),
      py_op(PyOperator::kFloorDiv)));  // piecewise constant
  r.add(with_traits(
      binary("mod", "FloorMod",
             "Elementwise x - floor(x / y) * y: the sign of y (numpy remainder; integer x % 0 "
             "gives 0).",
             with_unsigned(numeric), same_dtype,
             with_unsigned_same(numeric_binary([](auto x, auto y) { return floor_mod(x, y); }),
                                [](auto x, auto y) { return decltype(x)(y ? x % y : 0); }),
             "bprop"),
      py_op(PyOperator::kMod)));
  r.add(with_traits(
      binary("pow", "Pow",
             "Elementwise x ** y (integer powers wrap; negative integer exponents raise).",
             with_unsigned_and_complex(numeric), same_dtype,
             with_extended<void>(pow_kernel, [](auto x, auto y) { return pow_extended(x, y); }),
             "bprop"),
      py_op(PyOperator::kPow)));
  r.add(with_traits(
      binary("maximum", "Maximum",
             "Elementwise max(x, y); NaN in either gives NaN; ties split the gradient.",
             with_unsigned(all), same_dtype,
             with_unsigned_same(same_dtype_binary([](auto x, auto y) { return nan_max(x, y); }),
                                [](auto x, auto y) { return x < y ? y : x; }),
             "bprop"),
      ew_step(cpu::EwOp::kMaximum, kKeepsZero)));
  r.add(with_traits(
      binary("minimum", "Minimum",
             "Elementwise min(x, y); NaN in either gives NaN; ties split the gradient.",
             with_unsigned(all), same_dtype,
             with_unsigned_same(same_dtype_binary([](auto x, auto y) { return nan_min(x, y); }),
                                [](auto x, auto y) { return y < x ? y : x; }),
             "bprop"),
      ew_step(cpu::EwOp::kMinimum, kKeepsZero)));
  r.add(binary("atan2", "Atan2", "Elementwise arctan(x / y) in the quadrant of (y, x).",
               with_unsigned(all), float_dtype,
               float_binary([](auto x, auto y) { return std::atan2(x, y); }), "bprop"));
  r.add(binary("squared_difference", "SquaredDifference",
               "Elementwise (x - y)^2 with broadcasting (integers wrap; complex squared, not "
               "conjugated).",
               numeric_ext, same_dtype,
               with_extended<void>(
                   numeric_binary([](auto x, auto y) -> decltype(x) { return squared_diff(x, y); }),
                   [](auto x, auto y) { return squared_diff(x, y); }),
               "bprop"));

  // Bitwise (MindSpore's BitwiseAnd/Or/Xor, LeftShift/RightShift), not differentiable.
  {
    std::vector<DType> ints = integer_dtypes();
    for (DType t : {DType::uint16, DType::uint32, DType::uint64}) ints.push_back(t);
    std::vector<DType> ints_bool = ints;
    ints_bool.push_back(DType::bool_);
    r.add(binary("bitwise_and", "BitwiseAnd", "Elementwise x & y of integers or bools.", ints_bool,
                 same_dtype, bitwise_binary([](auto x, auto y) { return x & y; }), "none"));
    r.add(binary("bitwise_or", "BitwiseOr", "Elementwise x | y of integers or bools.", ints_bool,
                 same_dtype, bitwise_binary([](auto x, auto y) { return x | y; }), "none"));
    r.add(binary("bitwise_xor", "BitwiseXor", "Elementwise x ^ y of integers or bools.", ints_bool,
                 same_dtype, bitwise_binary([](auto x, auto y) { return x ^ y; }), "none"));
    r.add(
        binary("bitwise_left_shift", "LeftShift",
               "Elementwise x << y of integers (0 where y is negative or not below the bit width).",
               ints, same_dtype, bitwise_binary([](auto x, auto y) {
                 if constexpr (std::is_same_v<decltype(x), bool>)
                   return x;
                 else
                   return shift_left(x, y);
               }),
               "none"));
    r.add(
        binary("bitwise_right_shift", "RightShift",
               "Elementwise x >> y of integers, arithmetic for signed x (y out of range: 0, or -1 "
               "for negative x).",
               ints, same_dtype, bitwise_binary([](auto x, auto y) {
                 if constexpr (std::is_same_v<decltype(x), bool>)
                   return x;
                 else
                   return shift_right(x, y);
               }),
               "none"));
  }

  // Comparisons (bool output, not differentiable).
  r.add(with_traits(
      binary("equal", "Equal", "Elementwise x == y.", all_ext, bool_dtype,
             with_extended<bool>(predicate_binary([](auto x, auto y) { return x == y; }),
                                 [](auto x, auto y) { return x == y; }),
             "none"),
      py_op(PyOperator::kEq)));
  r.add(with_traits(
      binary("not_equal", "NotEqual", "Elementwise x != y.", all_ext, bool_dtype,
             with_extended<bool>(predicate_binary([](auto x, auto y) { return x != y; }),
                                 [](auto x, auto y) { return x != y; }),
             "none"),
      py_op(PyOperator::kNe)));
  r.add(with_traits(binary("less", "Less", "Elementwise x < y.", all_uint, bool_dtype,
                           with_unsigned(predicate_binary([](auto x, auto y) { return x < y; }),
                                         [](auto x, auto y) { return x < y; }),
                           "none"),
                    py_op(PyOperator::kLt), ew_step(cpu::EwOp::kLess)));
  r.add(with_traits(binary("less_equal", "LessEqual", "Elementwise x <= y.", all_uint, bool_dtype,
                           with_unsigned(predicate_binary([](auto x, auto y) { return x <= y; }),
                                         [](auto x, auto y) { return x <= y; }),
                           "none"),
                    py_op(PyOperator::kLe)));
  r.add(with_traits(binary("greater", "Greater", "Elementwise x > y.", all_uint, bool_dtype,
                           with_unsigned(predicate_binary([](auto x, auto y) { return x > y; }),
                                         [](auto x, auto y) { return x > y; }),
                           "none"),
                    py_op(PyOperator::kGt), ew_step(cpu::EwOp::kGreater)));
  r.add(with_traits(
      binary("greater_equal", "GreaterEqual", "Elementwise x >= y.", all_uint, bool_dtype,
             with_unsigned(predicate_binary([](auto x, auto y) { return x >= y; }),
                           [](auto x, auto y) { return x >= y; }),
             "none"),
      py_op(PyOperator::kGe)));

  // Logical ops on truth values (nonzero is true).
  r.add(binary("logical_and", "LogicalAnd", "Elementwise x and y (nonzero is true).", all,
               bool_dtype, predicate_binary([](auto x, auto y) {
                 return (x != decltype(x)(0)) & (y != decltype(y)(0));
               }),
               "none"));
  r.add(binary("logical_or", "LogicalOr", "Elementwise x or y (nonzero is true).", all, bool_dtype,
               predicate_binary(
                   [](auto x, auto y) { return (x != decltype(x)(0)) | (y != decltype(y)(0)); }),
               "none"));
  r.add(binary("logical_xor", "LogicalXor", "Elementwise x xor y (nonzero is true).", all,
               bool_dtype, predicate_binary([](auto x, auto y) {
                 return (x != decltype(x)(0)) != (y != decltype(y)(0));
               }),
               "none"));
}

// Backward rules: broadcasting is undone by summing each sensitivity back to its input's shape
// (bprop::to_input, which also leaves integer inputs without a gradient).
MYCEL_REGISTER_BPROPS(binary) {
  using bprop::to_input;
  // Input i in the output's (promoted, floating) dtype, for rules that mix the two inputs.
  auto promoted = [](BpropBuilder& g, size_t i) {
    GradVar v = g.input(i);
    DType t = g.out_meta(0).dtype;
    return g.meta(v).dtype == t ? v : g.cast(v, t);
  };
  auto no_float_input = [](BpropBuilder& g) {
    return !bprop::is_float(g, g.input(0)) && !bprop::is_float(g, g.input(1));
  };
  b.add("add", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {g.reduce_to(g.dout(), g.input(0)), g.reduce_to(g.dout(), g.input(1))};
  });
  b.add("sub", [](BpropBuilder& g) -> std::vector<GradVar> {
    return {g.reduce_to(g.dout(), g.input(0)), g.reduce_to(g.neg(g.dout()), g.input(1))};
  });
  // Complex operands are conjugated (bprop_complex.h): d(x y) = dout conj(y), dout conj(x).
  b.add("mul", [](BpropBuilder& g) -> std::vector<GradVar> {
    const DType t = g.out_meta(0).dtype;
    GradVar x = bprop::conj_if_complex(g, g.input(0), t);
    GradVar y = bprop::conj_if_complex(g, g.input(1), t);
    return {g.reduce_to(g.mul(g.dout(), y), g.input(0)),
            g.reduce_to(g.mul(g.dout(), x), g.input(1))};
  });
  b.add("div", [](BpropBuilder& g) -> std::vector<GradVar> {
    // d(x / y) = dout / y and -dout x / y^2 = -(dout / y) * out (conjugated when complex).
    const DType t = g.out_meta(0).dtype;
    GradVar dx = g.div(g.dout(), bprop::conj_if_complex(g, g.input(1), t));
    GradVar dy = g.neg(g.mul(dx, bprop::conj_if_complex(g, g.out(), t)));
    return {bprop::to_input_c(g, dx, 0, t), bprop::to_input_c(g, dy, 1, t)};
  });
  b.add("mod", [](BpropBuilder& g) -> std::vector<GradVar> {
    // x mod y = x - floor(x / y) y, with floor(x / y) locally constant.
    GradVar q = g.call("floor_div", {g.input(0), g.input(1)});
    return {to_input(g, g.dout(), 0), to_input(g, g.neg(g.mul(g.dout(), q)), 1)};
  });
  b.add("pow", [promoted, no_float_input](BpropBuilder& g) -> std::vector<GradVar> {
    // d/dx = y x^(y-1); d/dy = out log(x), taken as 0 where x <= 0 (as TensorFlow and JAX do),
    // where x^y is only defined for integral y and log(x) would give NaN.
    if (no_float_input(g)) return {GradVar(), GradVar()};
    GradVar x = promoted(g, 0), y = promoted(g, 1);
    DType t = g.out_meta(0).dtype;
    GradVar one = g.scalar(1, t);
    GradVar dx = g.mul(g.dout(), g.mul(y, g.call("pow", {x, g.sub(y, one)})));
    GradVar pos = g.call("greater", {x, g.scalar(0, t)});
    GradVar safe_log = g.call("log", {g.call("select", {pos, x, g.ones_like(x)})});
    GradVar dy =
        g.mul(g.dout(), g.mul(g.out(), g.call("select", {pos, safe_log, g.zeros_like(x)})));
    return {to_input(g, dx, 0), to_input(g, dy, 1)};
  });
  // maximum/minimum: the winner gets dout; exact ties split it evenly (each side gets half), so
  // maximum(x, x) has gradient 1 in x as it should.
  for (const char* name : {"maximum", "minimum"}) {
    const std::string cmp = std::string(name) == "maximum" ? "greater" : "less";
    b.add(name, [cmp, promoted, no_float_input](BpropBuilder& g) -> std::vector<GradVar> {
      if (no_float_input(g)) return {GradVar(), GradVar()};
      GradVar x = promoted(g, 0), y = promoted(g, 1);
      DType t = g.out_meta(0).dtype;
      GradVar wins = bprop::as_mask(g, g.call(cmp, {x, y}), t);
      GradVar ties = bprop::as_mask(g, g.call("equal", {x, y}), t);
      GradVar share = g.add(wins, g.mul(ties, g.scalar(0.5, t)));  // x's share of dout
      GradVar dx = g.mul(g.dout(), share);
      return {to_input(g, dx, 0), to_input(g, g.sub(g.dout(), dx), 1)};
    });
  }
  // d (x - y)^2 = 2 (x - y) (dx - dy): the sensitivity times conj(2 (x - y)) when complex.
  b.add("squared_difference", [](BpropBuilder& g) -> std::vector<GradVar> {
    const DType t = g.out_meta(0).dtype;
    if (!is_floating(t) && !is_complex(t)) return {GradVar(), GradVar()};
    GradVar d = g.sub(g.input(0), g.input(1));
    d = bprop::conj_if_complex(g, d, t);
    GradVar dx = g.mul(g.dout(), g.add(d, d));
    return {bprop::to_input_c(g, dx, 0, t), bprop::to_input_c(g, g.neg(dx), 1, t)};
  });
  b.add("atan2", [promoted, no_float_input](BpropBuilder& g) -> std::vector<GradVar> {
    // atan2(x, y): d/dx = y / (x^2 + y^2), d/dy = -x / (x^2 + y^2).
    if (no_float_input(g)) return {GradVar(), GradVar()};
    GradVar x = promoted(g, 0), y = promoted(g, 1);
    GradVar scale = g.div(g.dout(), g.add(g.mul(x, x), g.mul(y, y)));
    return {to_input(g, g.mul(scale, y), 0), to_input(g, g.neg(g.mul(scale, x)), 1)};
  });
}

}  // namespace mycel
