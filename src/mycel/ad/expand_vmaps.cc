// vmap taken inside a graph (ops.vmap called in a Cell's construct or a jit function, vmap of
// grad, grad of vmap, vmap of vmap). Analysis leaves each as a call `vmap_op(S)(x...)` with S
// specialized for one item; once S is optimized (inlined), this pass replaces the call by a call
// of S's batched graph, nested where the call is so S's free variables (weights) stay visible and
// shared. A vmap of a vmap makes the inner batched graph first; a grad of a vmap gets the batched
// graph as the function it differentiates; a vmap of a grad waits for expand_grad_calls to make
// the gradient graph. The caller specializes and optimizes again after each round.
#include <unordered_set>

#include "mycel/ad/vmap.h"
#include "mycel/analysis/abstract_util.h"
#include "mycel/core/error.h"

namespace mycel::ad {

using namespace ir;

namespace {

Apply* made_by(const NodePtr& n, ValueKind k) {
  Apply* a = as_apply(n);
  Constant* c = a ? as_constant(a->callee()) : nullptr;
  return c && c->value()->kind() == k ? a : nullptr;
}
Apply* vmap_fn_apply(const NodePtr& n) { return made_by(n, ValueKind::kVmapOp); }
Apply* grad_fn_apply(const NodePtr& n) { return made_by(n, ValueKind::kGradOp); }

std::vector<FuncGraph*> reachable(FuncGraph* g) {
  std::vector<FuncGraph*> out{g};
  std::unordered_set<FuncGraph*> seen{g};
  for (size_t i = 0; i < out.size(); ++i)
    for (FuncGraph* k : out[i]->used_graphs())
      if (seen.insert(k).second) out.push_back(k);
  return out;
}

/// Calls in the graphs reachable from g whose callee is made by a transform of kind k (or,
/// with `through_grad`, a gradient function whose function is a vmap function: grad of vmap).
std::vector<NodePtr> calls_of(FuncGraph* g, ValueKind k, bool through_grad) {
  std::vector<NodePtr> calls;
  for (FuncGraph* s : reachable(g))
    for (const NodePtr& n : s->toposort()) {
      Apply* a = as_apply(n);
      if (!a) continue;
      if (made_by(a->callee(), k))
        calls.push_back(n);
      else if (through_grad) {
        Apply* gm = grad_fn_apply(a->callee());
        if (gm && vmap_fn_apply(gm->arg(0))) calls.push_back(n);
      }
    }
  return calls;
}

/// Whether S still holds calls of gradient or vmap functions (to be expanded first).
bool pending(FuncGraph* S) {
  return !calls_of(S, ValueKind::kVmapOp, false).empty() ||
         !calls_of(S, ValueKind::kGradOp, false).empty();
}

std::string at(const SourceLoc& loc) { return loc.known() ? " (" + loc.str() + ")" : ""; }

/// The batched graph for `made` = vmap_op(fn) called with arguments of abstracts `args`, or nullptr
/// when fn must be made first (then `changed` tells whether a step towards it was taken).
FuncGraph* batched_graph(Apply* made, const std::vector<AbstractPtr>& args, bool& changed) {
  const auto& op = static_cast<const VmapOpValue&>(*as_constant(made->callee())->value());
  VmapSpec spec{op.in_axes(), op.out_axes()};
  int64_t b = 0;
  std::vector<BatchAxes> expanded;
  std::vector<AbstractPtr> item = unbatched_inputs(args, spec, b, expanded);
  const NodePtr& fn = made->arg(0);
  if (FuncGraph* S = constant_graph(fn)) {
    if (pending(S)) return nullptr;
    return vmap_graph_in(made->graph(), S, spec, expanded, args, b);
  }
  if (Apply* inner = vmap_fn_apply(fn)) {  // vmap of vmap: the inner batched graph first
    if (FuncGraph* Gi = batched_graph(inner, item, changed)) {
      made->set_input(1, std::make_shared<Constant>(nullptr, graph_value(Gi)));
      changed = true;
    }
    return nullptr;
  }
  if (grad_fn_apply(fn))
    return nullptr;  // vmap of grad: expand_grad_calls makes the gradient graph
  MYCEL_THROW(NotSupported, "[vmap] can only map a function or Cell known at compile time",
              at(made->loc()));
}

}  // namespace

bool has_vmap_calls(FuncGraph* top) { return !calls_of(top, ValueKind::kVmapOp, true).empty(); }

bool expand_vmap_calls(FuncGraph* top) {
  bool changed = false;
  for (const NodePtr& call : calls_of(top, ValueKind::kVmapOp, true)) {
    Apply* c = as_apply(call);
    std::vector<AbstractPtr> args;
    for (size_t i = 0; i < c->num_args(); ++i) args.push_back(c->arg(i)->abstract());
    if (Apply* made = vmap_fn_apply(c->callee())) {
      if (FuncGraph* G = batched_graph(made, args, changed)) {
        c->set_input(0, std::make_shared<Constant>(nullptr, graph_value(G)));
        changed = true;
      }
      continue;
    }
    // grad of vmap: the gradient function differentiates the batched graph (its arguments are the
    // gradient call's, less the sensitivity).
    Apply* gm = grad_fn_apply(c->callee());
    const auto& flags =
        static_cast<const GradOpValue&>(*as_constant(gm->callee())->value()).flags();
    if (flags.sens_param && !args.empty()) args.pop_back();
    if (FuncGraph* G = batched_graph(vmap_fn_apply(gm->arg(0)), args, changed)) {
      gm->set_input(1, std::make_shared<Constant>(nullptr, graph_value(G)));
      changed = true;
    }
  }
  return changed;
}

}  // namespace mycel::ad
