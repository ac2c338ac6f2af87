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

NodePtr FuncGraph::constant(ValuePtr v) {
  return std::make_shared<Constant>(nullptr, std::move(v));
}

namespace {
// Post-order DFS over `g`'s Apply nodes from `roots`, appending to `order` (skips `done` nodes).
void dfs(const FuncGraph* g, const std::vector<NodePtr>& roots, std::vector<NodePtr>& order,
         std::unordered_set<const Node*>& done) {
  auto mine = [&](const NodePtr& n) { return n && n->is_apply() && n->graph() == g; };
  std::unordered_set<const Node*> on_stack;
  std::vector<std::pair<NodePtr, size_t>> stack;  // (node, next input index)
  for (const NodePtr& root : roots) {
    if (!mine(root) || done.count(root.get())) continue;
    stack.push_back({root, 0});
    on_stack.insert(root.get());
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
  }
}
}  // namespace

std::vector<NodePtr> FuncGraph::toposort() const {
  // Roots: the output, plus this graph's nodes that only nested graphs use (their free
  // variables): those must be computed here, before any closure that reads them is called.
  std::vector<NodePtr> order;
  std::unordered_set<const Node*> done;
  dfs(this, {output_}, order, done);
  std::unordered_set<const FuncGraph*> scanned;
  for (size_t scanned_upto = 0;;) {
    std::vector<NodePtr> extra;
    std::vector<const FuncGraph*> nested;
    auto note_graph = [&](const NodePtr& n) {
      FuncGraph* u = constant_graph(n);
      if (u && is_ancestor_of(u) && scanned.insert(u).second) nested.push_back(u);
    };
    for (size_t k = scanned_upto; k < order.size(); ++k)
      for (const NodePtr& in : static_cast<Apply*>(order[k].get())->inputs()) note_graph(in);
    if (scanned_upto == 0) note_graph(output_);
    scanned_upto = order.size();
    // Walk every descendant reachable from the new nested graphs.
    for (size_t k = 0; k < nested.size(); ++k) {
      const FuncGraph* u = nested[k];
      auto visit_input = [&](const NodePtr& in) {
        if (in && in->graph() == this && in->is_apply() && !done.count(in.get()))
          extra.push_back(in);
        note_graph(in);
      };
      for (const NodePtr& a : u->toposort())
        for (const NodePtr& in : static_cast<Apply*>(a.get())->inputs()) visit_input(in);
      visit_input(u->output());
    }
    if (extra.empty()) break;
    // Free-variable roots go before the output's nodes that were not yet needed by them.
    std::vector<NodePtr> fv_order;
    std::unordered_set<const Node*> fv_done;
    dfs(this, extra, fv_order, fv_done);
    std::vector<NodePtr> merged = fv_order;
    for (const NodePtr& n : order)
      if (!fv_done.count(n.get())) merged.push_back(n);
    order = std::move(merged);
    done.insert(fv_done.begin(), fv_done.end());
    scanned_upto = 0;  // rescan: the new nodes may reference further nested graphs
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
  // "f", then "f.1", "f.2", ...: each base name remembers its next suffix, so naming costs O(1)
  // however many graphs the module holds (it grew quadratically with compiled shapes before).
  std::string unique = name;
  if (names_.count(unique)) {
    int& k = next_suffix_[name];
    do unique = name + "." + std::to_string(++k);
    while (names_.count(unique));
  }
  names_.insert(unique);
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
      names_.insert(g->name());
      kept.push_back(std::move(g));
    }
  graphs_ = std::move(kept);
}

}  // namespace mycel::ir
