#include "mycel/opt/graph_util.h"

#include <unordered_set>

namespace mycel::opt::detail {

using namespace ir;

std::vector<FuncGraph*> reachable_graphs(FuncGraph* root) {
  std::vector<FuncGraph*> out{root};
  std::unordered_set<FuncGraph*> seen{root};
  for (size_t i = 0; i < out.size(); ++i)
    for (FuncGraph* u : out[i]->used_graphs())
      if (seen.insert(u).second) out.push_back(u);
  return out;
}

std::vector<NodePtr> all_applies(FuncGraph* root) {
  std::vector<NodePtr> order;
  std::unordered_set<const Node*> done;
  for (FuncGraph* g : reachable_graphs(root)) {
    // Post-order DFS across graphs, so free variables of nested graphs come before their users.
    std::vector<std::pair<NodePtr, size_t>> stack;
    if (g->output() && g->output()->is_apply() && !done.count(g->output().get())) {
      done.insert(g->output().get());
      stack.push_back({g->output(), 0});
    }
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      const auto& ins = static_cast<Apply*>(n.get())->inputs();
      if (i < ins.size()) {
        const NodePtr& in = ins[i++];
        if (in && in->is_apply() && done.insert(in.get()).second) stack.push_back({in, 0});
        continue;
      }
      order.push_back(n);
      stack.pop_back();
    }
  }
  return order;
}

void replace_uses(FuncGraph* root, const std::unordered_map<const Node*, NodePtr>& repl) {
  if (repl.empty()) return;
  auto resolve = [&](NodePtr n) {
    for (int k = 0; k < 1000; ++k) {
      auto it = repl.find(n.get());
      if (it == repl.end() || it->second == n) break;
      n = it->second;
    }
    return n;
  };
  std::vector<FuncGraph*> graphs = reachable_graphs(root);
  std::vector<NodePtr> applies = all_applies(root);
  for (FuncGraph* g : graphs) g->set_output(resolve(g->output()));
  for (const NodePtr& n : applies) {
    auto* a = static_cast<Apply*>(n.get());
    for (size_t i = 0; i < a->inputs().size(); ++i) {
      NodePtr r = resolve(a->inputs()[i]);
      if (r != a->inputs()[i]) a->set_input(i, r);
    }
  }
  // Replacements may reach nodes and graphs that were not live before.
  for (const NodePtr& n : all_applies(root)) {
    auto* a = static_cast<Apply*>(n.get());
    for (size_t i = 0; i < a->inputs().size(); ++i) {
      NodePtr r = resolve(a->inputs()[i]);
      if (r != a->inputs()[i]) a->set_input(i, r);
    }
  }
  for (FuncGraph* g : reachable_graphs(root)) g->set_output(resolve(g->output()));
}

const OpValue* op_of(const NodePtr& n) {
  Apply* a = as_apply(n);
  if (!a) return nullptr;
  Constant* c = as_constant(a->callee());
  if (!c || c->value()->kind() != ValueKind::kOp) return nullptr;
  return static_cast<const OpValue*>(c->value().get());
}

bool is_op(const NodePtr& n, const char* name) {
  const OpValue* o = op_of(n);
  return o && o->op().name == name;
}

const ValuePtr* const_value(const NodePtr& n) {
  Constant* c = as_constant(n);
  return c ? &c->value() : nullptr;
}

bool is_pure(const NodePtr& n) {
  Apply* a = as_apply(n);
  if (!a) return true;
  if (const OpValue* o = op_of(n))
    return !o->op().random && !o->op().effect && o->op().mutated_inputs.empty();
  Constant* c = as_constant(a->callee());
  if (!c || c->value()->kind() != ValueKind::kPrim) return false;  // graph calls may print
  Prim p = static_cast<const PrimValue&>(*c->value()).prim();
  return p != Prim::kPrint && p != Prim::kDepend && p != Prim::kAssign && p != Prim::kRaise;
}

std::optional<double> uniform_constant(const NodePtr& n) {
  if (is_prim_call(n, Prim::kScalarToTensor)) {
    const ValuePtr* v = const_value(as_apply(n)->arg(0));
    if (!v) return std::nullopt;
    switch ((*v)->kind()) {
      case ValueKind::kBool:
        return static_cast<const BoolValue&>(**v).value() ? 1.0 : 0.0;
      case ValueKind::kInt:
        return static_cast<double>(static_cast<const IntValue&>(**v).value());
      case ValueKind::kFloat:
        return static_cast<const FloatValue&>(**v).value();
      default:
        return std::nullopt;
    }
  }
  const ValuePtr* v = const_value(n);
  if (!v || (*v)->kind() != ValueKind::kTensor) return std::nullopt;
  const Tensor& t = static_cast<const TensorValue&>(**v).tensor();
  if (t.numel() == 0 || t.numel() > 4096) return std::nullopt;
  double x = t.item_as_double(0);
  for (int64_t i = 1; i < t.numel(); ++i)
    if (t.item_as_double(i) != x) return std::nullopt;
  return x;
}

NodePtr make_like(FuncGraph* g, std::vector<NodePtr> inputs, const NodePtr& like) {
  NodePtr n = g->apply(std::move(inputs), like->loc());
  n->set_abstract(like->abstract());
  n->set_debug_name(like->debug_name());
  return n;
}

}  // namespace mycel::opt::detail
