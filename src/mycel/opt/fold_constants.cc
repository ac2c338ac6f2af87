// Constant folding: an op whose inputs are all small constant tensors runs at compile time
// through call_op (the same kernels as at run time), except random ops and ops that mutate
// their inputs. scalar_to_tensor of a constant becomes a tensor constant (eager's conversion).
#include "mycel/opt/graph_util.h"
#include "mycel/opt/opt.h"

namespace mycel::opt {

using namespace ir;

namespace {
// The tensor eager mode makes from a Python scalar for a given dtype (python/convert.cc).
std::optional<Tensor> scalar_tensor(const Value& v, DType dt) {
  switch (v.kind()) {
    case ValueKind::kBool:
      return Tensor::scalar(static_cast<const BoolValue&>(v).value(), dt);
    case ValueKind::kFloat:
      return Tensor::scalar(static_cast<const FloatValue&>(v).value(), dt);
    case ValueKind::kInt: {
      Tensor t = Tensor::empty({}, DType::int64);
      *t.data<int64_t>() = static_cast<const IntValue&>(v).value();
      return t.to(dt);
    }
    default:
      return std::nullopt;
  }
}

// A constant tensor input (nullopt: not constant); `absent` for a None constant.
std::optional<Tensor> const_tensor(const NodePtr& n, int64_t max_elements) {
  const ValuePtr* v = detail::const_value(n);
  if (!v) return std::nullopt;
  if ((*v)->kind() == ValueKind::kNone) return Tensor();
  if ((*v)->kind() != ValueKind::kTensor) return std::nullopt;
  const Tensor& t = static_cast<const TensorValue&>(**v).tensor();
  if (t.numel() > max_elements) return std::nullopt;
  return t;
}

bool small_static(const AbstractPtr& a, int64_t max_elements) {
  if (auto* t = dynamic_cast<const AbstractTensor*>(a.get()))
    return !t->is_dynamic() && numel(t->shape()) <= max_elements;
  if (auto* u = dynamic_cast<const AbstractTuple*>(a.get())) {
    for (const auto& i : u->items())
      if (!small_static(i, max_elements)) return false;
    return true;
  }
  return false;
}
}  // namespace

bool fold_constants(FuncGraph* root, const OptOptions& o) {
  std::unordered_map<const Node*, NodePtr> repl;
  auto current = [&](const NodePtr& n) {
    auto it = repl.find(n.get());
    return it == repl.end() ? n : it->second;
  };
  auto replace = [&](const NodePtr& n, ValuePtr v) {
    NodePtr c = n->graph()->constant(std::move(v));
    c->set_abstract(n->abstract());
    repl[n.get()] = c;
  };
  for (const NodePtr& n : detail::all_applies(root)) {
    auto* a = static_cast<Apply*>(n.get());
    if (is_prim_call(n, Prim::kScalarToTensor)) {
      const ValuePtr* s = detail::const_value(current(a->arg(0)));
      const ValuePtr* d = detail::const_value(a->arg(1));
      if (s && d && (*d)->kind() == ValueKind::kDType)
        if (auto t = scalar_tensor(**s, static_cast<const DTypeValue&>(**d).value()))
          replace(n, tensor_value(*t));
      continue;
    }
    const OpValue* op = detail::op_of(n);
    if (!op || op->op().random || op->op().effect || !op->op().mutated_inputs.empty()) continue;
    if (!small_static(n->abstract(), o.fold_max_elements)) continue;
    const bool variadic = !op->op().inputs.empty() && op->op().inputs.back().variadic;
    std::vector<Tensor> inputs;
    bool ok = true;
    for (size_t i = 0; i < a->num_args() && ok; ++i) {
      NodePtr in = current(a->arg(i));
      if (variadic && i + 1 == a->num_args() && is_prim_call(in, Prim::kMakeTuple)) {
        for (const NodePtr& item : as_apply(in)->inputs()) {
          if (item == as_apply(in)->callee()) continue;
          auto t = const_tensor(current(item), o.fold_max_elements);
          ok &= t.has_value() && t->defined();
          if (ok) inputs.push_back(*t);
        }
        continue;
      }
      auto t = const_tensor(in, o.fold_max_elements);
      ok &= t.has_value();
      if (ok) inputs.push_back(*t);
    }
    if (!ok) continue;
    std::vector<Tensor> outs;
    try {
      outs = call_op(op->op(), inputs, op->attrs());
    } catch (const std::exception&) {
      continue;  // left for run time, where it raises with the same message
    }
    if (outs.size() == 1) {
      replace(n, tensor_value(outs[0]));
    } else {
      std::vector<ValuePtr> items;
      for (auto& t : outs) items.push_back(tensor_value(t));
      replace(n, tuple(std::move(items)));
    }
  }
  detail::replace_uses(root, repl);
  return !repl.empty();
}

}  // namespace mycel::opt
