// Inlining: a direct call @g(args) of a graph that is not recursive, whose free variables are
// visible at the call site, is replaced by a copy of g's body (graphs nested in g are copied too,
// re-parented under the caller).
#include <unordered_set>

#include "mycel/opt/graph_util.h"
#include "mycel/opt/opt.h"

namespace mycel::opt {

using namespace ir;

namespace {

// True when g can reach itself through the graphs it uses (recursion, loops).
bool is_recursive(FuncGraph* g) {
  std::vector<FuncGraph*> work = g->used_graphs();
  std::unordered_set<FuncGraph*> seen;
  while (!work.empty()) {
    FuncGraph* u = work.back();
    work.pop_back();
    if (u == g) return true;
    if (!seen.insert(u).second) continue;
    for (FuncGraph* v : u->used_graphs()) work.push_back(v);
  }
  return false;
}

// Copies g's body into `target` with g's parameters bound to `args`. Each copied node's loc
// records the call it came through (SourceLoc::inlined_at), appended at the outer end of the
// chain it already has, so run-time errors can name the calls that led to a library line.
class Inliner {
 public:
  Inliner(FuncGraph* g, FuncGraph* target, const SourceLoc& call_site)
      : g_(g),
        target_(target),
        frame_(std::make_shared<const InlinedFrame>(InlinedFrame{call_site, g->cell_label()})) {
    for (const InlinedFrame* f = call_site.inlined_at.get(); f; f = f->site.inlined_at.get())
      site_chain_.insert(f);
  }

  NodePtr run(const std::vector<NodePtr>& args) {
    for (size_t i = 0; i < args.size(); ++i) map_[g_->parameters()[i].get()] = args[i];
    for (const NodePtr& n : g_->toposort()) node(n);
    return node(g_->output());
  }

 private:
  bool inside(const FuncGraph* h) const { return h == g_ || (h && g_->is_ancestor_of(h)); }

  FuncGraph* graph(FuncGraph* h) {
    if (h == g_) return target_;
    auto it = graphs_.find(h);
    if (it != graphs_.end()) return it->second;
    FuncGraph* c = g_->module()->add_graph(h->name(), graph(h->parent()));
    graphs_[h] = c;
    std::vector<NodePtr> params;
    for (const NodePtr& p : h->parameters()) {
      NodePtr q = std::make_shared<Parameter>(c, as_parameter(p)->name());
      q->set_abstract(p->abstract());
      q->set_loc(through_call(p->loc()));
      map_[p.get()] = q;
      params.push_back(q);
    }
    c->set_parameters(params);
    for (const NodePtr& n : h->toposort()) node(n);
    c->set_output(node(h->output()));
    return c;
  }

  NodePtr node(const NodePtr& n) {
    auto it = map_.find(n.get());
    if (it != map_.end()) return it->second;
    if (FuncGraph* h = constant_graph(n); h && inside(h) && h != g_) {
      NodePtr c = target_->constant(graph_value(graph(h)));
      c->set_abstract(n->abstract() ? std::make_shared<AbstractFunction>(graph_value(graph(h)))
                                    : nullptr);
      return c;
    }
    if (!n->is_apply() || !inside(n->graph())) return n;  // constants and free variables stay
    auto* a = static_cast<Apply*>(n.get());
    std::vector<NodePtr> in;
    for (const NodePtr& i : a->inputs()) in.push_back(node(i));
    NodePtr c = graph(n->graph())->apply(std::move(in), through_call(n->loc()));
    c->set_abstract(n->abstract());
    c->set_debug_name(n->debug_name());
    map_[n.get()] = c;
    return c;
  }

  // loc as seen from the caller: its call chain ends with this call (shared per chain).
  SourceLoc through_call(const SourceLoc& loc) {
    SourceLoc out = loc;
    out.inlined_at = outer(loc.inlined_at);
    return out;
  }
  std::shared_ptr<const InlinedFrame> outer(const std::shared_ptr<const InlinedFrame>& f) {
    // The chain ends here, or reaches a frame of the call site's own chain: a nested graph
    // (branch, loop body, closure) copied along with a function that encloses it already carries
    // that function's calls, which the call site (perhaps inside more branches) carries too.
    if (!f || site_chain_.count(f.get())) return frame_;
    auto it = chains_.find(f.get());
    if (it != chains_.end()) return it->second;
    auto c = std::make_shared<const InlinedFrame>(InlinedFrame{through_call(f->site), f->callee});
    chains_[f.get()] = c;
    return c;
  }

  FuncGraph* g_;
  FuncGraph* target_;
  std::shared_ptr<const InlinedFrame> frame_;
  std::unordered_set<const InlinedFrame*> site_chain_;
  std::unordered_map<const InlinedFrame*, std::shared_ptr<const InlinedFrame>> chains_;
  std::unordered_map<const Node*, NodePtr> map_;
  std::unordered_map<FuncGraph*, FuncGraph*> graphs_;
};

}  // namespace

namespace {
// One sweep: every direct call present now is inlined (calls inside the copies wait for the next).
bool inline_sweep(FuncGraph* root) {
  std::unordered_map<const Node*, NodePtr> repl;
  std::unordered_map<FuncGraph*, bool> recursive;
  for (const NodePtr& n : detail::all_applies(root)) {
    auto* a = static_cast<Apply*>(n.get());
    FuncGraph* g = constant_graph(a->callee());
    if (!g || a->num_args() != g->parameters().size() || g == n->graph()) continue;
    if (g && g->bprop()) continue;  // a Cell with its own bprop stays a call for autodiff
    if (!recursive.count(g)) recursive[g] = is_recursive(g);
    if (recursive[g]) continue;
    bool in_scope = true;
    for (const NodePtr& fv : g->free_variables())
      in_scope &=
          fv->graph() == n->graph() || (fv->graph() && fv->graph()->is_ancestor_of(n->graph()));
    if (!in_scope) continue;
    // Arguments may themselves be calls inlined in this sweep.
    std::vector<NodePtr> args;
    for (size_t i = 0; i < a->num_args(); ++i) {
      auto it = repl.find(a->arg(i).get());
      args.push_back(it == repl.end() ? a->arg(i) : it->second);
    }
    repl[n.get()] = Inliner(g, n->graph(), n->loc()).run(args);
  }
  detail::replace_uses(root, repl);
  return !repl.empty();
}
}  // namespace

// Sweeps until no call is left to inline, so a network nested deeper than the pipeline has
// rounds (Cells in SequentialCells in ... ) still becomes one flat graph. The bound only guards
// against a bug: every sweep removes a level of a finite, non-recursive call tree.
bool inline_calls(FuncGraph* root, const OptOptions&) {
  bool changed = false;
  for (int sweep = 0; sweep < 256 && inline_sweep(root); ++sweep) changed = true;
  return changed;
}

}  // namespace mycel::opt
