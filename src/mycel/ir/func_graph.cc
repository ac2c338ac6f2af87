#include "mycel/ir/func_graph.h"

#include <algorithm>
#include <unordered_set>

namespace mycel::ir {

bool FuncGraph::is_ancestor_of(const FuncGraph* g) const {
  for (const FuncGraph* p = g ? g->parent_ : nullptr; p; p = p->parent_)
    if (p == this) return true;
  return false;
}

NodePtr FuncGraph::add_parameter(const std::string& name) {
  auto p = std::make_shared<Parameter>(this, name);
  params_.push_back(p);
  return p;
}

NodePtr FuncGraph::apply(std::vector<NodePtr> inputs, SourceLoc loc) {
  auto a = std::make_shared<Apply>(this, std::move(inputs));
  a->set_loc(std::move(loc));
  return a;
}

NodePtr FuncGraph::prim(Prim p, std::vector<NodePtr> args, SourceLoc loc) {
  args.insert(args.begin(), constant(prim_value(p)));
  return apply(std::move(args), std::move(loc));
}

NodePtr FuncGraph::constant(ValuePtr v) { return std::make_shared<Constant>(nullptr, std::move(v)); }

std::vector<NodePtr> FuncGraph::toposort() const {
  std::vector<NodePtr> order;
  if (!output_) return order;
  std::unordered_set<const Node*> done, on_stack;
  // Iterative post-order DFS: (node, next input index).
  std::vector<std::pair<NodePtr, size_t>> stack;
  auto mine = [&](const NodePtr& n) { return n && n->is_apply() && n->graph() == this; };
  if (mine(output_)) stack.push_back({output_, 0});
  while (!stack.empty()) {
    auto& [n, i] = stack.back();
    const auto& ins = static_cast<Apply*>(n.get())->inputs();
    if (i < ins.size()) {
      const NodePtr& in = ins[i++];
      if (mine(in) && !done.count(in.get()) && !on_stack.count(in.get())) {
        on_stack.insert(in.get());
        stack.push_back({in, 0});
      }
      continue;
    }
    done.insert(n.get());
    on_stack.erase(n.get());
    order.push_back(n);
    stack.pop_back();
  }
  return order;
}

namespace {
// Nodes used in g's body (inputs of its applies, and its output) that do not belong to g.
void collect_foreign_uses(const FuncGraph* g, std::vector<NodePtr>& out,
                          std::unordered_set<const Node*>& seen) {
  auto visit = [&](const NodePtr& n) {
    if (!n || n->is_constant() || n->graph() == g || seen.count(n.get())) return;
    seen.insert(n.get());
    out.push_back(n);
  };
  for (const NodePtr& a : g->toposort())
    for (const NodePtr& in : static_cast<Apply*>(a.get())->inputs()) visit(in);
  visit(g->output());
}
}  // namespace

std::vector<NodePtr> FuncGraph::free_variables() const {
  std::vector<NodePtr> fvs;
  std::unordered_set<const Node*> seen_fv;
  std::unordered_set<const FuncGraph*> visited;
  std::vector<const FuncGraph*> work{this};
  while (!work.empty()) {
    const FuncGraph* g = work.back();
    work.pop_back();
    if (!visited.insert(g).second) continue;
    std::vector<NodePtr> uses;
    std::unordered_set<const Node*> seen;
    collect_foreign_uses(g, uses, seen);
    for (const NodePtr& n : uses)
      if (n->graph() != this && !is_ancestor_of(n->graph()) && n->graph() != nullptr &&
          !seen_fv.count(n.get())) {
        // A node of a graph enclosing `this` (not one nested inside it).
        seen_fv.insert(n.get());
        fvs.push_back(n);
      }
    for (FuncGraph* u : g->used_graphs())
      if (u == this || is_ancestor_of(u)) work.push_back(u);  // nested graphs share our environment
  }
  return fvs;
}

std::vector<FuncGraph*> FuncGraph::used_graphs() const {
  std::vector<FuncGraph*> out;
  std::unordered_set<FuncGraph*> seen;
  auto visit = [&](const NodePtr& n) {
    if (FuncGraph* g = constant_graph(n))
      if (seen.insert(g).second) out.push_back(g);
  };
  for (const NodePtr& a : toposort())
    for (const NodePtr& in : static_cast<Apply*>(a.get())->inputs()) visit(in);
  visit(output_);
  return out;
}

FuncGraph* Module::add_graph(const std::string& name, FuncGraph* parent) {
  std::string unique = name;
  for (int k = 1; std::find(names_.begin(), names_.end(), unique) != names_.end(); ++k)
    unique = name + "." + std::to_string(k);
  names_.push_back(unique);
  graphs_.push_back(std::make_unique<FuncGraph>(this, unique, parent));
  return graphs_.back().get();
}

void Module::collect_garbage(const std::vector<FuncGraph*>& roots) {
  std::unordered_set<FuncGraph*> live;
  std::vector<FuncGraph*> work(roots.begin(), roots.end());
  while (!work.empty()) {
    FuncGraph* g = work.back();
    work.pop_back();
    if (!live.insert(g).second) continue;
    for (FuncGraph* u : g->used_graphs()) work.push_back(u);
    if (g->parent()) work.push_back(g->parent());
  }
  std::vector<std::unique_ptr<FuncGraph>> kept;
  names_.clear();
  for (auto& g : graphs_)
    if (live.count(g.get())) {
      names_.push_back(g->name());
      kept.push_back(std::move(g));
    }
  graphs_ = std::move(kept);
}

}  // namespace mycel::ir
