// Dead code elimination. Unused nodes are already gone (a graph is what its output depends on);
// what remains dead is effect ordering on pure values (depend) and parameters that a directly
// called graph never reads, together with the arguments computed for them.
#include <unordered_set>

#include "mycel/opt/graph_util.h"
#include "mycel/opt/opt.h"

namespace mycel::opt {

using namespace ir;

namespace {
// No effect anywhere in the computation of n within its graph.
bool effect_free(const NodePtr& n, std::unordered_set<const Node*>& seen) {
  Apply* a = as_apply(n);
  if (!a || !seen.insert(n.get()).second) return true;
  if (!detail::is_pure(n) && !is_prim_call(n, Prim::kDepend)) return false;
  for (const NodePtr& in : a->inputs())
    if (!effect_free(in, seen)) return false;
  return true;
}
}  // namespace

bool eliminate_dead_code(FuncGraph* root, const OptOptions&) {
  std::unordered_map<const Node*, NodePtr> repl;
  const std::vector<NodePtr> applies = detail::all_applies(root);
  for (const NodePtr& n : applies)
    if (is_prim_call(n, Prim::kDepend)) {
      std::unordered_set<const Node*> seen;
      if (effect_free(as_apply(n)->arg(1), seen)) repl[n.get()] = as_apply(n)->arg(0);
    }
  detail::replace_uses(root, repl);
  bool changed = !repl.empty();

  // Unused parameters of graphs that are only ever called directly.
  std::unordered_map<FuncGraph*, std::vector<Apply*>> calls;
  std::unordered_set<FuncGraph*> escapes{root};
  std::unordered_set<const Node*> used;
  for (FuncGraph* g : detail::reachable_graphs(root)) {
    used.insert(g->output().get());
    if (FuncGraph* h = constant_graph(g->output())) escapes.insert(h);
  }
  for (const NodePtr& n : detail::all_applies(root)) {
    auto* a = static_cast<Apply*>(n.get());
    for (size_t i = 0; i < a->inputs().size(); ++i) {
      used.insert(a->inputs()[i].get());
      if (FuncGraph* h = constant_graph(a->inputs()[i])) {
        if (i == 0)
          calls[h].push_back(a);
        else
          escapes.insert(h);
      }
    }
  }
  for (auto& [g, sites] : calls) {
    if (escapes.count(g)) continue;
    std::vector<size_t> keep;
    for (size_t i = 0; i < g->parameters().size(); ++i)
      if (used.count(g->parameters()[i].get())) keep.push_back(i);
    if (keep.size() == g->parameters().size()) continue;
    bool arity_ok = true;
    for (Apply* s : sites) arity_ok &= s->num_args() == g->parameters().size();
    if (!arity_ok) continue;
    std::vector<NodePtr> params;
    for (size_t i : keep) params.push_back(g->parameters()[i]);
    g->set_parameters(params);
    for (Apply* s : sites) {
      std::vector<NodePtr> in{s->callee()};
      for (size_t i : keep) in.push_back(s->arg(i));
      s->set_inputs(std::move(in));
    }
    changed = true;
  }
  return changed;
}

}  // namespace mycel::opt
