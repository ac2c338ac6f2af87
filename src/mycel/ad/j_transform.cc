// The J transform (see ad.h). Each graph g (with an ordered list of free variables) becomes g_J,
// built lazily node by node; its bprop graph is built after the forward part, walking g's applies
// in reverse and accumulating sensitivities per original node. A call of a graph (directly, through
// a switch of graphs or a partial) calls the callee's J graph and keeps the bprop closure it
// returns; the backward pass calls that closure and spreads what it returns over the free variables
// and the arguments of the call.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "mycel/ad/ad.h"
#include "mycel/ad/detail.h"
#include "mycel/core/error.h"

namespace mycel::ad::detail {

using namespace ir;

namespace {
std::string at(const SourceLoc& loc) { return loc.known() ? " (at " + loc.str() + ")" : ""; }

// Float and complex tensors carry sensitivities (complex ones under the convention of
// ops/bprop_complex.h).
bool is_float_tensor(const AbstractPtr& a) {
  if (!a || a->kind() != AbstractKind::kTensor) return false;
  const DType t = static_cast<const AbstractTensor&>(*a).dtype();
  return is_floating(t) || is_complex(t);
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Values with sensitivities: float tensors, and tuples holding some.

bool differentiable(const AbstractPtr& a) {
  if (is_float_tensor(a)) return true;
  if (a && a->kind() == AbstractKind::kTuple)
    for (const auto& i : static_cast<const AbstractTuple&>(*a).items())
      if (differentiable(i)) return true;
  return false;
}

NodePtr Transformer::none() { return cst(ir::none()); }

NodePtr Transformer::getitem(FuncGraph* g, const NodePtr& t, size_t i) {
  if (Apply* a = as_apply(t);
      a && (is_prim_call(t, Prim::kMakeTuple) || is_prim_call(t, Prim::kMakeList)))
    return a->arg(i);
  return g->prim(Prim::kTupleGetItem, {t, cst(integer(static_cast<int64_t>(i)))});
}

NodePtr Transformer::zeros(FuncGraph* g, const NodePtr& fwd, const AbstractPtr& a) {
  if (is_float_tensor(a)) return g->apply({op_const("zeros_like"), fwd});
  if (a && a->kind() == AbstractKind::kTuple && differentiable(a)) {
    const auto& items = static_cast<const AbstractTuple&>(*a).items();
    std::vector<NodePtr> z;
    for (size_t i = 0; i < items.size(); ++i) z.push_back(zeros(g, getitem(g, fwd, i), items[i]));
    return g->prim(Prim::kMakeTuple, std::move(z));
  }
  return none();
}

NodePtr Transformer::add(FuncGraph* g, const NodePtr& x, const NodePtr& y, const AbstractPtr& a) {
  if (!x) return y;
  if (!y) return x;
  if (is_float_tensor(a)) return g->apply({op_const("add"), x, y});
  if (a && a->kind() == AbstractKind::kTuple && differentiable(a)) {
    const auto& items = static_cast<const AbstractTuple&>(*a).items();
    std::vector<NodePtr> s;
    for (size_t i = 0; i < items.size(); ++i)
      s.push_back(differentiable(items[i]) ? add(g, getitem(g, x, i), getitem(g, y, i), items[i])
                                           : none());
    return g->prim(Prim::kMakeTuple, std::move(s));
  }
  return none();
}

NodePtr Transformer::op_const(const char* name, const std::map<std::string, AttrValue>& attrs) {
  const OpDef& op = Registry::get().at(name);
  return cst(op_value(&op, make_attrs(op, attrs)));
}

// ---------------------------------------------------------------------------------------------
// Graph states.

GraphJ* Transformer::vjp(FuncGraph* g, const std::vector<NodePtr>& fvs) {
  return build(g, fvs, true);
}

const std::vector<NodePtr>& Transformer::free_variables(FuncGraph* g) {
  auto it = free_variables_.find(g);
  if (it != free_variables_.end()) return it->second;
  std::vector<NodePtr> fvs;
  std::unordered_set<const Node*> seen;
  std::vector<FuncGraph*> work{g};
  std::unordered_set<const FuncGraph*> visited{g};
  for (size_t i = 0; i < work.size(); ++i) {
    // g's own free variables, and its callees' that live in a graph enclosing g (visible here):
    // a callee defined elsewhere (a closure passed in) brings its sensitivities back itself.
    for (const NodePtr& v : work[i]->free_variables())
      if ((i == 0 || (v->graph() && v->graph()->is_ancestor_of(g))) && seen.insert(v.get()).second)
        fvs.push_back(v);
    for (FuncGraph* k : work[i]->used_graphs())
      if (visited.insert(k).second) work.push_back(k);
  }
  return free_variables_[g] = std::move(fvs);
}

FuncGraph* Transformer::forward(FuncGraph* g) {
  if (!g->parent() || (g->free_variables().empty() && forward_parent(g->parent()) == g->parent()))
    return g;  // callable here as it is
  return build(g, {}, false)->graph;
}

// A state for transforming g into `graph`, whose parameters mirror g's (weights stay bound).
GraphJ* Transformer::new_state(FuncGraph* g, std::vector<NodePtr> fvs, FuncGraph* graph,
                               bool want_vjp) {
  auto st = std::make_unique<GraphJ>();
  GraphJ* s = st.get();
  states_.push_back(std::move(st));
  s->orig = g;
  s->vjp = want_vjp;
  s->fvs = std::move(fvs);
  s->graph = graph;
  for (const NodePtr& p : g->parameters()) {
    NodePtr q = graph->add_parameter(as_parameter(p)->name());
    if (as_parameter(p)->is_weight()) as_parameter(q)->bind(as_parameter(p)->bound());
    q->set_abstract(p->abstract());
    q->set_loc(p->loc());
    s->fwd[p.get()] = q;
  }
  return s;
}

// The output sensitivity, a last parameter of a vjp graph.
NodePtr Transformer::dout_parameter(GraphJ* s) {
  NodePtr dout = s->graph->add_parameter("dout");
  dout->set_abstract(s->orig->output()->abstract());
  return dout;
}

GraphJ* Transformer::build(FuncGraph* g, const std::vector<NodePtr>& fvs_in, bool want_vjp) {
  std::vector<NodePtr> fvs = fvs_in.empty() ? free_variables(g) : fvs_in;
  std::vector<const Node*> key;
  for (const NodePtr& n : fvs) key.push_back(n.get());
  FuncGraph* parent = g->parent() ? forward_parent(g->parent()) : nullptr;
  Key k{g, key, parent, want_vjp};
  auto it = memo_.find(k);
  if (it != memo_.end()) return it->second;  // also a recursive use while it is being built
  GraphJ* s =
      new_state(g, std::move(fvs),
                g->module()->add_graph(g->name() + (want_vjp ? "_vjp" : "_fwd"), parent), want_vjp);
  memo_[k] = s;
  NodePtr dout = want_vjp ? dout_parameter(s) : nullptr;
  active_.push_back(s);
  if (want_vjp && g->bprop()) {  // a Cell's own bprop replaces the transform of its body
    build_custom(s, dout);
    active_.pop_back();
    return s;
  }
  for (const NodePtr& n : g->toposort()) fwd(s, n);  // forward values, in order
  NodePtr out = fwd(s, g->output());
  if (want_vjp)
    build_bprop(s, dout);
  else
    s->graph->set_output(out);
  active_.pop_back();
  return s;
}

GraphJ* Transformer::vjp_primal(FuncGraph* f,
                                const std::function<NodePtr(FuncGraph*, const NodePtr&)>& seed) {
  if (f->bprop()) return nullptr;
  FuncGraph* parent = f->parent() ? forward_parent(f->parent()) : nullptr;
  GraphJ* s = new_state(f, free_variables(f),
                        f->module()->add_graph(f->name() + "_vjp_primal", parent), true);
  s->primal = true;
  NodePtr dout = seed ? nullptr : dout_parameter(s);
  active_.push_back(s);
  for (const NodePtr& n : f->toposort()) fwd(s, n);
  NodePtr out = fwd(s, f->output());
  if (seed) dout = seed(s->graph, out);
  build_bprop(s, dout);
  s->graph->set_output(s->graph->prim(Prim::kMakeTuple, {s->graph->output(), out}));
  active_.pop_back();
  return s;
}

// g_vjp(x..., dout) = ((zeros for the free variables...), bprop(x..., g(x...), dout)...): the
// user's rule gives the inputs' sensitivities; weights and other free variables get none.
void Transformer::build_custom(GraphJ* s, const NodePtr& dout) {
  FuncGraph* g = s->orig;
  FuncGraph* G = s->graph;
  std::vector<NodePtr> xs;
  for (const NodePtr& p : g->parameters()) xs.push_back(s->fwd[p.get()]);
  std::vector<NodePtr> call{cst(graph_value(forward(g)))};
  call.insert(call.end(), xs.begin(), xs.end());
  NodePtr out = G->apply(std::move(call), g->output()->loc());
  std::vector<NodePtr> bcall{cst(graph_value(forward(g->bprop())))};
  for (size_t i = 0; i < xs.size(); ++i)
    if (!as_parameter(g->parameters()[i])->is_weight()) bcall.push_back(xs[i]);
  bcall.push_back(out);
  bcall.push_back(dout);
  NodePtr r = G->apply(std::move(bcall), g->output()->loc());
  std::vector<NodePtr> fv_sens;
  for (const NodePtr& v : s->fvs)
    fv_sens.push_back(differentiable(v->abstract()) ? zeros(G, fwd(s, v), v->abstract()) : none());
  std::vector<NodePtr> result{G->prim(Prim::kMakeTuple, std::move(fv_sens))};
  size_t k = 0;  // index into the bprop's result (inputs only; weights get zeros)
  for (size_t i = 0; i < xs.size(); ++i) {
    const NodePtr& p = g->parameters()[i];
    if (as_parameter(p)->is_weight()) {
      result.push_back(zeros(G, xs[i], p->abstract()));
      continue;
    }
    result.push_back(differentiable(p->abstract()) ? getitem(G, r, k) : none());
    ++k;
  }
  G->set_output(G->prim(Prim::kMakeTuple, std::move(result)));
}

void Transformer::enter_identity(FuncGraph* g) {
  auto st = std::make_unique<GraphJ>();
  st->orig = g;
  st->graph = g;
  st->identity = true;
  active_.push_back(st.get());
  states_.push_back(std::move(st));
}

// A vjp graph recomputes its forward values; the primal forward already ran, so an op that
// updates state in place (batch_norm's moving statistics) must not update it again here: its
// momentum becomes 0 (the update then writes the old statistics back). Its outputs are unchanged.
ValuePtr Transformer::recompute_safe(const ValuePtr& v) const {
  if (v->kind() != ValueKind::kOp) return v;
  const auto& ov = static_cast<const OpValue&>(*v);
  if (ov.op().mutated_inputs.empty()) return v;
  bool recomputing = false;
  for (const GraphJ* s : active_) recomputing |= s->vjp && !s->primal;
  if (!recomputing) return v;
  int m = ov.op().attr_index("momentum");
  if (m < 0)
    MYCEL_THROW(
        NotSupported, "[grad] op ", ov.op().name,
        " updates its inputs in place and has no momentum "
        "attribute to switch the update off while its forward is recomputed for the gradient");
  Attrs attrs = ov.attrs();
  attrs.values()[m] = AttrValue(0.0);
  return op_value(&ov.op(), std::move(attrs));
}

FuncGraph* Transformer::forward_parent(FuncGraph* g) {
  // The graph standing for g where transformed code runs: the innermost one being built.
  for (size_t i = active_.size(); i-- > 0;)
    if (active_[i]->orig == g) return active_[i]->graph;
  MYCEL_THROW(
      NotSupported, "[grad] the function @", g->name(),
      " is used outside the function it is defined in; autodiff needs closures to be called "
      "where they are defined");
}

GraphJ* Transformer::owner(const Node* n) {
  for (size_t i = active_.size(); i-- > 0;)
    if (active_[i]->orig == n->graph()) return active_[i];
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Forward values.

NodePtr Transformer::fwd(GraphJ* s, const NodePtr& n) {
  if (Constant* c = as_constant(n)) {
    if (FuncGraph* g = constant_graph(n)) return cst(graph_value(forward(g)));
    NodePtr k = cst(c->value());
    k->set_abstract(n->abstract());
    return k;
  }
  if (n->graph() != s->orig) {
    GraphJ* o = owner(n.get());
    if (!o)
      MYCEL_THROW(RuntimeError, "[grad] a free variable's graph @", n->graph()->name(),
                  " is not being transformed");
    return fwd(o, n);
  }
  if (s->identity) return n;
  auto it = s->fwd.find(n.get());
  if (it != s->fwd.end()) return it->second;
  if (!n->is_apply())
    MYCEL_THROW(RuntimeError, "[grad] parameter of @", s->orig->name(), " has no forward value");
  NodePtr r = fwd_apply(s, n);
  r->set_abstract(n->abstract());
  r->set_loc(n->loc());
  r->set_debug_name(n->debug_name());
  s->fwd[n.get()] = r;
  return r;
}

NodePtr Transformer::fwd_apply(GraphJ* s, const NodePtr& n) {
  const Apply& a = *as_apply(n);
  FuncGraph* g = s->graph;
  std::vector<NodePtr> args;
  for (size_t i = 0; i < a.num_args(); ++i) args.push_back(fwd(s, a.arg(i)));
  auto call = [&](NodePtr callee, std::vector<NodePtr> in, CallSite cs) {
    in.insert(in.begin(), std::move(callee));
    if (s->vjp) s->calls[n.get()] = std::move(cs);
    return g->apply(std::move(in), n->loc());
  };

  const NodePtr& callee = a.callee();
  if (Constant* c = as_constant(callee)) {
    const ValuePtr& v = c->value();
    if (v->kind() == ValueKind::kOp && static_cast<const OpValue&>(*v).op().record_only) {
      // A summary op recomputed for the gradient would record its value a second time: the
      // primal forward already did, so the recomputation gets the op's placeholder output.
      bool recomputing = false;
      for (const GraphJ* r : active_) recomputing |= r->vjp && !r->primal;
      if (recomputing) return cst(tensor_value(Tensor::zeros({1}, DType::int32)));
    }
    if (v->kind() == ValueKind::kOp || v->kind() == ValueKind::kPrim) {
      args.insert(args.begin(), cst(recompute_safe(v)));
      return g->apply(std::move(args), n->loc());
    }
    if (FuncGraph* f = constant_graph(callee)) {
      CallSite cs;
      cs.callee = f;
      cs.fvs = free_variables(f);
      return call(cst(graph_value(forward(f))), std::move(args), std::move(cs));
    }
    MYCEL_THROW(NotSupported, "[grad] cannot differentiate a call of ", v->repr(), at(n->loc()));
  }
  // Calls through values: a switch of graphs, a partial application.
  if (is_prim_call(callee, Prim::kSwitch)) {
    const Apply& sw = *as_apply(callee);
    FuncGraph* g1 = constant_graph(sw.arg(1));
    FuncGraph* g2 = constant_graph(sw.arg(2));
    if (!g1 || !g2)
      MYCEL_THROW(NotSupported,
                  "[grad] a switch between functions that are not defined in the model",
                  at(n->loc()));
    CallSite cs;
    cs.callee = g1;
    cs.other = g2;
    cs.cond = fwd(s, sw.arg(0));
    cs.fvs = free_variables(g1);
    for (const NodePtr& v : free_variables(g2))
      if (std::find(cs.fvs.begin(), cs.fvs.end(), v) == cs.fvs.end()) cs.fvs.push_back(v);
    NodePtr sw_f = g->prim(Prim::kSwitch,
                           {cs.cond, cst(graph_value(forward(g1))), cst(graph_value(forward(g2)))},
                           callee->loc());
    return call(sw_f, std::move(args), std::move(cs));
  }
  if (is_prim_call(callee, Prim::kPartial)) {
    const Apply& p = *as_apply(callee);
    FuncGraph* f = constant_graph(p.arg(0));
    if (!f)
      MYCEL_THROW(NotSupported,
                  "[grad] a partial application of a function not defined in the model",
                  at(n->loc()));
    CallSite cs;
    cs.callee = f;
    cs.fvs = free_variables(f);
    std::vector<NodePtr> in;
    for (size_t i = 1; i < p.num_args(); ++i) {
      in.push_back(fwd(s, p.arg(i)));
      cs.bound.push_back(p.arg(i));
    }
    in.insert(in.end(), args.begin(), args.end());
    return call(cst(graph_value(forward(f))), std::move(in), std::move(cs));
  }
  MYCEL_THROW(NotSupported, "[grad] cannot differentiate this call of a function value (",
              callee->abstract() ? callee->abstract()->repr() : "?",
              "); call functions directly or through if/else", at(n->loc()));
}

}  // namespace mycel::ad::detail
