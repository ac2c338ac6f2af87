// Gradients inside a graph: `GradOperation(...)(fn, weights)(x...)`, or a mycel.grad /
// value_and_grad function called from parsed code. Analysis specializes fn for the call's
// arguments and types the call by the gradient conventions; the call stays in the graph as
// `grad_op(fn, weights)(x...)` until ad::expand_grad_calls replaces it by a call of fn's gradient
// graph, which needs fn specialized and optimized first (the J transform works on such graphs).
#include "mycel/analysis/engine.h"
#include "mycel/core/error.h"

namespace mycel::analysis::detail {

using namespace ir;

namespace {

/// The sensitivity of a value of abstract a: float and complex tensors keep their type, tuples go
/// item by item, everything else (ints, bools, integer tensors, functions) gets None.
AbstractPtr sens_of(const AbstractPtr& a) {
  if (auto* t = as_tensor(a))
    return is_floating(t->dtype()) || is_complex(t->dtype()) ? a : std::make_shared<AbstractNone>();
  if (auto* t = as_tuple(a)) {
    std::vector<AbstractPtr> items;
    for (const auto& i : t->items()) items.push_back(sens_of(i));
    return std::make_shared<AbstractTuple>(std::move(items));
  }
  return std::make_shared<AbstractNone>();
}

/// The node made by `grad_op(fn, weights)`, or nullptr.
Apply* grad_fn_apply(const NodePtr& n) {
  Apply* a = as_apply(n);
  Constant* c = a ? as_constant(a->callee()) : nullptr;
  return c && c->value()->kind() == ValueKind::kGradOp ? a : nullptr;
}

}  // namespace

NodePtr Engine::make_grad_fn(Context* ctx, const NodePtr& callee, const GradOpValue& op,
                             const std::vector<NodePtr>& args, const SourceLoc& loc) {
  if (args.empty() || args.size() > 2)
    MYCEL_THROW(TypeError, "[GradOperation] takes the function and optionally the weights, got ",
                args.size(), " arguments", where(loc));
  const AbstractPtr& fn = args[0]->abstract();
  if (!dynamic_cast<const FnAbs*>(fn.get()) && !dynamic_cast<const GradFnAbs*>(fn.get()) &&
      !dynamic_cast<const VmapFnAbs*>(fn.get()))
    MYCEL_THROW(TypeError, "[GradOperation] argument 'fn' must be a function or Cell, got ",
                fn->repr(), where(loc));
  NodePtr weights = args.size() == 2 && op.flags().with_weights ? args[1] : constant(ctx, none());
  if (op.flags().with_weights && weights->abstract()->kind() == AbstractKind::kNone &&
      args.size() == 2 && !as_constant(args[1]))
    weights = args[1];
  const AbstractPtr& wa = weights->abstract();
  if (op.flags().with_weights && wa->kind() == AbstractKind::kNone &&
      op.flags().positions.empty() && !op.flags().all_positions)
    MYCEL_THROW(TypeError,
                "[GradOperation] get_by_list=True needs the weights: grad_op(fn, weights)",
                where(loc));
  if (wa->kind() != AbstractKind::kNone && !as_tuple(wa) && !as_tensor(wa))
    MYCEL_THROW(
        TypeError,
        "[GradOperation] argument 'weights' must be a Parameter or a tuple of Parameters, got ",
        wa->repr(), where(loc));
  auto self = std::static_pointer_cast<const GradOpValue>(
      static_cast<const FnAbs&>(*callee->abstract()).callee());
  return emit(ctx, {callee, args[0], weights}, std::make_shared<GradFnAbs>(self, fn, wa), loc);
}

AbstractPtr Engine::grad_output(Context* ctx, const GradFnAbs& gf, const NodePtr& made,
                                std::vector<AbstractPtr> args, const SourceLoc& loc) {
  const GradFlags& fl = gf.op().flags();
  Apply* a = grad_fn_apply(made);
  if (!a)
    MYCEL_THROW(NotSupported,
                "[grad] a gradient function can only be called where it is made (not passed "
                "through a variable of a branch or loop, or a tuple)",
                where(loc));
  if (fl.sens_param) {
    if (args.empty())
      MYCEL_THROW(TypeError, "[grad] sens_param=True needs the sensitivity as the last argument",
                  where(loc));
    args.pop_back();
  }
  AbstractPtr out;
  if (auto* f = dynamic_cast<const FnAbs*>(gf.fn().get()); f && f->graph()) {
    if (!f->bound_args().empty())
      MYCEL_THROW(NotSupported,
                  "[grad] cannot differentiate a partial application; wrap it in a function",
                  where(loc));
    // Its arguments are matched to the parameters one to one (the transformed graph takes
    // them so): a *args or **kwargs parameter would silently take one argument as its tuple.
    if (f->graph()->var_params().any())
      MYCEL_THROW(NotSupported, "[grad] cannot differentiate @", f->graph()->name(),
                  ", which takes *args or **kwargs; wrap it in a function with named parameters "
                  "(def f(x, y): return g(x, y))",
                  where(loc));
    FuncGraph* spec = nullptr;
    out = call_graph(ctx, *f, args, loc, &spec);
    if (spec && f->site()) f->site()->add(spec);
  } else if (auto* inner = dynamic_cast<const GradFnAbs*>(gf.fn().get())) {
    out = grad_output(ctx, *inner, a->arg(0), args, loc);  // grad of grad
  } else if (auto* v = dynamic_cast<const VmapFnAbs*>(gf.fn().get())) {
    out = vmap_output(ctx, *v, a->arg(0), args, loc);  // grad of vmap
  } else {
    MYCEL_THROW(TypeError,
                "[grad] can only differentiate a function or Cell defined in the model, got ",
                gf.fn()->repr(), where(loc));
  }
  if (is_pending(out)) return pending();

  std::vector<int> positions = fl.positions;
  bool as_tuple_out = fl.positions_tuple;
  if (fl.all_positions) {
    positions.clear();
    for (size_t i = 0; i < args.size(); ++i) positions.push_back(static_cast<int>(i));
    as_tuple_out = true;
  }
  std::vector<AbstractPtr> pos;
  for (int p : positions) {
    if (p < 0 || static_cast<size_t>(p) >= args.size())
      MYCEL_THROW(ValueError, "[grad] grad_position ", p, " is out of range: the function takes ",
                  args.size(), " inputs", where(loc));
    pos.push_back(sens_of(args[p]));
  }
  const bool with_weights = fl.with_weights && gf.weights()->kind() != AbstractKind::kNone;
  if (positions.empty() && !with_weights)
    MYCEL_THROW(ValueError,
                "[grad] grad_position is None and no weights given: nothing to differentiate",
                where(loc));
  AbstractPtr pos_out =
      pos.size() == 1 && !as_tuple_out ? pos[0] : std::make_shared<AbstractTuple>(pos);
  AbstractPtr grads = pos_out;
  if (with_weights) {
    std::vector<AbstractPtr> ws;
    if (auto* t = as_tuple(gf.weights()))
      ws = t->items();
    else
      ws.push_back(gf.weights());
    for (auto& w : ws) w = sens_of(w);
    AbstractPtr w_out = std::make_shared<AbstractTuple>(ws);
    grads = positions.empty()
                ? w_out
                : std::make_shared<AbstractTuple>(std::vector<AbstractPtr>{pos_out, w_out});
  }
  if (fl.return_value) return std::make_shared<AbstractTuple>(std::vector<AbstractPtr>{out, grads});
  if (fl.has_aux) {
    auto* t = as_tuple(out);
    if (!t || t->items().empty())
      MYCEL_THROW(TypeError,
                  "[grad] has_aux=True needs the function to return a tuple (output, aux...), got ",
                  out->repr(), where(loc));
    std::vector<AbstractPtr> aux(t->items().begin() + 1, t->items().end());
    return std::make_shared<AbstractTuple>(
        std::vector<AbstractPtr>{grads, std::make_shared<AbstractTuple>(std::move(aux))});
  }
  return grads;
}

NodePtr Engine::call_grad_fn(Context* ctx, const NodePtr& callee, const std::vector<NodePtr>& args,
                             const SourceLoc& loc) {
  std::vector<AbstractPtr> arg_abs;
  for (const NodePtr& n : args) arg_abs.push_back(n->abstract());
  AbstractPtr out =
      grad_output(ctx, static_cast<const GradFnAbs&>(*callee->abstract()), callee, arg_abs, loc);
  std::vector<NodePtr> inputs{callee};
  inputs.insert(inputs.end(), args.begin(), args.end());
  return emit(ctx, std::move(inputs), out, loc);
}

}  // namespace mycel::analysis::detail
