// Compile-time conditions: `if wd > 0.0` on Python floats taken from a tuple (a zip loop over
// per-parameter settings) is analysed as greater(scalar_to_tensor(wd), scalar_to_tensor(0.0)),
// a tensor op on constants. Its one-element result is computed here with the run-time kernels so
// that switch picks its branch at analysis, as it does for a constant bool.
#include "mycel/analysis/engine.h"

namespace mycel::analysis::detail {

using namespace ir;

namespace {
constexpr int64_t kMaxElements = 64;  // inputs larger than this are left to run time
constexpr int kMaxDepth = 8;          // ops this deep below the condition are evaluated

// The tensor eager mode makes from a Python scalar for a dtype.
std::optional<Tensor> scalar_tensor(const ValuePtr& v, DType dt) {
  if (!v) return std::nullopt;
  switch (v->kind()) {
    case ValueKind::kBool:
      return Tensor::scalar(static_cast<const BoolValue&>(*v).value(), dt);
    case ValueKind::kFloat:
      return Tensor::scalar(static_cast<const FloatValue&>(*v).value(), dt);
    case ValueKind::kInt: {
      Tensor t = Tensor::empty({}, DType::int64);
      *t.data<int64_t>() = static_cast<const IntValue&>(*v).value();
      return t.to(dt);
    }
    default:
      return std::nullopt;
  }
}

std::optional<Tensor> evaluate(const NodePtr& n, int depth) {
  if (!n || depth > kMaxDepth) return std::nullopt;
  if (Constant* c = as_constant(n)) {
    if (c->value()->kind() != ValueKind::kTensor) return std::nullopt;
    const Tensor& t = static_cast<const TensorValue&>(*c->value()).tensor();
    if (t.numel() > kMaxElements) return std::nullopt;
    return t;
  }
  Apply* a = as_apply(n);
  if (!a) return std::nullopt;
  if (is_prim_call(n, Prim::kScalarToTensor)) {
    ValuePtr d = constant_of(a->arg(1)->abstract());
    if (!d || d->kind() != ValueKind::kDType) return std::nullopt;
    return scalar_tensor(constant_of(a->arg(0)->abstract()),
                         static_cast<const DTypeValue&>(*d).value());
  }
  Constant* callee = as_constant(a->callee());
  if (!callee || callee->value()->kind() != ValueKind::kOp) return std::nullopt;
  const auto& ov = static_cast<const OpValue&>(*callee->value());
  const OpDef& op = ov.op();
  if (op.random || op.effect || !op.mutated_inputs.empty()) return std::nullopt;
  if (!op.inputs.empty() && op.inputs.back().variadic) return std::nullopt;
  if (a->num_args() != op.inputs.size()) return std::nullopt;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < a->num_args(); ++i) {
    auto t = evaluate(a->arg(i), depth + 1);
    if (!t) return std::nullopt;
    inputs.push_back(*t);
  }
  std::vector<Tensor> outs;
  try {
    outs = call_op(op, std::move(inputs), ov.attrs());
  } catch (const std::exception&) {
    return std::nullopt;  // left for run time, where it raises with the same message
  }
  if (outs.size() != 1 || outs[0].numel() > kMaxElements) return std::nullopt;
  return outs[0];
}
}  // namespace

std::optional<bool> constant_condition(const NodePtr& cond) {
  auto* t = as_tensor(cond ? cond->abstract() : nullptr);
  if (!t || t->is_dynamic() || numel(t->shape()) != 1) return std::nullopt;
  auto v = evaluate(cond, 0);
  if (!v || v->numel() != 1) return std::nullopt;
  return v->item_as_double() != 0;
}

}  // namespace mycel::analysis::detail
