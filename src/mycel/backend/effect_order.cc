#include "mycel/backend/effect_order.h"

#include "mycel/core/error.h"

namespace mycel::backend::detail {

using namespace ir;

namespace {

bool is_view_op(const NodePtr& n) {
  auto* a = as_apply(n);
  Constant* c = a ? as_constant(a->callee()) : nullptr;
  return c && c->value()->kind() == ValueKind::kOp &&
         static_cast<const OpValue&>(*c->value()).op().view;
}
}  // namespace

bool EffectOrder::is_state(const NodePtr& n) const {
  const Parameter* p = as_parameter(n);
  return p && (p->is_weight() || n->graph() == top_);
}

const EffectOrder::Uses& EffectOrder::of_graph(const FuncGraph* g) {
  auto it = memo_.find(g);
  if (it != memo_.end()) return it->second;
  memo_[g];  // recursion sees the partial entry
  Uses u;
  for (const NodePtr& n : g->toposort()) {
    auto* a = as_apply(n);
    bool assign = is_prim_call(n, Prim::kAssign);
    for (size_t i = 0; i < a->inputs().size(); ++i) {
      const NodePtr& in = a->inputs()[i];
      if (is_state(in)) (assign && i == 1 ? u.writes : u.reads).insert(in.get());
    }
  }
  for (const FuncGraph* k : g->used_graphs()) {
    const Uses& ku = of_graph(k);
    u.reads.insert(ku.reads.begin(), ku.reads.end());
    u.writes.insert(ku.writes.begin(), ku.writes.end());
  }
  return memo_[g] = std::move(u);
}

std::unordered_map<const Node*, std::vector<NodePtr>> EffectOrder::deps(
    const FuncGraph* g, const std::vector<NodePtr>& nodes) {
  (void)g;
  std::unordered_map<const Node*, std::vector<NodePtr>> extra;
  std::unordered_map<const Node*, std::unordered_set<const Node*>> reads, writes, aliases;
  std::unordered_map<const Node*, std::vector<const Node*>> users;
  bool any_write = false;
  for (const NodePtr& n : nodes) {  // in dependency order: aliases of inputs are known
    auto* a = as_apply(n);
    bool assign = is_prim_call(n, Prim::kAssign);
    auto& r = reads[n.get()];
    auto& w = writes[n.get()];
    for (size_t i = 0; i < a->inputs().size(); ++i) {
      const NodePtr& in = a->inputs()[i];
      users[in.get()].push_back(n.get());
      if (is_state(in)) (assign && i == 1 ? w : r).insert(in.get());
      auto al = aliases.find(in.get());
      if (al != aliases.end()) r.insert(al->second.begin(), al->second.end());
      if (const FuncGraph* k = constant_graph(in)) {
        const Uses& ku = of_graph(k);
        r.insert(ku.reads.begin(), ku.reads.end());
        w.insert(ku.writes.begin(), ku.writes.end());
      }
    }
    if (is_view_op(n)) {  // a view of a weight shares its storage: its users read the weight
      auto& al = aliases[n.get()];
      for (const Node* x : r) al.insert(x);
    }
    any_write |= !w.empty();
  }
  if (!any_write) return extra;
  std::unordered_map<const Node*, std::unordered_set<const Node*>> downstream;  // per writer
  for (const NodePtr& wn : nodes) {
    if (writes[wn.get()].empty()) continue;
    auto& d = downstream[wn.get()];
    d.insert(wn.get());
    std::vector<const Node*> work{wn.get()};
    while (!work.empty()) {
      const Node* x = work.back();
      work.pop_back();
      for (const Node* u : users[x])
        if (d.insert(u).second) work.push_back(u);
    }
  }
  for (const NodePtr& wn : nodes) {
    const auto& w = writes[wn.get()];
    if (w.empty()) continue;
    const auto& down = downstream[wn.get()];
    for (const NodePtr& other : nodes) {
      if (down.count(other.get())) continue;
      bool conflict = false;
      for (const Node* weight : w) {
        conflict |= reads[other.get()].count(weight) > 0;
        if (writes[other.get()].count(weight) && !downstream[other.get()].count(wn.get()))
          MYCEL_THROW(
              NotSupported, "[assign] Parameter '", static_cast<const Parameter*>(weight)->name(),
              "' is written twice in one step by unrelated assigns; write it once, or compute the "
              "second value from the first assign's result");
      }
      if (conflict) extra[wn.get()].push_back(other);
    }
  }
  return extra;
}

}  // namespace mycel::backend::detail
