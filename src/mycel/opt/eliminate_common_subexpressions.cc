// Common subexpression elimination within each graph: two pure applies with the same callee and
// the same inputs (constants compared by value) compute the same thing.
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
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = std::hash<const void*>()(k.graph);
    for (const Node* n : k.nodes) h = h * 1000003u ^ std::hash<const void*>()(n);
    for (const auto& v : k.values) h = h * 1000003u ^ ValueHash()(v);
    return h;
  }
};
}  // namespace

bool eliminate_common_subexpressions(FuncGraph* root, const OptOptions&) {
  std::unordered_map<const Node*, NodePtr> repl;
  std::unordered_map<Key, NodePtr, KeyHash> seen;
  for (const NodePtr& n : detail::all_applies(root)) {
    auto* a = static_cast<Apply*>(n.get());
    for (size_t i = 0; i < a->inputs().size(); ++i) {  // users see merged inputs at once
      auto it = repl.find(a->inputs()[i].get());
      if (it != repl.end()) a->set_input(i, it->second);
    }
    if (!detail::is_pure(n)) continue;
    Key k{{}, {}, n->graph()};
    for (const NodePtr& in : a->inputs()) {
      if (const ValuePtr* v = detail::const_value(in)) {
        k.nodes.push_back(nullptr);
        k.values.push_back(*v);
      } else {
        k.nodes.push_back(in.get());
      }
    }
    auto [it, fresh] = seen.emplace(std::move(k), n);
    if (!fresh) repl[n.get()] = it->second;
  }
  detail::replace_uses(root, repl);
  return !repl.empty();
}

}  // namespace mycel::opt
