#include "mycel/analysis/engine.h"

#include <sstream>

#include "mycel/analysis/records.h"
#include "mycel/core/error.h"
#include "mycel/core/stack.h"
#include "mycel/ir/raised.h"

namespace mycel::analysis::detail {

using namespace ir;

namespace {
// A loop over compile-time values that grows a tuple or list unrolls past max_unroll up to this
// many levels (each level nests the analysis deeper).
constexpr int kMaxGrowingUnroll = 128;

// Prefix of the text that stands for a run-time value in an exception's f-string message
// (graph_syntax.py's format_message shows it as "<what is known of it>").
constexpr const char* kRunTimeFieldMarker = "@@mycel-run-time@@";
// Nested specializations at most: each level is a few C++ frames of the analysis (~2.7 KB of
// stack measured: an 8 MB thread stack overflowed near 3000 levels); a 128-iteration unrolled
// loop that grows a list needs about 1000.
constexpr size_t kMaxNesting = 1500;
// Stack kept free below the analysis: one more level of it, the error's unwinding and whatever
// the caller runs after, under any thread's stack size (kMaxNesting alone assumes 8 MB).
constexpr size_t kStackReserve = size_t{256} << 10;

// A loop-carried tuple, list or dict that changes length cannot be widened: a loop over
// compile-time values keeps unrolling (true), up to kMaxGrowingUnroll levels; in a loop that
// stays one (a run-time trip count) it is a located error naming the variable.
bool keeps_unrolling(const FuncGraph& g, const std::vector<AbstractPtr>& before,
                     const std::vector<AbstractPtr>& now, bool dynamic, int levels,
                     const SourceLoc& loc) {
  for (size_t i = 0; i < now.size(); ++i) {
    auto* xa = as_tensor(before[i]);
    auto* xb = as_tensor(now[i]);
    if (xa && xb && (xa->shape().size() != xb->shape().size() || xa->dtype() != xb->dtype())) {
      // A tensor whose rank or dtype changes cannot be widened either (only dims can).
      if (!dynamic && levels < kMaxGrowingUnroll) return true;
      MYCEL_THROW(
          NotSupported, "[loop] tensor '", as_parameter(g.parameters()[i])->name(),
          "' changes from ", xa->repr(), " to ", xb->repr(),
          " on an iteration of a loop that stays a loop in the graph (",
          dynamic ? "its trip count is only known at run time" : "it runs too many iterations",
          "); a loop-carried tensor must keep its rank and dtype (its dims may change)",
          where(loc));
    }
    auto* ra = as_record(before[i]);
    auto* rb = as_record(now[i]);
    if (ra && rb && !ra->same_layout(*rb) && ra->names() == rb->names()) {
      // A record's compile-time field (an int) that changes cannot be widened either.
      if (!dynamic && levels < kMaxGrowingUnroll) return true;
      std::string field = "?", from, to;
      for (size_t k = 0; k < ra->names().size(); ++k)
        if (!ra->statics()[k] != !rb->statics()[k] ||
            (ra->statics()[k] && !ra->statics()[k]->equals(*rb->statics()[k]))) {
          field = ra->names()[k];
          from = ra->statics()[k] ? ra->statics()[k]->repr() : "a run-time value";
          to = rb->statics()[k] ? rb->statics()[k]->repr() : "a run-time value";
          break;
        }
      MYCEL_THROW(
          NotSupported, "[loop] field '", field, "' of ", ra->class_name(), " '",
          as_parameter(g.parameters()[i])->name(), "' is known at compile time and ", "changes (",
          from, " -> ", to, ") on an iteration of a loop that stays a loop in the graph (",
          dynamic ? "its trip count is only known at run time" : "it runs too many iterations",
          "); hold it in a tensor (Tensor(n)) or loop over a compile-time range", where(loc));
    }
    auto* ta = as_tuple(before[i]);
    auto* tb = as_tuple(now[i]);
    if (!ta || !tb || ta->items().size() == tb->items().size()) continue;
    if (!dynamic && levels < kMaxGrowingUnroll) return true;
    const char* kind = dynamic_cast<const DictAbs*>(tb) ? "dict" : tb->is_list() ? "list" : "tuple";
    MYCEL_THROW(NotSupported, "[loop] ", kind, " '", as_parameter(g.parameters()[i])->name(),
                "' changes length (", ta->items().size(), " -> ", tb->items().size(),
                " items) on each iteration of a loop that stays a loop in the graph (",
                dynamic
                    ? "its trip count is only known at run time); grow it in a loop with a "
                      "compile-time trip count (for i in range(<constant>)), or write rows into a "
                      "preallocated tensor (out[i] = v)"
                    : "it runs more than " + std::to_string(kMaxGrowingUnroll) +
                          " iterations); write rows into a preallocated tensor (out[i] = v)",
                where(loc));
  }
  return false;
}

std::string ptr_key(const void* p) {
  std::ostringstream os;
  os << p;
  return os.str();
}

// isinstance(x, cls) on a value known only at run time: its type is known at compile time, so
// a stand-in of that type (an empty tensor of the dtype, a Python scalar of its kind, a tuple of
// stand-ins) answers the test.
// Used for `isinstance` and one-argument `type` only: any other Python function would compute
// with the stand-in's data.
ValuePtr type_witness(const AbstractPtr& a) {
  if (auto* r = as_record(a))  // an object of the record's class
    return record_hooks().witness ? record_hooks().witness(*r->cls()) : nullptr;
  if (auto* t = as_tensor(a)) return tensor_value(Tensor::empty(Shape{0}, t->dtype()));
  if (ValuePtr v = constant_of(a)) return v;  // the items of (x, 0.5)
  // A function (a graph, a closure, an op): its callee stands in (a function, not a tuple).
  if (auto* f = dynamic_cast<const AbstractFunction*>(a.get())) return f->callee();
  if (auto* u = dynamic_cast<const FnUnion*>(a.get()); u && !u->fns().empty())
    return u->fns()[0]->callee();
  if (auto* s = as_scalar(a)) {  // a Python scalar known only at run time: one of its type
    if (s->type() == ValueKind::kInt) return integer(0);
    if (s->type() == ValueKind::kFloat) return floating(0.0);
    if (s->type() == ValueKind::kBool) return boolean(false);
  }
  if (auto* t = as_tuple(a)) {
    std::vector<ValuePtr> items;
    for (const auto& x : t->items()) {
      ValuePtr w = type_witness(x);
      if (!w) return nullptr;
      items.push_back(std::move(w));
    }
    return tuple(std::move(items));
  }
  return nullptr;
}

// d.get(key[, default]) on a dict built in graph-mode code (a **kwargs parameter): the item when
// the key is there, else the default (None). Python's dict.get, on keys known at compile time.
// Null for any other call_method.
NodePtr dict_get(Engine& e, Context* ctx, const Value& callee, const std::vector<NodePtr>& args,
                 const SourceLoc& loc) {
  if (callee.repr() != "py:mycel.common.graph_syntax.call_method" || args.size() < 4 ||
      !dynamic_cast<const DictAbs*>(args[0]->abstract().get()))
    return nullptr;
  ValuePtr name = constant_of(args[1]->abstract());
  ValuePtr keywords = constant_of(args[2]->abstract());
  if (!name || !name->equals(*string("get"))) return nullptr;
  if (args.size() > 5 || !keywords || keywords->kind() != ValueKind::kTuple ||
      !static_cast<const SequenceValue&>(*keywords).items().empty())
    MYCEL_THROW(TypeError, "[dict.get] takes a key and an optional default, by position",
                where(loc));
  ValuePtr key = constant_of(args[3]->abstract());
  if (!key)
    MYCEL_THROW(TypeError, "[dict.get] the key must be a compile-time constant, got ",
                args[3]->abstract()->repr(), where(loc));
  for (const ValuePtr& k : static_cast<const DictAbs&>(*args[0]->abstract()).keys())
    if (k->equals(*key)) return eval_prim_call(e, ctx, Prim::kDictGetItem, {args[0], args[3]}, loc);
  return args.size() == 5 ? args[4] : e.constant(ctx, none());
}

// isinstance's classes when they are a tuple built in the function ((tuple, list)): the items
// are Python objects analysis holds as opaque constants, so the tuple has no constant value of
// its own. nullptr if an item is not such a constant.
ValuePtr class_tuple(const AbstractPtr& a) {
  if (auto* o = dynamic_cast<const OpaqueAbs*>(a.get())) return o->value();
  if (ValuePtr v = constant_of(a)) return v;
  auto* t = as_tuple(a);
  if (!t) return nullptr;
  std::vector<ValuePtr> items;
  for (const auto& x : t->items()) {
    ValuePtr w = class_tuple(x);
    if (!w) return nullptr;
    items.push_back(std::move(w));
  }
  return tuple(std::move(items));
}

// Counts a run-time switch call while its branches are analysed (drives widening).
struct DynamicScope {
  Context* c;
  explicit DynamicScope(Context* ctx) : c(ctx) { ++c->dynamic_calls; }
  ~DynamicScope() { --c->dynamic_calls; }
};
}  // namespace

FuncGraph* Engine::run(FuncGraph* entry, const std::vector<AbstractPtr>& args) {
  const auto& params = entry->parameters();
  size_t weights = 0;
  for (const NodePtr& p : params) weights += as_parameter(p)->is_weight();
  std::vector<AbstractPtr> full;
  if (args.size() == params.size()) {
    full = args;
  } else if (args.size() == params.size() - weights) {
    size_t k = 0;
    for (const NodePtr& p : params) {
      const Parameter* q = as_parameter(p);
      full.push_back(q->is_weight()
                         ? std::make_shared<AbstractTensor>(q->bound().shape(), q->bound().dtype())
                         : args[k++]);
    }
  } else {
    MYCEL_THROW(TypeError, "[specialize] @", entry->name(), " takes ", params.size() - weights,
                " arguments (", weights, " weights bound), got ", args.size());
  }
  for (size_t i = 0; i < full.size(); ++i)
    if (!full[i])
      MYCEL_THROW(TypeError, "[specialize] argument ", i, " of @", entry->name(),
                  " has no abstract");
  FnAbs fn(graph_value(entry), nullptr, std::make_shared<Site>());
  FuncGraph* spec = nullptr;
  call_graph(nullptr, fn, full, {}, &spec);
  finalize(spec);
  return spec;
}

NodePtr Engine::constant(Context* ctx, const ValuePtr& v) {
  auto node = std::make_shared<Constant>(nullptr, v);
  if (v->kind() == ValueKind::kGraph) {
    FuncGraph* g = static_cast<const GraphValue&>(*v).graph();
    Context* env = g->parent() ? find_env(ctx, g->parent(), {}) : nullptr;
    auto site = std::make_shared<Site>();
    site->graph = g;
    site->env = env;
    sites_[node.get()] = site;
    site_nodes_.push_back(node);  // sites_ is keyed by address: keep the node alive
    node->set_abstract(std::make_shared<FnAbs>(v, env, site));
  } else {
    node->set_abstract(abstract_of_value(v));
  }
  return node;
}

bool Engine::in_runtime_branch() const {
  for (const Context* c : stack_)
    if (c->dynamic_calls > 0) return true;
  return false;
}

NodePtr Engine::emit(Context* ctx, std::vector<NodePtr> inputs, AbstractPtr abs,
                     const SourceLoc& loc) {
  NodePtr n = ctx->clone->apply(std::move(inputs), loc);
  n->set_abstract(std::move(abs));
  return n;
}

Context* Engine::find_env(Context* ctx, FuncGraph* parent, const SourceLoc& loc) {
  for (Context* c = ctx; c; c = c->env)
    if (c->graph == parent) return c;
  MYCEL_THROW(RuntimeError, "[specialize] a value of @", parent->name(),
              " is used outside the scope it was defined in", where(loc));
}

NodePtr Engine::get(Context* ctx, const NodePtr& orig) {
  if (!orig) MYCEL_THROW(RuntimeError, "[specialize] null node in @", ctx->graph->name());
  if (Constant* c = as_constant(orig)) return constant(ctx, c->value());
  if (orig->graph() != ctx->graph) return get(find_env(ctx, orig->graph(), orig->loc()), orig);
  auto it = ctx->map.find(orig.get());
  if (it != ctx->map.end()) return it->second;
  if (orig->is_parameter())
    MYCEL_THROW(RuntimeError, "[specialize] parameter %", as_parameter(orig)->name(),
                " is not a parameter of @", ctx->graph->name());
  NodePtr n = eval_apply(ctx, *static_cast<Apply*>(orig.get()));
  if (n->is_apply() && n->graph() == ctx->clone && n->debug_name().empty())
    n->set_debug_name(orig->debug_name());
  ctx->map[orig.get()] = n;
  return n;
}

NodePtr Engine::eval_apply(Context* ctx, const Apply& a) {
  if (a.inputs().empty())
    MYCEL_THROW(RuntimeError, "[specialize] apply with no callee", where(a.loc()));
  std::vector<NodePtr> args;
  args.reserve(a.num_args());
  for (size_t i = 0; i < a.num_args(); ++i) args.push_back(get(ctx, a.arg(i)));
  // A graph named in the source was bound when parsed (frontend call_value), one argument per
  // parameter; any other callee is bound here.
  return call(ctx, get(ctx, a.callee()), args, a.loc(), constant_graph(a.callee()) != nullptr);
}

NodePtr Engine::call(Context* ctx, const NodePtr& callee, const std::vector<NodePtr>& given,
                     const SourceLoc& loc, bool bound) {
  const AbstractPtr& fa = callee->abstract();
  std::vector<NodePtr> args = bound ? given : bind_positional(ctx, fa, given, loc);
  std::vector<NodePtr> inputs{callee};
  inputs.insert(inputs.end(), args.begin(), args.end());
  std::vector<AbstractPtr> arg_abs;
  for (const NodePtr& n : args) arg_abs.push_back(n->abstract());
  if (is_raises(fa)) return callee;  // a value that never exists: the call is that raise
  for (const NodePtr& n : args)
    if (is_raises(n->abstract())) return n;
  if (is_pending(fa)) return emit(ctx, inputs, pending(), loc);

  if (auto* u = dynamic_cast<const FnUnion*>(fa.get())) {
    DynamicScope scope(ctx);
    AbstractPtr out;
    for (const auto& f : u->fns()) {
      if (!f->graph())
        MYCEL_THROW(NotSupported,
                    "[switch] both branches must be functions defined in the model, got ",
                    f->callee()->repr(), where(loc));
      std::vector<AbstractPtr> full = f->bound_args();
      full.insert(full.end(), arg_abs.begin(), arg_abs.end());
      FuncGraph* spec = nullptr;
      AbstractPtr o = call_graph(ctx, *f, full, loc, &spec);
      f->site()->add(spec);
      AbstractPtr j = out ? join(out, o, u->loc()) : o;
      if (!j)
        MYCEL_THROW(TypeError,
                    "[switch] the branches of this condition give different types: ", out->repr(),
                    " and ", o->repr(),
                    " (they must agree in dtype and rank; differing dims become dynamic)",
                    where(u->loc()));
      out = j;
    }
    return emit(ctx, inputs, out, loc);
  }

  if (dynamic_cast<const GradFnAbs*>(fa.get())) return call_grad_fn(ctx, callee, args, loc);
  if (dynamic_cast<const VmapFnAbs*>(fa.get())) return call_vmap_fn(ctx, callee, args, loc);

  if (auto* f = dynamic_cast<const FnAbs*>(fa.get())) {
    if (FuncGraph* g = f->graph()) {
      std::vector<AbstractPtr> full = f->bound_args();
      full.insert(full.end(), arg_abs.begin(), arg_abs.end());
      FuncGraph* spec = nullptr;
      AbstractPtr out;
      try {
        out = call_graph(ctx, *f, full, loc, &spec);
      } catch (RaisedError& e) {  // a traceback frame for this call (the Python glue shows them)
        std::string frame = called_from(loc);
        if (!frame.empty()) {
          e.callers.push_back(frame.substr(3));
          if (g->cell_label()) e.callers.push_back("  " + *g->cell_label());  // the Cell it reached
        }
        throw;
      } catch (const mycel::Error& e) {
        const std::string frame = called_from(loc), site = where(loc), msg = e.what();
        // one frame per call; a call on the failing line itself adds nothing
        const bool same_line = msg.size() >= site.size() &&
                               msg.compare(msg.size() - site.size(), std::string::npos, site) == 0;
        if (frame.empty() || same_line) throw;
        rethrow_with(frame + (g->cell_label() ? "\n    " + *g->cell_label() : ""));
      }
      if (spec && f->bound_args().empty() && !callee->is_constant() &&
          spec->free_variables().empty()) {
        // A function with no free variables reached through a variable (a parameter, self.act
        // passed on): call its clone for this signature directly, so one value may serve several
        // signatures (the value itself is then unused, and dead-code elimination drops it).
        auto direct = std::make_shared<Constant>(nullptr, graph_value(spec));
        direct->set_abstract(std::make_shared<AbstractFunction>(graph_value(spec)));
        site_nodes_.push_back(direct);
        inputs[0] = direct;
        if (f->site()) {  // the value still names a clone (any: it is only passed along, not
                          // called)
          f->site()->add(spec);
          f->site()->root()->direct = true;
        }
        return emit(ctx, inputs, out, loc);
      }
      if (f->site()) f->site()->add(spec);
      return emit(ctx, inputs, out, loc);
    }
    std::vector<NodePtr> full = args;
    if (!f->bound_args().empty()) {
      Apply* pa = as_apply(callee);
      if (!pa || !is_prim_call(callee, Prim::kPartial))
        MYCEL_THROW(NotSupported, "[specialize] cannot call a partial application of ",
                    f->callee()->repr(), " passed through a variable", where(loc));
      full.insert(full.begin(), pa->inputs().begin() + 2, pa->inputs().end());
    }
    if (f->callee()->kind() == ValueKind::kOp) {
      const auto& opv = static_cast<const OpValue&>(*f->callee());
      if (NodePtr r = record_op(ctx, opv.op(), full, loc)) return r;
      return eval_op_call(*this, ctx, opv, full, loc);
    }
    if (f->callee()->kind() == ValueKind::kPrim) {
      const Prim p = static_cast<const PrimValue&>(*f->callee()).prim();
      if (NodePtr r = record_prim(ctx, p, full, loc)) return r;
      return eval_prim_call(*this, ctx, p, full, loc);
    }
    if (f->callee()->kind() == ValueKind::kGradOp)
      return make_grad_fn(ctx, callee, static_cast<const GradOpValue&>(*f->callee()), full, loc);
    if (f->callee()->kind() == ValueKind::kVmapOp) return make_vmap_fn(ctx, callee, full, loc);
  }

  if (auto* o = dynamic_cast<const OpaqueAbs*>(fa.get())) {
    if (NodePtr r = record_call(ctx, *o->value(), args, loc)) return r;
    // tuple(seq) / list(seq) of a tuple or list with items known only at run time: the same
    // items in a new sequence (a compile-time one is folded by the hook below as before).
    if (args.size() == 1 && as_tuple(args[0]->abstract()) && !constant_of(args[0]->abstract()) &&
        (o->value()->repr() == "py:tuple" || o->value()->repr() == "py:list")) {
      auto* t = as_tuple(args[0]->abstract());
      std::vector<NodePtr> items;
      for (size_t i = 0; i < t->items().size(); ++i)
        items.push_back(is_prim_call(args[0], Prim::kMakeTuple) ||
                                is_prim_call(args[0], Prim::kMakeList)
                            ? as_apply(args[0])->arg(i)
                            : emit(ctx,
                                   {constant(ctx, prim_value(Prim::kTupleGetItem)), args[0],
                                    constant(ctx, integer(static_cast<int64_t>(i)))},
                                   t->items()[i], loc));
      return eval_prim_call(*this, ctx,
                            o->value()->repr() == "py:list" ? Prim::kMakeList : Prim::kMakeTuple,
                            items, loc);
    }
    // A mycel.ops function passed as a value (a higher-order function's argument): call the op.
    if (opaque_op_hook())
      if (OpaqueOp oo = opaque_op_hook()(*o->value()); oo.op) {
        bool all_const = true;
        for (const auto& a : arg_abs) all_const &= constant_of(a) != nullptr;
        // A Primitive's call: its tensor inputs, then optionally attributes positionally
        // (P.ReduceSum(keep_dims)(*(x, axis))), the others its preset values (eval_op_call).
        const size_t n_in = oo.op->inputs.size();
        const bool positional = n_in > 0 && !oo.op->inputs.back().variadic && args.size() >= n_in &&
                                args.size() <= n_in + oo.op->attrs.size();
        if (!all_const && (oo.attrs.op() == nullptr || positional))
          return eval_op_call(*this, ctx, OpValue(oo.op, oo.attrs), args, loc);
      }
    if (NodePtr r = dict_get(*this, ctx, *o->value(), args, loc)) return r;
    if (record_hooks().parsed_callable) {
      bool all_const = true;
      for (const auto& a : arg_abs) all_const &= constant_of(a) != nullptr;
      if (!all_const)
        if (FuncGraph* g = record_hooks().parsed_callable(*o->value()))
          return call(ctx, method_node(ctx, g), args, loc);
    }
    std::vector<ValuePtr> consts;
    for (size_t i = 0; i < args.size(); ++i) {
      ValuePtr v = constant_of(arg_abs[i]);
      if (!v) {
        if (auto* c = as_constant(args[i])) v = c->value();  // constant tensors, graphs
      }
      if (!v && i == 0 &&
          (o->value()->repr() == "py:isinstance" ||
           (o->value()->repr() == "py:type" && args.size() == 1)))
        v = type_witness(arg_abs[i]);
      if (!v && i == 1 && o->value()->repr() == "py:isinstance") v = class_tuple(arg_abs[i]);
      // An exception's f-string message with a run-time value (a raise in a branch taken at run
      // time, `raise ValueError(f"... {c}")` with c a dynamic dim; the frontend calls
      // format_message there): the value shows as what is known of it (format_message reads the
      // marker). Other f-strings need compile-time values.
      if (!v && i >= 1 && o->value()->repr() == "py:mycel.common.graph_syntax.format_message")
        v = string(std::string(kRunTimeFieldMarker) + arg_abs[i]->repr());
      // obj.m(args) of a non-Tensor method is call_method(obj, "m", keywords, args) (the frontend's
      // tensor_method): name the method and the receiver rather than the helper.
      if (!v && o->value()->repr() == "py:mycel.common.graph_syntax.call_method" &&
          args.size() >= 2) {
        ValuePtr m = constant_of(arg_abs[1]);
        std::string name =
            m && m->kind() == ValueKind::kStr ? static_cast<const StrValue&>(*m).value() : "?";
        if (i == 0)
          MYCEL_THROW(NotSupported, "[specialize] method '", name, "' of ", arg_abs[0]->repr(),
                      " is not supported in graph mode: methods other than Tensor methods are "
                      "evaluated at compile time, on a value known then (str, int, float, tuples "
                      "of them); for a tensor call the mycel.ops function instead",
                      where(loc));
        MYCEL_THROW(NotSupported, "[specialize] cannot call method '", name,
                    "' in graph mode: argument ", i - 3, " (", arg_abs[i]->repr(),
                    ") is only known at run time; the method is "
                    "evaluated at compile time, so only compile-time values can be passed to it",
                    where(loc));
      }
      // callee(k=v) with v known only to analysis is call_keywords(callee, keywords, args...)
      // (the frontend's call of a compile-time callee): name the callee and the argument.
      if (!v && o->value()->repr() == "py:mycel.common.graph_syntax.call_keywords" && i >= 2 &&
          args.size() >= 2) {
        auto* callee_abs = dynamic_cast<const OpaqueAbs*>(arg_abs[0].get());
        ValuePtr callee = callee_abs ? callee_abs->value() : constant_of(arg_abs[0]);
        std::vector<std::string> names;
        if (ValuePtr t = constant_of(arg_abs[1]); t && t->kind() == ValueKind::kTuple)
          for (const auto& k : static_cast<const SequenceValue&>(*t).items())
            names.push_back(k->kind() == ValueKind::kStr ? static_cast<const StrValue&>(*k).value()
                                                         : k->repr());
        const size_t n_pos = args.size() - 2 - std::min(names.size(), args.size() - 2);
        const std::string what = i - 2 < n_pos ? "argument " + std::to_string(i - 2)
                                               : "keyword argument '" + names[i - 2 - n_pos] + "'";
        MYCEL_THROW(TypeError, "[specialize] ", callee ? callee->repr().substr(3) : "the callee",
                    "(...): ", what, " (", arg_abs[i]->repr(),
                    ") is only known at run time; it is evaluated at compile time (a primitive's "
                    "attributes, a Python helper), so pass a Python value",
                    where(loc));
      }
      if (!v && record_hooks().plain_class && record_hooks().plain_class(*o->value()))
        MYCEL_THROW(NotSupported, "[specialize] cannot create an instance of class ",
                    o->value()->repr().substr(3), " in graph mode: argument ", i, " (",
                    arg_abs[i]->repr(),
                    ") is only known at run time; decorate the class with @mycel.jit_class "
                    "so that compiled code can build it, or create it outside and pass it in",
                    where(loc));
      if (!v)
        MYCEL_THROW(NotSupported, "[specialize] cannot call ", o->value()->repr(),
                    " in graph mode: argument ", i, " (", arg_abs[i]->repr(),
                    ") is only known at run time; only compile-time values can be passed to it",
                    where(loc));
      consts.push_back(v);
    }
    ValuePtr r;
    try {
      r = const_eval_hook() ? const_eval_hook()(*o->value(), consts) : nullptr;
    } catch (const RaisedError& err) {  // the helper raised: locate it at this call
      if (err.loc.known()) throw;
      throw RaisedError(err.exception, loc);
    }
    if (!r)
      MYCEL_THROW(NotSupported, "[specialize] cannot call ", o->value()->repr(),
                  " in graph mode (no compile-time evaluation for it)", where(loc));
    return constant(ctx, r);
  }
  MYCEL_THROW(TypeError, "[specialize] a value of type ", fa ? fa->repr() : "?", " is not callable",
              where(loc));
}

// A graph called with positional arguments only (its callee was not known when the call was
// parsed): Python's binding, from the parameter kinds and constant defaults the parser recorded.
std::vector<NodePtr> Engine::bind_positional(Context* ctx, const AbstractPtr& fa,
                                             const std::vector<NodePtr>& args,
                                             const SourceLoc& loc) {
  auto* f = dynamic_cast<const FnAbs*>(fa.get());
  FuncGraph* g = f ? f->graph() : nullptr;
  if (!g) return args;
  const auto& defaults = g->default_values();
  const size_t n_params = g->parameters().size(), before = f->bound_args().size();
  if (defaults.size() != n_params) return args;
  const FuncGraph::VarParams& vp = g->var_params();
  if (!vp.any()) {
    size_t given = before + args.size();
    if (given >= n_params) return args;
    std::vector<NodePtr> full = args;
    for (size_t i = given; i < n_params; ++i) {
      if (!defaults[i]) return args;  // a required argument is missing: call_graph reports it
      full.push_back(constant(ctx, defaults[i]));
    }
    return full;
  }
  if (before > vp.n_positional) return args;  // a partial reaching past the positionals
  auto param_name = [&](size_t i) { return as_parameter(g->parameters()[i])->name(); };
  std::vector<NodePtr> full;
  size_t used = 0;
  for (size_t i = before; i < vp.n_positional; ++i) {
    if (used < args.size()) {
      full.push_back(args[used++]);
    } else if (defaults[i]) {
      full.push_back(constant(ctx, defaults[i]));
    } else {
      MYCEL_THROW(TypeError, "[call] @", g->name(), " missing required argument '", param_name(i),
                  "'", where(loc));
    }
  }
  std::vector<NodePtr> extra(args.begin() + static_cast<std::ptrdiff_t>(used), args.end());
  if (vp.vararg < 0 && !extra.empty())
    MYCEL_THROW(TypeError, "[call] @", g->name(), " takes ", vp.n_positional,
                " positional arguments but ", before + args.size(), " were given", where(loc));
  for (size_t i = vp.n_positional; i < n_params; ++i) {
    if (static_cast<int>(i) == vp.vararg) {
      full.push_back(call(ctx, constant(ctx, prim_value(Prim::kMakeTuple)), extra, loc));
    } else if (static_cast<int>(i) == vp.kwarg) {
      full.push_back(call(ctx, constant(ctx, prim_value(Prim::kMakeDict)),
                          {constant(ctx, tuple({})), constant(ctx, tuple({}))}, loc));
    } else if (defaults[i]) {
      full.push_back(constant(ctx, defaults[i]));
    } else {
      MYCEL_THROW(TypeError, "[call] @", g->name(), " missing required keyword-only argument '",
                  param_name(i), "'", where(loc));
    }
  }
  return full;
}

AbstractPtr Engine::call_graph(Context* ctx, const FnAbs& fn, const std::vector<AbstractPtr>& args,
                               const SourceLoc& loc, FuncGraph** spec) {
  FuncGraph* g = fn.graph();
  Context* env = fn.env();
  if (args.size() != g->parameters().size())
    MYCEL_THROW(TypeError, "[call] @", g->name(), " takes ", g->parameters().size(),
                " arguments, got ", args.size(), where(loc));
  for (const auto& a : args)
    if (has_pending(a)) {  // an argument depends on an unfinished recursion: wait for the fixpoint
      for (Context* c : stack_)
        if (c->assumed) {
          *spec = nullptr;
          return pending();
        }
    }
  std::string args_key;
  for (const auto& a : args) args_key += key_of(a) + "|";
  const std::string prefix = ptr_key(g) + "/" + ptr_key(env) + "|";

  // Widening: the same graph already on the stack, reached through a run-time branch or too often
  // with changing constants, gets arguments that drop the changing values (loops stay loops).
  std::vector<AbstractPtr> sig = args;
  Context* recent = nullptr;
  bool dynamic = false;
  int same = 0;
  for (size_t i = stack_.size(); i-- > 0;) {
    Context* c = stack_[i];
    if (!recent) dynamic |= c->dynamic_calls > 0;
    if (c->graph == g && c->env == env) {
      if (!recent) recent = c;
      ++same;
    }
  }
  // An unrolled header (for over a sequence) is widened too when its own exit test is only known
  // at run time (for row in x with a dynamic first dim): it then stays a loop.
  const bool unroll = g->unroll() && !(recent && recent->dynamic_calls > 0);
  if (recent && !unroll && recent->key != prefix + args_key &&
      (dynamic || same >= opts_.max_unroll) &&
      !keeps_unrolling(*g, recent->args, args, dynamic, same, loc)) {
    args_key.clear();
    for (size_t i = 0; i < sig.size(); ++i) {
      sig[i] = widen(recent->args[i], args[i]);
      args_key += key_of(sig[i]) + "|";
    }
  }

  const std::string key = prefix + args_key;
  Context* c;
  auto it = memo_.find(key);
  if (it != memo_.end()) {
    c = it->second;
  } else {
    all_.push_back(std::make_unique<Context>());
    c = all_.back().get();
    c->graph = g;
    c->env = env;
    c->args = sig;
    c->key = key;
    c->clone = module_.add_graph(g->name(), env ? env->clone : nullptr);
    c->clone->set_cell_label(g->cell_label());
    memo_[key] = c;
    created_.push_back(key);
  }
  *spec = c->clone;
  // Function values passed here are called through c's parameters: every call site's constants
  // must become the clones that c's calls ask for, not only those of the call that made c.
  for (size_t i = 0; i < args.size(); ++i) merge_sites(args[i], c->args[i]);
  if (c->in_progress) {  // recursion with the same signature: reuse the clone being built
    c->assumed = true;
    return c->output ? c->output : pending();
  }
  if (!c->output) analyse(c);
  if (g->bprop() && !c->clone->bprop() && c->output && !has_pending(c->output)) {
    // The Cell's own bprop, specialized for (inputs..., out, dout) next to its construct.
    FuncGraph* b = g->bprop();
    FnAbs bfn(graph_value(b), b->parent() ? find_env(c, b->parent(), loc) : nullptr, nullptr);
    std::vector<AbstractPtr> bargs;  // the inputs (a top-level Cell's weights are parameters too)
    for (size_t i = 0; i < sig.size(); ++i)
      if (!as_parameter(g->parameters()[i])->is_weight()) bargs.push_back(sig[i]);
    const size_t n_inputs = bargs.size();
    bargs.push_back(c->output);
    bargs.push_back(c->output);
    FuncGraph* bspec = nullptr;
    AbstractPtr bout = call_graph(ctx, bfn, bargs, loc, &bspec);
    auto* t = as_tuple(bout);
    if (!t || t->items().size() != n_inputs)
      MYCEL_THROW(TypeError, "[bprop] @", b->name(),
                  " must return a tuple with one sensitivity per input (", n_inputs, "), got ",
                  bout->repr(), where(loc));
    c->clone->set_bprop(bspec);
  }
  return c->output;
}

void Engine::analyse(Context* ctx) {
  // Specializations that never repeat a signature would nest until the C++ stack overflows:
  // stop with an error long before (legitimate programs nest a few dozen levels).
  if (stack_.size() >= kMaxNesting)
    MYCEL_THROW(NotSupported, "[specialize] calls nest more than ", kMaxNesting, " levels deep ",
                "while compiling @", ctx->graph->name(),
                " (a recursion or loop whose argument types "
                "change on every call never reaches a fixed point)");
  if (const size_t room = stack_headroom(); room < kStackReserve)
    MYCEL_THROW(
        NotSupported, "[specialize] calls nest ", stack_.size(), " levels deep while compiling @",
        ctx->graph->name(), " and the thread's stack has ", room >> 10, " KB left (",
        kStackReserve >> 10,
        " KB are kept for the error): compile on a thread with a larger stack "
        "(threading.stack_size), or unroll less (a loop over a run-time range stays a loop)");
  ctx->in_progress = true;
  stack_.push_back(ctx);
  const size_t mark = created_.size();
  if (stats_) ++stats_->contexts;
  for (int iter = 0;; ++iter) {
    ctx->map.clear();
    ctx->assumed = false;
    std::vector<NodePtr> params;
    for (size_t i = 0; i < ctx->graph->parameters().size(); ++i) {
      const Parameter* o = as_parameter(ctx->graph->parameters()[i]);
      auto p = std::make_shared<Parameter>(ctx->clone, o->name());
      if (o->is_weight()) p->bind(o->bound());
      p->set_abstract(ctx->args[i]);
      p->set_loc(o->loc());
      p->set_debug_name(o->debug_name());
      ctx->map[o] = p;
      params.push_back(p);
    }
    ctx->clone->set_parameters(params);
    for (const NodePtr& n : ctx->graph->toposort()) get(ctx, n);
    NodePtr out = get(ctx, ctx->graph->output());
    ctx->clone->set_output(out);
    AbstractPtr result = out->abstract();
    if (!ctx->assumed) {
      // Pending parts are fine while an enclosing recursion is unresolved: that context analyses
      // again (dropping this one) once its output is known.
      bool outer_pending = false;
      for (Context* c : stack_) outer_pending |= c != ctx && c->assumed;
      if (has_pending(result) && !is_raises(result) && !outer_pending)
        MYCEL_THROW(TypeError, "[specialize] cannot infer the result of @", ctx->graph->name(),
                    ": it depends on a recursive call that has no base case", where(out->loc()));
      ctx->output = result;
      break;
    }
    // A recursive call used ctx->output: done when it matches, else join and analyse again.
    if (ctx->output && ctx->output->equals(*result) && !has_pending(result)) break;
    AbstractPtr next = ctx->output ? join(ctx->output, result, out->loc()) : result;
    if (!next)
      MYCEL_THROW(TypeError, "[specialize] recursive @", ctx->graph->name(),
                  " returns different types on different paths: ", ctx->output->repr(), " and ",
                  result->repr(), where(out->loc()));
    if (iter + 1 >= opts_.max_fixpoint)
      MYCEL_THROW(TypeError, "[specialize] the result type of recursive @", ctx->graph->name(),
                  " does not settle (last: ", next->repr(), ")", where(out->loc()));
    if (is_pending(next) && iter > 0)
      MYCEL_THROW(TypeError, "[specialize] cannot infer the result of @", ctx->graph->name(),
                  ": every path calls it recursively", where(out->loc()));
    ctx->output = is_pending(next) ? nullptr : next;
    if (stats_) ++stats_->reanalyses;
    while (created_.size() > mark) {  // contexts analysed with the old assumption are stale
      auto it = memo_.find(created_.back());
      if (it != memo_.end()) {
        discarded_.push_back(it->second->clone);
        memo_.erase(it);
      }
      created_.pop_back();
    }
  }
  stack_.pop_back();
  ctx->in_progress = false;
}

}  // namespace mycel::analysis::detail
