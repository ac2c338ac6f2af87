// vmap inside a graph: `vmap_op(fn)(x...)` (ops.vmap called or made in parsed code). Analysis
// removes the mapped axes from the call's arguments, specializes fn for one item and types the
// call by inserting the batch at out_axes; the call stays `vmap_op(fn)(x...)` until
// ad::expand_vmap_calls replaces it by a call of fn's batched graph. The axis bookkeeping here is
// shared with the top-level transform chain (pipeline::compile_transformed).
#include "mycel/analysis/engine.h"
#include "mycel/core/error.h"

namespace mycel::analysis::detail {

using namespace ir;

namespace {

/// Removes the mapped axes of one input, spelling in_axes out to its structure in `out`.
AbstractPtr strip(const AbstractPtr& a, const BatchAxes& ax, const std::string& where,
                  int64_t& size, std::string& size_from, BatchAxes& out) {
  if (!ax.leaf) {
    const AbstractTuple* t = as_tuple(a);
    if (!t || t->items().size() != ax.items.size())
      MYCEL_THROW(ValueError, "vmap: in_axes ", ax.repr(), " for ", where, " has ", ax.items.size(),
                  " entries, but the argument is ", a->repr());
    std::vector<AbstractPtr> items;
    out = BatchAxes::tuple({});
    for (size_t i = 0; i < ax.items.size(); ++i) {
      out.items.emplace_back();
      items.push_back(strip(t->items()[i], ax.items[i], where + "[" + std::to_string(i) + "]", size,
                            size_from, out.items.back()));
    }
    return std::make_shared<AbstractTuple>(std::move(items), t->is_list());
  }
  if (const AbstractTuple* t = as_tuple(a)) {  // one axis for every tensor of a tuple
    std::vector<AbstractPtr> items;
    out = BatchAxes::tuple({});
    for (size_t i = 0; i < t->items().size(); ++i) {
      out.items.emplace_back();
      items.push_back(strip(t->items()[i], ax, where + "[" + std::to_string(i) + "]", size,
                            size_from, out.items.back()));
    }
    return std::make_shared<AbstractTuple>(std::move(items), t->is_list());
  }
  out = ax;
  if (!ax.mapped) return a;
  const AbstractTensor* t = as_tensor(a);
  if (!t)
    MYCEL_THROW(ValueError, "vmap: in_axes maps ", where, " along axis ", ax.axis, ", but it is ",
                a->repr(), ", which has no axes (give None for it)");
  const Shape& s = t->shape();
  int64_t r = static_cast<int64_t>(s.size());
  if (ax.axis < -r || ax.axis >= r)
    MYCEL_THROW(ValueError, "vmap: in_axes axis ", ax.axis, " for ", where,
                " is out of range for its shape ", shape_str(s), " (rank ", r, ")");
  out.axis = ax.axis < 0 ? ax.axis + r : ax.axis;
  int64_t n = s[out.axis];
  if (n < 0)
    MYCEL_THROW(NotSupported, "vmap: ", where, " is mapped along axis ", out.axis, " of shape ",
                shape_str(s), ", whose size is only known at run time");
  if (size < 0) {
    size = n;
    size_from = where + " axis " + std::to_string(out.axis) + " of shape " + shape_str(s);
  } else if (n != size) {
    MYCEL_THROW(ValueError, "vmap: the mapped axes have different sizes: ", size_from, " has ",
                size, ", but ", where, " axis ", out.axis, " of shape ", shape_str(s), " has ", n);
  }
  Shape u = s;
  u.erase(u.begin() + out.axis);
  return std::make_shared<AbstractTensor>(u, t->dtype());
}

/// The node made by `vmap_op(fn)`, or nullptr.
Apply* vmap_fn_apply(const NodePtr& n) {
  Apply* a = as_apply(n);
  Constant* c = a ? as_constant(a->callee()) : nullptr;
  return c && c->value()->kind() == ValueKind::kVmapOp ? a : nullptr;
}

}  // namespace

bool VmapFnAbs::equals(const Abstract& o) const {
  auto* v = dynamic_cast<const VmapFnAbs*>(&o);
  return v && v->op_->equals(*op_) && v->fn_->equals(*fn_);
}

std::vector<AbstractPtr> unbatched_inputs(const std::vector<AbstractPtr>& batched,
                                          const BatchAxes& in, int64_t& batch_size,
                                          std::vector<BatchAxes>& expanded) {
  if (!in.leaf && in.items.size() != batched.size())
    MYCEL_THROW(ValueError, "vmap: in_axes ", in.repr(), " has ", in.items.size(),
                " entries, but the function is called "
                "with ",
                batched.size(), " arguments");
  batch_size = -1;
  std::string size_from;
  std::vector<AbstractPtr> out;
  expanded.assign(batched.size(), {});
  for (size_t i = 0; i < batched.size(); ++i)
    out.push_back(strip(batched[i], in.leaf ? in : in.items[i], "argument " + std::to_string(i),
                        batch_size, size_from, expanded[i]));
  if (batch_size < 0)
    MYCEL_THROW(ValueError, "vmap: in_axes ", in.repr(),
                " maps no input: at least one argument needs an axis");
  return out;
}

AbstractPtr batched_output(const AbstractPtr& a, const BatchAxes& out, int64_t b) {
  if (const AbstractTuple* t = as_tuple(a)) {
    if (!out.leaf && out.items.size() != t->items().size())
      MYCEL_THROW(ValueError, "vmap: out_axes ", out.repr(), " has ", out.items.size(),
                  " entries, but the output is ", a->repr());
    std::vector<AbstractPtr> items;
    for (size_t i = 0; i < t->items().size(); ++i)
      items.push_back(batched_output(t->items()[i], out.leaf ? out : out.items[i], b));
    return std::make_shared<AbstractTuple>(std::move(items), t->is_list());
  }
  if (!out.leaf)
    MYCEL_THROW(ValueError, "vmap: out_axes ", out.repr(), " expects a tuple, the output is ",
                a->repr());
  if (!out.mapped) return a;
  const AbstractTensor* t = as_tensor(a);
  if (!t)
    MYCEL_THROW(ValueError, "vmap: out_axes ", out.axis,
                " for an output that is not a tensor: ", a->repr());
  Shape s = t->shape();
  int64_t r = static_cast<int64_t>(s.size()) + 1;
  if (out.axis < -r || out.axis >= r)
    MYCEL_THROW(ValueError, "vmap: out_axes axis ", out.axis,
                " for the output is out of range for its batched shape (rank ", r, ")");
  s.insert(s.begin() + (out.axis < 0 ? out.axis + r : out.axis), b);
  return std::make_shared<AbstractTensor>(s, t->dtype());
}

NodePtr Engine::make_vmap_fn(Context* ctx, const NodePtr& callee, const std::vector<NodePtr>& args,
                             const SourceLoc& loc) {
  if (args.size() != 1)
    MYCEL_THROW(TypeError, "[vmap] takes the function to map, got ", args.size(), " arguments",
                where(loc));
  const AbstractPtr& fn = args[0]->abstract();
  if (!dynamic_cast<const FnAbs*>(fn.get()) && !dynamic_cast<const GradFnAbs*>(fn.get()) &&
      !dynamic_cast<const VmapFnAbs*>(fn.get()))
    MYCEL_THROW(TypeError, "[vmap] argument 'fn' must be a function or Cell, got ", fn->repr(),
                where(loc));
  auto self = std::static_pointer_cast<const VmapOpValue>(
      static_cast<const FnAbs&>(*callee->abstract()).callee());
  return emit(ctx, {callee, args[0]}, std::make_shared<VmapFnAbs>(self, fn), loc);
}

AbstractPtr Engine::vmap_output(Context* ctx, const VmapFnAbs& vf, const NodePtr& made,
                                const std::vector<AbstractPtr>& args, const SourceLoc& loc) {
  Apply* a = vmap_fn_apply(made);
  if (!a)
    MYCEL_THROW(NotSupported,
                "[vmap] a vmap function can only be called where it is made (not passed through a "
                "variable of a branch or loop, or a tuple)",
                where(loc));
  int64_t b = 0;
  std::vector<BatchAxes> expanded;
  std::vector<AbstractPtr> item;
  try {
    item = unbatched_inputs(args, vf.op().in_axes(), b, expanded);
  } catch (const Error&) {
    rethrow_with(where(loc), "");
  }
  AbstractPtr out;
  if (auto* f = dynamic_cast<const FnAbs*>(vf.fn().get()); f && f->graph()) {
    if (!f->bound_args().empty())
      MYCEL_THROW(NotSupported, "[vmap] cannot map a partial application; wrap it in a function",
                  where(loc));
    // Its arguments are matched to the parameters one to one (the transformed graph takes
    // them so): a *args or **kwargs parameter would silently take one argument as its tuple.
    if (f->graph()->var_params().any())
      MYCEL_THROW(NotSupported, "[vmap] cannot map @", f->graph()->name(),
                  ", which takes *args or **kwargs; wrap it in a function with named parameters "
                  "(def f(x, y): return g(x, y))",
                  where(loc));
    FuncGraph* spec = nullptr;
    out = call_graph(ctx, *f, item, loc, &spec);
    if (spec && f->site()) f->site()->add(spec);
  } else if (auto* g = dynamic_cast<const GradFnAbs*>(vf.fn().get())) {
    out = grad_output(ctx, *g, a->arg(0), item, loc);  // vmap of grad
  } else if (auto* v = dynamic_cast<const VmapFnAbs*>(vf.fn().get())) {
    out = vmap_output(ctx, *v, a->arg(0), item, loc);  // vmap of vmap
  } else {
    MYCEL_THROW(TypeError, "[vmap] can only map a function or Cell defined in the model, got ",
                vf.fn()->repr(), where(loc));
  }
  if (is_pending(out)) return pending();
  try {
    return batched_output(out, vf.op().out_axes(), b);
  } catch (const Error&) {
    rethrow_with(where(loc), "");
  }
  return nullptr;
}

NodePtr Engine::call_vmap_fn(Context* ctx, const NodePtr& callee, const std::vector<NodePtr>& args,
                             const SourceLoc& loc) {
  std::vector<AbstractPtr> arg_abs;
  for (const NodePtr& n : args) arg_abs.push_back(n->abstract());
  AbstractPtr out =
      vmap_output(ctx, static_cast<const VmapFnAbs&>(*callee->abstract()), callee, arg_abs, loc);
  std::vector<NodePtr> inputs{callee};
  inputs.insert(inputs.end(), args.begin(), args.end());
  return emit(ctx, std::move(inputs), out, loc);
}

}  // namespace mycel::analysis::detail
