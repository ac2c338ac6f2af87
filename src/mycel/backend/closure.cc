// Closure conversion: a graph's free variables are the nodes of enclosing graphs it uses, plus
// (to a fixpoint) those of every graph it references that it does not define itself -- a loop
// body calling its loop header must pass the header's free variables. Weights and constants are
// not free variables: every function captures them directly.
#include <algorithm>
#include <unordered_set>

#include "mycel/backend/detail.h"
#include "mycel/ir/func_graph.h"

namespace mycel::backend::detail {

using ir::FuncGraph;
using ir::Node;
using ir::NodePtr;

namespace {

std::string where(const Node* n) {
  if (!n || !n->loc().known()) return "";
  return " at " + n->loc().str() + (n->loc().text ? ": " + *n->loc().text : "");
}

bool is_weight(const NodePtr& n) {
  auto* p = ir::as_parameter(n);
  return p && p->is_weight();
}

void collect_graphs(const FuncGraph& top, Closures& c) {
  std::vector<const FuncGraph*> work{&top};
  while (!work.empty()) {
    const FuncGraph* g = work.back();
    work.pop_back();
    if (c.index.count(g)) continue;
    MYCEL_CHECK(g->output(), RuntimeError, "[backend] graph @", g->name(), " has no output");
    c.index[g] = static_cast<int>(c.graphs.size());
    c.graphs.push_back(g);
    auto used = g->used_graphs();
    for (auto it = used.rbegin(); it != used.rend(); ++it) work.push_back(*it);
  }
}

// Nodes of other graphs a graph's body uses (weights and constants excluded).
std::vector<NodePtr> direct_free(const FuncGraph* g) {
  std::vector<NodePtr> out;
  std::unordered_set<const Node*> seen;
  auto visit = [&](const NodePtr& n) {
    if (!n || n->is_constant() || n->graph() == g || is_weight(n) || !seen.insert(n.get()).second)
      return;
    out.push_back(n);
  };
  for (const NodePtr& a : g->toposort())
    for (const NodePtr& in : static_cast<ir::Apply*>(a.get())->inputs()) visit(in);
  visit(g->output());
  return out;
}

void compute_free_variables(const FuncGraph& top, Closures& c) {
  for (const FuncGraph* g : c.graphs) c.fv[g] = direct_free(g);
  // Fixpoint: calling K from G needs K's free variables that G does not define itself.
  for (bool changed = true; changed;) {
    changed = false;
    for (const FuncGraph* g : c.graphs) {
      auto& mine = c.fv[g];
      for (const FuncGraph* k : g->used_graphs()) {
        for (const NodePtr& n : c.fv[k]) {
          if (n->graph() == g || std::find(mine.begin(), mine.end(), n) != mine.end()) continue;
          mine.push_back(n);
          changed = true;
        }
      }
    }
  }
  if (!c.fv[&top].empty())
    MYCEL_THROW(RuntimeError, "[backend] graph @", top.name(), " uses nodes of graph @",
                c.fv[&top][0]->graph() ? c.fv[&top][0]->graph()->name() : "?",
                " that does not enclose it", where(c.fv[&top][0].get()));
}

}  // namespace

Closures convert_closures(const FuncGraph& top) {
  Closures c;
  collect_graphs(top, c);
  compute_free_variables(top, c);
  return c;
}

}  // namespace mycel::backend::detail
