// Gradients taken inside a graph (GradOperation in a Cell's construct, mycel.grad called from
// parsed code, grad of grad). Analysis leaves each as a call `grad_op(S, weights)(x...)` with S the
// specialized function; once S is optimized, this pass replaces the call by a call of S's gradient
// graph (grad_graph_in), nested where the call is so S's free variables (the network's weights)
// stay visible. The caller specializes and optimizes again; a gradient of a gradient takes one
// more round (the inner gradient graph is made first, then differentiated).
#include <unordered_set>

#include "mycel/ad/ad.h"
#include "mycel/ad/vmap.h"
#include "mycel/core/error.h"

namespace mycel::ad {

using namespace ir;

namespace {

Apply* grad_fn_apply(const NodePtr& n) {
  Apply* a = as_apply(n);
  Constant* c = a ? as_constant(a->callee()) : nullptr;
  return c && c->value()->kind() == ValueKind::kGradOp ? a : nullptr;
}

const GradFlags& flags_of(Apply* made) {
  return static_cast<const GradOpValue&>(*as_constant(made->callee())->value()).flags();
}

/// Every graph reachable from g through graph constants (g included).
std::vector<FuncGraph*> reachable(FuncGraph* g) {
  std::vector<FuncGraph*> out{g};
  std::unordered_set<FuncGraph*> seen{g};
  for (size_t i = 0; i < out.size(); ++i)
    for (FuncGraph* k : out[i]->used_graphs())
      if (seen.insert(k).second) out.push_back(k);
  return out;
}

/// Calls of gradient functions in the graphs reachable from g.
std::vector<NodePtr> grad_calls(FuncGraph* g) {
  std::vector<NodePtr> calls;
  for (FuncGraph* k : reachable(g))
    for (const NodePtr& n : k->toposort())
      if (grad_fn_apply(as_apply(n)->callee())) calls.push_back(n);
  return calls;
}

/// The gradient graph of S for the flags of `made`, nested in the graph `made` is in.
FuncGraph* gradient_of(FuncGraph* S, Apply* made) {
  const GradFlags& fl = flags_of(made);
  size_t n_inputs = 0;
  for (const NodePtr& p : S->parameters()) n_inputs += !as_parameter(p)->is_weight();
  GradSpec spec;
  if (fl.all_positions) {
    for (size_t i = 0; i < n_inputs; ++i) spec.positions.push_back(static_cast<int>(i));
    spec.positions_tuple = true;
  } else {
    spec.positions = fl.positions;
    spec.positions_tuple = fl.positions_tuple;
  }
  spec.return_value = fl.return_value;
  spec.has_aux = fl.has_aux;
  spec.sens_param = fl.sens_param;
  std::vector<NodePtr> weights;
  const NodePtr& w = made->arg(1);
  if (fl.with_weights &&
      !(w->is_constant() && as_constant(w)->value()->kind() == ValueKind::kNone)) {
    spec.with_weights = true;
    if (is_prim_call(w, Prim::kMakeTuple) || is_prim_call(w, Prim::kMakeList)) {
      auto* t = as_apply(w);
      weights.assign(t->inputs().begin() + 1, t->inputs().end());
    } else if (w->is_constant() &&
               (as_constant(w)->value()->kind() == ValueKind::kTuple ||
                as_constant(w)->value()->kind() == ValueKind::kList) &&
               static_cast<const SequenceValue&>(*as_constant(w)->value()).items().empty()) {
      // an empty ParameterTuple (a network without trainable weights): an empty weight part
    } else {
      weights.push_back(w);
    }
    for (const NodePtr& x : weights) {
      const Parameter* p = as_parameter(x);
      if (!p || !p->is_weight())
        MYCEL_THROW(NotSupported,
                    "[grad] the weights to differentiate must be Parameters of the network",
                    (made->loc().known() ? " (" + made->loc().str() + ")" : std::string()));
    }
  }
  return grad_graph_in(made->graph(), S, spec, weights);
}

}  // namespace

/// vmap_op(grad_op(S, w)) nodes: gradient functions given to vmap, made into graphs here.
std::vector<Apply*> mapped_grads(FuncGraph* top) {
  std::vector<Apply*> out;
  for (FuncGraph* k : reachable(top))
    for (const NodePtr& n : k->toposort()) {
      Apply* a = as_apply(n);
      Constant* c = a ? as_constant(a->callee()) : nullptr;
      if (c && c->value()->kind() == ValueKind::kVmapOp && grad_fn_apply(a->arg(0)))
        out.push_back(a);
    }
  return out;
}

bool expand_grad_calls(FuncGraph* top) {
  std::vector<NodePtr> calls = grad_calls(top);
  std::vector<Apply*> mapped = mapped_grads(top);
  if (calls.empty() && mapped.empty()) return false;
  bool changed = false;
  for (Apply* vm : mapped) {  // vmap of grad: vmap maps S's gradient graph
    Apply* inner = grad_fn_apply(vm->arg(0));
    FuncGraph* S = constant_graph(inner->arg(0));
    if (!S)
      MYCEL_THROW(NotSupported,
                  "[vmap] of a gradient of a transformed function inside a graph is not supported; "
                  "take the gradient of a function that calls it",
                  (vm->loc().known() ? " (" + vm->loc().str() + ")" : std::string()));
    if (!grad_calls(S).empty() || has_vmap_calls(S)) continue;
    vm->set_input(1, std::make_shared<Constant>(nullptr, graph_value(gradient_of(S, inner))));
    changed = true;
  }
  for (const NodePtr& call : calls) {
    Apply* made = grad_fn_apply(as_apply(call)->callee());
    const NodePtr& fn = made->arg(0);
    if (FuncGraph* S = constant_graph(fn)) {
      if (!grad_calls(S).empty() || has_vmap_calls(S))
        continue;  // its own transforms first (next round)
      FuncGraph* G = gradient_of(S, made);
      as_apply(call)->set_input(0, std::make_shared<Constant>(nullptr, graph_value(G)));
      changed = true;
    } else if (Apply* v = as_apply(fn);
               v && as_constant(v->callee()) &&
               as_constant(v->callee())->value()->kind() == ValueKind::kVmapOp) {
      continue;  // grad of vmap: expand_vmap_calls makes the batched graph first
    } else if (grad_fn_apply(fn)) {  // grad of grad: make the innermost gradient a graph
      Apply* outer = made;
      Apply* inner = grad_fn_apply(fn);
      while (Apply* deeper = grad_fn_apply(inner->arg(0))) {
        outer = inner;
        inner = deeper;
      }
      made = outer;
      FuncGraph* S = constant_graph(inner->arg(0));
      if (!S)
        MYCEL_THROW(NotSupported, "[grad] can only differentiate functions defined in the model",
                    (made->loc().known() ? " (" + made->loc().str() + ")" : std::string()));
      if (!grad_calls(S).empty()) continue;
      made->set_input(1, std::make_shared<Constant>(nullptr, graph_value(gradient_of(S, inner))));
      changed = true;
    } else {
      MYCEL_THROW(NotSupported,
                  "[grad] a gradient function can only differentiate a function or Cell known "
                  "at compile time",
                  (made->loc().known() ? " (" + made->loc().str() + ")" : std::string()));
    }
  }
  if (!changed && !has_vmap_calls(top))
    MYCEL_THROW(RuntimeError,
                "[grad] gradients inside the graph could not be expanded (a cycle of gradients?)");
  return true;
}

}  // namespace mycel::ad
