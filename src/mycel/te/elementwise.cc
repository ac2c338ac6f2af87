// The graph backend's fused elementwise chains (kernels/cpu/fused_elementwise.h) lowered to TE
// and compiled by this code generator: one generated loop per chain, opted into with
// MYCEL_TE_FUSION=1 (backend/fuse_elementwise.cc). The built-in interpreter stays the default:
// its steps are the op kernels' own math (fast_exp, fast_tanh), bit for bit, while generated
// code uses the C++ library's, equal to rounding.
#include "mycel/core/error.h"
#include "mycel/kernels/cpu/fused_elementwise.h"
#include "mycel/te/te.h"

namespace mycel::te {
namespace {

Expr f32(double v) { return constant(v, DType::float32); }

// NaN-propagating max / min, as the maximum / minimum kernels.
Expr nan_pick(Op op, const Expr& a, const Expr& b) {
  Expr pick = binary(op, a, b);
  return select(binary(Op::Ne, a, a), a, select(binary(Op::Ne, b, b), b, pick));
}

Expr step_expr(cpu::EwOp op, const Expr& a, const Expr& b) {
  using cpu::EwOp;
  switch (op) {
    case EwOp::kAdd:
      return binary(Op::Add, a, b);
    case EwOp::kSub:
      return binary(Op::Sub, a, b);
    case EwOp::kMul:
      return binary(Op::Mul, a, b);
    case EwOp::kDiv:
      return binary(Op::Div, a, b);
    case EwOp::kMaximum:
      return nan_pick(Op::Max, a, b);
    case EwOp::kMinimum:
      return nan_pick(Op::Min, a, b);
    case EwOp::kNeg:
      return unary(Op::Neg, a);
    case EwOp::kAbs:
      return unary(Op::Abs, a);
    case EwOp::kRelu:
      return select(binary(Op::Lt, a, f32(0)), f32(0), a);
    case EwOp::kSquare:
      return binary(Op::Mul, a, a);
    case EwOp::kSqrt:
      return unary(Op::Sqrt, a);
    case EwOp::kReciprocal:
      return binary(Op::Div, f32(1), a);
    case EwOp::kExp:
      return unary(Op::Exp, a);
    case EwOp::kSigmoid:
      return unary(Op::Sigmoid, a);
    case EwOp::kTanh:
      return unary(Op::Tanh, a);
    // Comparisons are held in the chain as 1.0f / 0.0f; cast reads them back unchanged.
    case EwOp::kGreater:
      return select(binary(Op::Gt, a, b), f32(1), f32(0));
    case EwOp::kLess:
      return select(binary(Op::Lt, a, b), f32(1), f32(0));
    case EwOp::kCast:
      return a;
  }
  MYCEL_THROW(ValueError, "[te fusion] unknown elementwise step ", static_cast<int>(op));
}

}  // namespace

std::shared_ptr<Function> build_elementwise(const cpu::EwProgram& p, int64_t n,
                                            const std::vector<bool>& broadcast) {
  MYCEL_CHECK(static_cast<int>(broadcast.size()) == p.num_inputs && !p.steps.empty(), ValueError,
              "[te fusion] program ", p.str(), " does not match its ", broadcast.size(), " inputs");
  IterVar i = make_var("i", 0, n, false);
  std::vector<Tensor> ins;
  std::vector<Expr> slots;
  for (int k = 0; k < p.num_inputs; ++k) {
    ins.push_back(placeholder({broadcast[k] ? 1 : n}, DType::float32, "in" + std::to_string(k)));
    slots.push_back(load(ins.back(), {broadcast[k] ? constant(0, DType::int64) : var(i)}));
  }
  for (const cpu::EwStep& s : p.steps) {
    MYCEL_CHECK(s.a >= 0 && s.a < static_cast<int>(slots.size()) && s.b >= 0 &&
                    s.b < static_cast<int>(slots.size()),
                ValueError, "[te fusion] program ", p.str(), " reads a slot it has not computed");
    slots.push_back(step_expr(s.op, slots[s.a], slots[s.b]));
  }
  Tensor out = compute({n}, {i}, slots.back(), "fused");
  return build(ins, {out});
}

}  // namespace mycel::te
