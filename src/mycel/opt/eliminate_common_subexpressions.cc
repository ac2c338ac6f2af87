// Common subexpression elimination within each graph: two pure applies with the same callee and
// the same inputs (constants compared by value) compute the same thing. A stateful op's gradient
// recomputation (batch_norm with momentum 0) merges into the primal call with the same inputs.
#include <unordered_map>

#include "mycel/opt/graph_util.h"
#include "mycel/opt/opt.h"

namespace mycel::opt {

using namespace ir;

namespace {
// An input as CSE sees it: constants by value, other nodes by identity.
struct Key {
  std::vector<const Node*> nodes;
  std::vector<ValuePtr> values;
  const FuncGraph* graph;
  bool operator==(const Key& o) const {
    if (graph != o.graph || nodes != o.nodes || values.size() != o.values.size()) return false;
    for (size_t i = 0; i < values.size(); ++i)
      if (!ValueEq()(values[i], o.values[i])) return false;
    return true;
  }
};
struct KeyHash;
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = std::hash<const void*>()(k.graph);
    for (const Node* n : k.nodes) h = h * 1000003u ^ std::hash<const void*>()(n);
    for (const auto& v : k.values) h = h * 1000003u ^ ValueHash()(v);
    return h;
  }
};

Key key_of(const Apply& a, const ValuePtr& callee) {
  Key k{{}, {}, a.graph()};
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    const NodePtr& in = a.inputs()[i];
    const ValuePtr* v = i == 0 && callee ? &callee : detail::const_value(in);
    if (v) {
      k.nodes.push_back(nullptr);
      k.values.push_back(*v);
    } else {
      k.nodes.push_back(in.get());
    }
  }
  return k;
}

// An op updating a running statistic in place (batch_norm) with momentum m: the op with m = 0,
// which the gradient's recomputed forward uses (ad/j_transform.cc), and whose outputs equal the
// primal call's. nullptr for other ops.
ValuePtr stateful_twin(const NodePtr& n, bool* recompute) {
  const OpValue* o = detail::op_of(n);
  if (!o || o->op().mutated_inputs.empty()) return nullptr;
  int m = o->op().attr_index("momentum");
  if (m < 0) return nullptr;
  Attrs attrs = o->attrs();
  *recompute = std::get<double>(attrs.values()[m]) == 0.0;
  attrs.values()[m] = AttrValue(0.0);
  return op_value(&o->op(), std::move(attrs));
}
}  // namespace

bool eliminate_common_subexpressions(FuncGraph* root, const OptOptions&) {
  std::unordered_map<const Node*, NodePtr> repl;
  std::unordered_map<Key, NodePtr, KeyHash> seen;
  std::unordered_map<Key, NodePtr, KeyHash> primal;  // stateful ops that update state
  std::vector<std::pair<NodePtr, Key>> recomputed;   // ... and their m = 0 twins
  for (const NodePtr& n : detail::all_applies(root)) {
    auto* a = static_cast<Apply*>(n.get());
    for (size_t i = 0; i < a->inputs().size(); ++i) {  // users see merged inputs at once
      auto it = repl.find(a->inputs()[i].get());
      if (it != repl.end()) a->set_input(i, it->second);
    }
    if (!detail::is_pure(n)) {
      bool recompute = false;
      if (ValuePtr twin = stateful_twin(n, &recompute)) {
        Key k = key_of(*a, twin);
        auto it = primal.find(k);
        if (recompute && it != primal.end())
          repl[n.get()] = it->second;  // users merge on at once
        else if (recompute)
          recomputed.push_back({n, std::move(k)});
        else
          primal.emplace(std::move(k), n);
      }
      continue;
    }
    auto [it, fresh] = seen.emplace(key_of(*a, nullptr), n);
    if (!fresh) repl[n.get()] = it->second;
  }
  // The gradient's recomputation of a stateful op reuses the primal call's outputs (one forward).
  for (auto& [n, k] : recomputed) {
    auto it = primal.find(k);
    if (it != primal.end()) repl[n.get()] = it->second;
  }
  detail::replace_uses(root, repl);
  return !repl.empty();
}

}  // namespace mycel::opt
