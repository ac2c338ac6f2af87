// Rewrites on TE expressions: variable substitution, constant folding and algebraic identities
// (the zero elimination that keeps generated gradients from carrying dead terms).
#include <cmath>
#include <functional>
#include <set>

#include "mycel/te/te.h"

namespace mycel::te {
namespace {

Expr rebuild(const Expr& e, std::vector<Expr> args) {
  auto n = std::make_shared<Node>(*e);
  n->args = std::move(args);
  return n;
}

bool is_const(const Expr& e, double v) { return e->op == Op::Const && e->value == v; }

double fold(Op op, double a, double b, DType t) {
  bool f = is_float(t);
  switch (op) {
    case Op::Add:
      return a + b;
    case Op::Sub:
      return a - b;
    case Op::Mul:
      return a * b;
    case Op::Div:
      return f ? a / b : std::floor(a / b);
    case Op::Mod:
      return f ? std::fmod(a, b) : a - b * std::floor(a / b);
    case Op::Max:
      return std::max(a, b);
    case Op::Min:
      return std::min(a, b);
    case Op::Pow:
      return std::pow(a, b);
    case Op::Lt:
      return a < b;
    case Op::Le:
      return a <= b;
    case Op::Gt:
      return a > b;
    case Op::Ge:
      return a >= b;
    case Op::Eq:
      return a == b;
    case Op::Ne:
      return a != b;
    case Op::And:
      return a && b;
    case Op::Or:
      return a || b;
    default:
      return NAN;
  }
}

}  // namespace

Expr substitute(const Expr& e, const VarMap& map) {
  if (e->op == Op::Var) {
    for (auto& [v, r] : map)
      if (v == e->var.get()) return r;
    return e;
  }
  if (e->args.empty()) return e;
  std::vector<Expr> args;
  bool changed = false;
  for (auto& a : e->args) {
    args.push_back(substitute(a, map));
    changed |= args.back() != a;
  }
  return changed ? rebuild(e, std::move(args)) : e;
}

Expr simplify(const Expr& e) {
  if (e->args.empty()) return e;
  std::vector<Expr> args;
  for (auto& a : e->args) args.push_back(simplify(a));
  auto& a = args[0];
  switch (e->op) {
    case Op::Add:
      if (args[0]->op == Op::Const && args[1]->op == Op::Const)
        return constant(fold(e->op, a->value, args[1]->value, e->dtype), e->dtype);
      if (is_const(a, 0)) return args[1];
      if (is_const(args[1], 0)) return a;
      break;
    case Op::Sub:
      if (args[0]->op == Op::Const && args[1]->op == Op::Const)
        return constant(fold(e->op, a->value, args[1]->value, e->dtype), e->dtype);
      if (is_const(args[1], 0)) return a;
      break;
    case Op::Mul:
      if (args[0]->op == Op::Const && args[1]->op == Op::Const)
        return constant(fold(e->op, a->value, args[1]->value, e->dtype), e->dtype);
      if (is_const(a, 0) || is_const(args[1], 0)) return constant(0, e->dtype);
      if (is_const(a, 1)) return args[1];
      if (is_const(args[1], 1)) return a;
      break;
    case Op::Div:
      if (is_const(args[1], 1)) return a;
      if (is_const(a, 0) && is_float(e->dtype)) return constant(0, e->dtype);
      [[fallthrough]];
    case Op::Mod:
    case Op::Max:
    case Op::Min:
    case Op::Pow:
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::Eq:
    case Op::Ne:
    case Op::And:
    case Op::Or:
      if (args[0]->op == Op::Const && args[1]->op == Op::Const && !is_const(args[1], 0))
        return constant(fold(e->op, a->value, args[1]->value, args[0]->dtype), e->dtype);
      if (e->op == Op::And && is_const(a, 1)) return args[1];
      if (e->op == Op::And && is_const(args[1], 1)) return a;
      if ((e->op == Op::And) && (is_const(a, 0) || is_const(args[1], 0)))
        return constant(0, DType::boolean);
      break;
    case Op::Neg:
      if (a->op == Op::Const) return constant(-a->value, e->dtype);
      break;
    case Op::Select:
      if (a->op == Op::Const) return a->value != 0 ? args[1] : args[2];
      if (args[1] == args[2]) return args[1];
      break;
    case Op::Cast:
      if (a->op == Op::Const) return constant(a->value, e->dtype);
      break;
    case Op::Reduce:
      // A sum of zero is zero (zero elimination after differentiation).
      if (e->rkind == ReduceKind::sum && is_const(a, 0)) return a;
      break;
    default:
      break;
  }
  bool changed = false;
  for (size_t i = 0; i < args.size(); ++i) changed |= args[i] != e->args[i];
  return changed ? rebuild(e, std::move(args)) : e;
}

std::vector<Tensor> topo_order(const std::vector<Tensor>& outputs) {
  std::vector<Tensor> order;
  std::set<const TensorNode*> seen;
  std::function<void(const Tensor&)> visit_tensor;
  std::function<void(const Expr&)> visit_expr = [&](const Expr& e) {
    if (e->op == Op::Load) visit_tensor(e->tensor);
    for (auto& a : e->args) visit_expr(a);
  };
  visit_tensor = [&](const Tensor& t) {
    if (!seen.insert(t.get()).second) return;
    if (t->body) visit_expr(t->body);
    order.push_back(t);
  };
  for (auto& o : outputs) visit_tensor(o);
  return order;
}

}  // namespace mycel::te
