// Gradient graphs: call f_J, seed the output sensitivity, call the bprop closure and pick what
// the user asked for (MindSpore's grad / value_and_grad / GradOperation output conventions).
#include <functional>

#include "mycel/ad/ad.h"
#include "mycel/ad/detail.h"
#include "mycel/core/error.h"

namespace mycel::ad {

using namespace ir;
using detail::cst;
using detail::Transformer;

ir::FuncGraph* vjp_graph(ir::FuncGraph* f) {
  Transformer t;
  return t.vjp(f, {})->graph;
}

namespace {

// Ones for every float tensor of the output (zeros for aux items with has_aux).
NodePtr seed(FuncGraph* g, const NodePtr& out, const AbstractPtr& a, bool first_only) {
  if (a->kind() == AbstractKind::kTensor) {
    if (!is_floating(static_cast<const AbstractTensor&>(*a).dtype()))
      MYCEL_THROW(TypeError,
                  "[grad] the function's output must be a float tensor to differentiate, got ",
                  a->repr());
    return g->apply({Transformer::op_const("ones_like"), out});
  }
  if (a->kind() == AbstractKind::kTuple) {
    const auto& items = static_cast<const AbstractTuple&>(*a).items();
    if (items.empty()) MYCEL_THROW(TypeError, "[grad] the function returns an empty tuple");
    std::vector<NodePtr> s;
    for (size_t i = 0; i < items.size(); ++i) {
      NodePtr item = Transformer::getitem(g, out, i);
      if (first_only && i > 0)
        s.push_back(Transformer::zeros(g, item, items[i]));
      else if (detail::differentiable(items[i]))
        s.push_back(seed(g, item, items[i], false));
      else
        s.push_back(Transformer::none());
    }
    return g->prim(Prim::kMakeTuple, std::move(s));
  }
  // A Python number (P.Size()(x), len(...)): no sensitivity flows, every input's gradient is
  // zero, as MindSpore's GradOperation gives.
  if (a->kind() == AbstractKind::kScalar) return Transformer::none();
  MYCEL_THROW(TypeError,
              "[grad] the function's output must be a tensor or a tuple of tensors, got ",
              a->repr());
}

FuncGraph* build(FuncGraph* G, FuncGraph* f, const GradSpec& spec, Transformer& t,
                 const std::vector<NodePtr>& weight_fvs) {
  std::vector<NodePtr> call{nullptr};  // the callee comes below
  std::vector<NodePtr> inputs;         // the non-weight parameters, in order
  size_t n_inputs = 0;
  for (const NodePtr& p : f->parameters()) {
    NodePtr q = G->add_parameter(as_parameter(p)->name());
    if (as_parameter(p)->is_weight())
      as_parameter(q)->bind(as_parameter(p)->bound());
    else
      ++n_inputs, inputs.push_back(q);
    q->set_abstract(p->abstract());
    q->set_loc(p->loc());
    call.push_back(q);
  }
  NodePtr sens_in;
  if (spec.sens_param) {
    sens_in = G->add_parameter("sens");
    sens_in->set_abstract(f->output()->abstract());
  }
  const AbstractPtr& oa = f->output()->abstract();
  if (spec.has_aux && (oa->kind() != AbstractKind::kTuple ||
                       static_cast<const AbstractTuple&>(*oa).items().empty()))
    MYCEL_THROW(TypeError,
                "[grad] has_aux=True needs the function to return a tuple (output, aux...), got ",
                oa->repr());
  // One forward: the vjp computes f's value, seeds the sensitivity from it and returns both, so
  // nothing of the forward runs twice (collectives and summaries happen once per step).
  std::function<NodePtr(FuncGraph*, const NodePtr&)> seed_from;
  if (!sens_in)
    seed_from = [&](FuncGraph* g, const NodePtr& v) { return seed(g, v, oa, spec.has_aux); };
  detail::GraphJ* s = t.vjp_primal(f, seed_from);
  NodePtr out, d;
  if (s) {
    call[0] = cst(graph_value(s->graph));
    if (sens_in) call.push_back(sens_in);
    NodePtr r = G->apply(std::move(call));
    d = Transformer::getitem(G, r, 0);
    out = Transformer::getitem(G, r, 1);
  } else {  // a custom bprop calls the forward itself: the primal call gives the value
    call[0] = cst(graph_value(t.forward(f)));
    std::vector<NodePtr> vjp_call = call;
    out = G->apply(std::move(call));
    NodePtr sens = sens_in ? sens_in : seed(G, out, oa, spec.has_aux);
    s = t.vjp(f, {});
    vjp_call[0] = cst(graph_value(s->graph));
    vjp_call.push_back(sens);
    d = G->apply(std::move(vjp_call));
  }

  std::vector<NodePtr> pos;
  for (int p : spec.positions) {
    if (p < 0 || static_cast<size_t>(p) >= n_inputs)
      MYCEL_THROW(ValueError, "[grad] grad_position ", p, " is out of range: the function takes ",
                  n_inputs, " inputs");
    // A Python number as the output: MindSpore gives each tensor input a zero gradient of its
    // own shape and dtype (integer inputs included).
    if (oa->kind() == AbstractKind::kScalar && !sens_in && inputs[p]->abstract() &&
        inputs[p]->abstract()->kind() == AbstractKind::kTensor)
      pos.push_back(G->apply({Transformer::op_const("zeros_like"), inputs[p]}));
    else
      pos.push_back(Transformer::getitem(G, d, 1 + p));
  }
  std::vector<NodePtr> ws;
  for (int w : spec.weight_params) ws.push_back(Transformer::getitem(G, d, 1 + w));
  if (!weight_fvs.empty()) {
    NodePtr fv_sens = Transformer::getitem(G, d, 0);
    for (const NodePtr& w : weight_fvs) {
      size_t k = 0;
      while (k < s->fvs.size() && s->fvs[k] != w) ++k;
      ws.push_back(k < s->fvs.size() ? Transformer::getitem(G, fv_sens, k)
                                     : Transformer::zeros(G, w, w->abstract()));  // unused weight
    }
  }
  NodePtr grads;
  NodePtr pos_out =
      pos.size() == 1 && !spec.positions_tuple ? pos[0] : G->prim(Prim::kMakeTuple, pos);
  NodePtr w_out = G->prim(Prim::kMakeTuple, ws);
  if (spec.with_weights)
    grads = spec.positions.empty() ? w_out : G->prim(Prim::kMakeTuple, {pos_out, w_out});
  else
    grads = pos_out;
  NodePtr result = grads;
  if (spec.return_value) {
    result = G->prim(Prim::kMakeTuple, {out, grads});
  } else if (spec.has_aux && spec.aux_out) {
    const auto& items = static_cast<const AbstractTuple&>(*oa).items();
    std::vector<NodePtr> aux;
    for (size_t i = 1; i < items.size(); ++i) aux.push_back(Transformer::getitem(G, out, i));
    result = G->prim(Prim::kMakeTuple, {grads, G->prim(Prim::kMakeTuple, aux)});
  }
  G->set_output(result);
  return G;
}

}  // namespace

FuncGraph* grad_graph(FuncGraph* f, const GradSpec& spec) {
  if (f->parent())
    MYCEL_THROW(RuntimeError, "[grad] grad_graph needs a top-level graph, @", f->name(),
                " is nested");
  Transformer t;
  return build(f->module()->add_graph(f->name() + "_grad"), f, spec, t, {});
}

FuncGraph* grad_graph_in(FuncGraph* parent, FuncGraph* f, const GradSpec& spec,
                         const std::vector<NodePtr>& weights) {
  Transformer t;
  for (FuncGraph* p = f->parent(); p; p = p->parent())
    t.enter_identity(p);  // outermost last is fine
  return build(f->module()->add_graph(f->name() + "_grad", parent), f, spec, t, weights);
}

}  // namespace mycel::ad
