// Graph primitives under abstract interpretation: tuples and dicts, switch (a constant condition
// picks its branch; a run-time one keeps both, joined), partial, Python scalar arithmetic (folded
// on constants with Python's semantics), shape/rank/dtype (folded when static).
#include <cmath>
#include <unordered_set>

#include "mycel/analysis/engine.h"
#include "mycel/core/error.h"
#include "mycel/ir/int_arith.h"
#include "mycel/ir/raised.h"

namespace mycel::analysis::detail {

using namespace ir;

namespace {

bool is_num(const ValuePtr& v) {
  return v && (v->kind() == ValueKind::kBool || v->kind() == ValueKind::kInt ||
               v->kind() == ValueKind::kFloat);
}
double as_double(const ValuePtr& v) {
  if (v->kind() == ValueKind::kFloat) return static_cast<const FloatValue&>(*v).value();
  if (v->kind() == ValueKind::kBool) return static_cast<const BoolValue&>(*v).value();
  return static_cast<double>(static_cast<const IntValue&>(*v).value());
}
int64_t as_int(const ValuePtr& v) {
  if (v->kind() == ValueKind::kBool) return static_cast<const BoolValue&>(*v).value();
  return static_cast<const IntValue&>(*v).value();
}

/// Whether evaluating node n writes a Parameter, prints, raises or talks to other processes,
/// through the calls it makes (graphs in callee position, functions called through values) and
/// the calls its arguments make. A graph merely passed as a value (partial(f, x) packing f) is not
/// called here: its effects happen, and are tied, where it is called.
bool call_has_effects(const NodePtr& n) {
  std::unordered_set<const Node*> seen;
  std::unordered_set<const FuncGraph*> graphs;
  std::vector<NodePtr> work{n};
  auto follow = [&](FuncGraph* g) {
    if (g && g->output() && graphs.insert(g).second) work.push_back(g->output());
  };
  // The graphs a callee value may be (nullopt: a function we cannot see into).
  auto callee_graphs = [&](const NodePtr& callee) -> bool {
    if (FuncGraph* g = constant_graph(callee)) return follow(g), true;
    if (callee->is_constant()) return true;  // an op or a graph primitive
    const AbstractPtr& abs = callee->abstract();
    // A function not known here (a parameter of a graph not yet specialized): it may.
    if (!abs || abs->kind() != AbstractKind::kFunction) return false;
    std::vector<const AbstractFunction*> fns;
    if (auto* u = dynamic_cast<const FnUnion*>(abs.get()))
      for (const auto& f : u->fns()) fns.push_back(f.get());
    else if (auto* f = dynamic_cast<const AbstractFunction*>(abs.get()))
      fns.push_back(f);
    for (const AbstractFunction* f : fns) {
      const ValuePtr& v = f->callee();
      if (v->kind() == ValueKind::kGraph)
        follow(static_cast<const GraphValue&>(*v).graph());
      else if (v->kind() != ValueKind::kOp && v->kind() != ValueKind::kPrim)
        return false;
    }
    return !fns.empty();
  };
  while (!work.empty()) {
    NodePtr x = work.back();
    work.pop_back();
    auto* a = as_apply(x);
    if (!a || !seen.insert(x.get()).second) continue;
    if (is_prim_call(x, Prim::kAssign) || is_prim_call(x, Prim::kPrint) ||
        is_prim_call(x, Prim::kRaise))
      return true;
    if (const Constant* c = as_constant(a->callee()); c && c->value()->kind() == ValueKind::kOp) {
      const OpDef& op = static_cast<const OpValue&>(*c->value()).op();
      if (op.effect || !op.mutated_inputs.empty()) return true;
    }
    if (!callee_graphs(a->callee())) return true;  // an opaque callee: assume it may
    if (is_prim_call(x, Prim::kUnpackCall) && a->num_args() > 0 && !callee_graphs(a->arg(0)))
      return true;  // f(*args): f is called
    if (!a->callee()->is_constant()) work.push_back(a->callee());
    for (const NodePtr& in : a->inputs())
      if (in != a->callee() && in->is_apply()) work.push_back(in);
  }
  return false;
}

/// Whether a value is, or holds, a function (no run-time value of its own).
bool holds_function(const AbstractPtr& a) {
  if (!a) return false;
  if (a->kind() == AbstractKind::kFunction) return true;
  if (auto* t = as_tuple(a))
    for (const auto& i : t->items())
      if (holds_function(i)) return true;
  return false;
}

/// Python truthiness of a constant; nullopt when not a compile-time fact.
std::optional<bool> truth(const AbstractPtr& a) {
  if (!a || is_pending(a)) return std::nullopt;
  if (a->kind() == AbstractKind::kNone) return false;
  if (auto* t = as_tuple(a)) return !t->items().empty();
  if (a->kind() == AbstractKind::kFunction) return true;
  ValuePtr v = constant_of(a);
  if (!v) return std::nullopt;
  if (is_num(v)) return as_double(v) != 0;
  if (v->kind() == ValueKind::kStr) return !static_cast<const StrValue&>(*v).value().empty();
  return true;
}

[[noreturn]] void zero_division(Prim p, const SourceLoc& loc) {
  MYCEL_THROW(ValueError, "[", prim_name(p), "] division by zero", where(loc));
}

/// Folds Python scalar arithmetic and comparisons on constants.
ValuePtr fold_scalar(Prim p, const std::vector<ValuePtr>& v, const SourceLoc& loc) {
  if (p == Prim::kScalarNot) return boolean(!*truth(abstract_of_value(v[0])));
  if (p == Prim::kScalarNeg) {
    if (v[0]->kind() == ValueKind::kFloat) return floating(-as_double(v[0]));
    return integer(-as_int(v[0]));
  }
  if (p == Prim::kScalarEq || p == Prim::kScalarNe) {
    bool eq =
        is_num(v[0]) && is_num(v[1]) ? as_double(v[0]) == as_double(v[1]) : v[0]->equals(*v[1]);
    return boolean(p == Prim::kScalarEq ? eq : !eq);
  }
  if (p == Prim::kScalarAdd && v[0]->kind() == ValueKind::kStr && v[1]->kind() == ValueKind::kStr)
    return string(static_cast<const StrValue&>(*v[0]).value() +
                  static_cast<const StrValue&>(*v[1]).value());
  if (!is_num(v[0]) || !is_num(v[1])) return nullptr;
  const bool fl = v[0]->kind() == ValueKind::kFloat || v[1]->kind() == ValueKind::kFloat;
  const double x = as_double(v[0]), y = as_double(v[1]);
  switch (p) {
    case Prim::kScalarLt:
      return boolean(x < y);
    case Prim::kScalarLe:
      return boolean(x <= y);
    case Prim::kScalarGt:
      return boolean(x > y);
    case Prim::kScalarGe:
      return boolean(x >= y);
    case Prim::kScalarDiv:
      if (y == 0) zero_division(p, loc);
      return floating(x / y);
    default:
      break;
  }
  if (fl) {
    switch (p) {
      case Prim::kScalarAdd:
        return floating(x + y);
      case Prim::kScalarSub:
        return floating(x - y);
      case Prim::kScalarMul:
        return floating(x * y);
      case Prim::kScalarPow:
        return floating(std::pow(x, y));
      case Prim::kScalarFloorDiv:
        if (y == 0) zero_division(p, loc);
        return floating(std::floor(x / y));
      case Prim::kScalarMod: {
        if (y == 0) zero_division(p, loc);
        double r = std::fmod(x, y);
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return floating(r);
      }
      default:
        return nullptr;
    }
  }
  const int64_t a = as_int(v[0]), b = as_int(v[1]);
  switch (p) {
    case Prim::kScalarPow:
      if (b < 0) return floating(std::pow(x, y));
      [[fallthrough]];
    case Prim::kScalarAdd:
    case Prim::kScalarSub:
    case Prim::kScalarMul:
    case Prim::kScalarFloorDiv:
    case Prim::kScalarMod:
      if ((p == Prim::kScalarFloorDiv || p == Prim::kScalarMod) && b == 0) zero_division(p, loc);
      try {
        return integer(int_arith(p, a, b));
      } catch (const ValueError& e) {
        MYCEL_THROW(ValueError, e.what(), where(loc));
      }
    default:
      return nullptr;
  }
}

ValueKind scalar_result_type(Prim p, const std::vector<AbstractPtr>& a, const SourceLoc& loc) {
  switch (p) {
    case Prim::kScalarEq:
    case Prim::kScalarNe:
    case Prim::kScalarLt:
    case Prim::kScalarLe:
    case Prim::kScalarGt:
    case Prim::kScalarGe:
    case Prim::kScalarNot:
      return ValueKind::kBool;
    case Prim::kScalarDiv:
      return ValueKind::kFloat;
    default:
      break;
  }
  bool fl = false;
  for (const auto& x : a) {
    auto* s = as_scalar(x);
    if (!s || (s->type() != ValueKind::kInt && s->type() != ValueKind::kFloat &&
               s->type() != ValueKind::kBool))
      MYCEL_THROW(TypeError, "[", prim_name(p), "] expects Python numbers, got ", x->repr(),
                  where(loc));
    fl |= s->type() == ValueKind::kFloat;
  }
  return fl ? ValueKind::kFloat : ValueKind::kInt;
}

int64_t const_index(const AbstractPtr& a, size_t size, Prim p, const SourceLoc& loc) {
  ValuePtr v = constant_of(a);
  if (!v || (v->kind() != ValueKind::kInt && v->kind() != ValueKind::kBool))
    MYCEL_THROW(TypeError, "[", prim_name(p), "] index must be a constant int, got ", a->repr(),
                where(loc));
  int64_t i = as_int(v), n = static_cast<int64_t>(size);
  if (i < -n || i >= n)
    MYCEL_THROW(IndexError, "[", prim_name(p), "] index ", i, " is out of range for a tuple of ", n,
                " items", where(loc));
  return i < 0 ? i + n : i;
}

/// `for row in x` over a tensor: its length is x.shape[0] (a run-time int for a dynamic dim)
/// and item i is gather(x, i, axis=0), as eager iteration gives x[i].
NodePtr iterate_tensor(Engine& e, Context* ctx, Prim p, const std::vector<NodePtr>& args,
                       const SourceLoc& loc) {
  auto* t = as_tensor(args[0]->abstract());
  if (t->shape().empty()) MYCEL_THROW(TypeError, "iteration over a 0-d tensor", where(loc));
  if (p == Prim::kTupleLen) {
    NodePtr shape = eval_prim_call(e, ctx, Prim::kShape, {args[0]}, loc);
    return eval_prim_call(e, ctx, Prim::kTupleGetItem, {shape, e.constant(ctx, integer(0))}, loc);
  }
  NodePtr index = eval_prim_call(e, ctx, Prim::kScalarToTensor,
                                 {args[1], e.constant(ctx, dtype_value(DType::int64))}, loc);
  const OpDef& gather = Registry::get().at("gather");
  ValuePtr op =
      op_value(&gather, make_attrs(gather, std::map<std::string, AttrValue>{{"axis", int64_t{0}}}));
  return eval_op_call(e, ctx, static_cast<const OpValue&>(*op), {args[0], index}, loc);
}

/// Whether a tuple holds a str constant (dict_items pairs): such a tuple exists only at compile
/// time, the backend has no register for the str, so its other items are read directly.
bool has_str_item(const AbstractTuple& t) {
  for (const auto& x : t.items()) {
    ValuePtr v = constant_of(x);
    if (v && v->kind() == ValueKind::kStr) return true;
  }
  return false;
}

/// The items of a tuple-valued node as nodes: a make_tuple's arguments, constants for constant
/// items, tuple_getitem otherwise.
std::vector<NodePtr> tuple_items(Engine& e, Context* ctx, const NodePtr& t, const SourceLoc& loc) {
  auto* ta = as_tuple(t->abstract());
  std::vector<NodePtr> out;
  for (size_t i = 0; i < ta->items().size(); ++i) {
    if (ValuePtr v = constant_of(ta->items()[i]))
      out.push_back(e.constant(ctx, v));
    else if (is_prim_call(t, Prim::kMakeTuple))
      out.push_back(as_apply(t)->arg(i));
    else
      out.push_back(e.emit(ctx,
                           {e.constant(ctx, prim_value(Prim::kTupleGetItem)), t,
                            e.constant(ctx, integer(static_cast<int64_t>(i)))},
                           ta->items()[i], loc));
  }
  return out;
}

/// make_tuple(items) typed as a dict with these keys.
NodePtr dict_node(Engine& e, Context* ctx, std::vector<ValuePtr> keys,
                  const std::vector<NodePtr>& items, const SourceLoc& loc) {
  std::vector<NodePtr> in{e.constant(ctx, prim_value(Prim::kMakeTuple))};
  std::vector<AbstractPtr> abs;
  for (const NodePtr& n : items) {
    in.push_back(n);
    abs.push_back(n->abstract());
  }
  return e.emit(ctx, std::move(in), std::make_shared<DictAbs>(std::move(keys), std::move(abs)),
                loc);
}

/// make_tuple(items) as a plain tuple, folded to a constant when every item is one.
NodePtr tuple_node(Engine& e, Context* ctx, const std::vector<NodePtr>& items,
                   const SourceLoc& loc) {
  std::vector<NodePtr> in{e.constant(ctx, prim_value(Prim::kMakeTuple))};
  std::vector<AbstractPtr> abs;
  for (const NodePtr& n : items) {
    in.push_back(n);
    abs.push_back(n->abstract());
  }
  auto t = std::make_shared<AbstractTuple>(std::move(abs));
  if (ValuePtr v = constant_of(t)) return e.constant(ctx, v);
  return e.emit(ctx, std::move(in), t, loc);
}

NodePtr eval_dict_prim(Engine& e, Context* ctx, Prim p, const std::vector<NodePtr>& args,
                       const SourceLoc& loc) {
  auto* d = dynamic_cast<const DictAbs*>(args[0]->abstract().get());
  if (!d)
    MYCEL_THROW(TypeError, "[", prim_name(p),
                "] expects a dict with keys known at compile time, got ",
                args[0]->abstract()->repr(), where(loc));
  std::vector<NodePtr> items = tuple_items(e, ctx, args[0], loc);
  std::vector<ValuePtr> keys = d->keys();
  if (p == Prim::kDictKeys) return e.constant(ctx, tuple(keys));
  if (p == Prim::kDictValues) return tuple_node(e, ctx, items, loc);
  if (p == Prim::kDictItems) {
    std::vector<NodePtr> pairs;
    for (size_t i = 0; i < keys.size(); ++i)
      pairs.push_back(tuple_node(e, ctx, {e.constant(ctx, keys[i]), items[i]}, loc));
    return tuple_node(e, ctx, pairs, loc);
  }
  ValuePtr key = constant_of(args[1]->abstract());
  if (!key)
    MYCEL_THROW(TypeError, "[", prim_name(p), "] the key must be a compile-time constant, got ",
                args[1]->abstract()->repr(), where(loc));
  size_t i = 0;
  while (i < keys.size() && !keys[i]->equals(*key)) ++i;
  if (p == Prim::kDictGetItem) {
    if (i == keys.size())
      MYCEL_THROW(IndexError, "[dict_getitem] key ", key->repr(), " not found in ", d->repr(),
                  where(loc));
    return items[i];
  }
  if (i == keys.size()) {  // dict_setitem: a new key goes last, as in a Python dict
    keys.push_back(key);
    items.push_back(args[2]);
  } else {
    items[i] = args[2];
  }
  return dict_node(e, ctx, std::move(keys), items, loc);
}

}  // namespace

NodePtr eval_prim_call(Engine& e, Context* ctx, Prim p, const std::vector<NodePtr>& args,
                       const SourceLoc& loc) {
  const int arity = prim_arity(p);
  if (arity >= 0 && static_cast<int>(args.size()) != arity)
    MYCEL_THROW(TypeError, "[", prim_name(p), "] takes ", arity, " arguments, got ", args.size(),
                where(loc));
  std::vector<AbstractPtr> a;
  for (const NodePtr& n : args) a.push_back(n->abstract());
  auto keep = [&](AbstractPtr abs) {
    std::vector<NodePtr> in{e.constant(ctx, prim_value(p))};
    in.insert(in.end(), args.begin(), args.end());
    return e.emit(ctx, in, std::move(abs), loc);
  };
  auto fold_or_keep = [&](AbstractPtr abs) {
    ValuePtr v = constant_of(abs);
    return v ? e.constant(ctx, v) : keep(std::move(abs));
  };
  // A value that never exists (its expression raises first): what uses it is that raise, but
  // depend only orders its effect and keeps its value.
  if (p != Prim::kDepend)
    for (size_t i = 0; i < a.size(); ++i)
      if (is_raises(a[i])) return args[i];
  const bool structural = p == Prim::kMakeTuple || p == Prim::kMakeList || p == Prim::kSwitch ||
                          p == Prim::kDepend || p == Prim::kPrint || p == Prim::kPartial ||
                          p == Prim::kAssign || p == Prim::kUnpackCall;
  if (!structural)
    for (const auto& x : a)
      if (has_pending(x)) return keep(pending());

  if ((p == Prim::kTupleLen || p == Prim::kTupleGetItem) && as_tensor(a[0]))
    return iterate_tensor(e, ctx, p, args, loc);

  switch (p) {
    case Prim::kMakeTuple:
    case Prim::kMakeList: {
      auto t = std::make_shared<AbstractTuple>(a, p == Prim::kMakeList);
      // A call whose value is None (print, a helper that prints) is there for its effect: a
      // folded (None, None) would drop the calls the frontend ties to the output this way.
      for (size_t i = 0; i < args.size(); ++i)
        if (args[i]->is_apply() && a[i]->kind() == AbstractKind::kNone) return keep(t);
      if (constant_of(t))
        for (const NodePtr& arg : args)
          if (arg->is_apply() && call_has_effects(arg)) return keep(t);
      return fold_or_keep(t);
    }
    case Prim::kTupleGetItem: {
      auto* t = as_tuple(a[0]);
      if (!t)
        MYCEL_THROW(TypeError, "[tuple_getitem] expects a tuple, got ", a[0]->repr(), where(loc));
      int64_t i = const_index(a[1], t->items().size(), p, loc);
      if (!constant_of(t->items()[i]) && is_prim_call(args[0], Prim::kMakeTuple) &&
          has_str_item(*t))
        return as_apply(args[0])->arg(i);  // a (key, value) pair cannot be built at run time
      if (ValuePtr v = constant_of(t->items()[i])) return e.constant(ctx, v);
      // The index as a constant node, even when it came through a parameter (an unrolled loop's
      // counter): the backend and eliminate_tuples read it from the node.
      return e.emit(ctx, {e.constant(ctx, prim_value(p)), args[0], e.constant(ctx, integer(i))},
                    t->items()[i], loc);
    }
    case Prim::kTupleLen: {
      auto* t = as_tuple(a[0]);
      if (!t) MYCEL_THROW(TypeError, "[tuple_len] expects a tuple, got ", a[0]->repr(), where(loc));
      return e.constant(ctx, integer(static_cast<int64_t>(t->items().size())));
    }
    case Prim::kMakeDict: {
      // A dict is a tuple of its values whose abstract (DictAbs) carries the constant keys, so
      // it flows through calls, switches and returns like a tuple; keyed prims become indexing.
      ValuePtr keys = constant_of(a[0]);
      auto* vals = as_tuple(a[1]);
      if (!keys || keys->kind() != ValueKind::kTuple || !vals)
        MYCEL_THROW(TypeError, "[make_dict] keys must be constants", where(loc));
      return dict_node(e, ctx, static_cast<const SequenceValue&>(*keys).items(),
                       tuple_items(e, ctx, args[1], loc), loc);
    }
    case Prim::kDictGetItem:
    case Prim::kDictSetItem:
    case Prim::kDictKeys:
    case Prim::kDictValues:
    case Prim::kDictItems:
      return eval_dict_prim(e, ctx, p, args, loc);
    case Prim::kSwitch: {
      if (auto c = truth(a[0]))
        return *c ? args[1] : args[2];  // a constant condition picks its branch
      if (auto c = constant_condition(args[0]))
        return *c ? args[1] : args[2];  // ... a constant tensor too
      if (is_pending(a[0])) return keep(pending());
      AbstractPtr j = join(a[1], a[2], loc);
      if (!j)
        MYCEL_THROW(TypeError, "[switch] the two branches give different types: ", a[1]->repr(),
                    " and ", a[2]->repr(), where(loc));
      return keep(j);
    }
    case Prim::kPartial: {
      auto* f = dynamic_cast<const FnAbs*>(a.at(0).get());
      if (!f)
        MYCEL_THROW(TypeError, "[partial] expects a function, got ", a[0]->repr(), where(loc));
      std::vector<AbstractPtr> bound = f->bound_args();
      bound.insert(bound.end(), a.begin() + 1, a.end());
      return keep(std::make_shared<FnAbs>(f->callee(), f->env(), f->site(), std::move(bound)));
    }
    case Prim::kDepend: {
      // The frontend chains every call that may have effects into the output; a function value
      // it chained (partial(f, x) packs f, which runs and is ordered where it is called) has no
      // effect to order and no run-time value, so it leaves the chain.
      auto inert = [](const NodePtr& n) {
        return holds_function(n->abstract()) && !call_has_effects(n);
      };
      if (args.size() == 2 && inert(args[1])) return args[0];
      if (args.size() == 2 && is_prim_call(args[1], Prim::kMakeTuple)) {
        const auto* chain = as_apply(args[1]);
        std::vector<NodePtr> kept{chain->callee()};
        std::vector<AbstractPtr> kept_abs;
        for (size_t i = 0; i < chain->num_args(); ++i)
          if (!inert(chain->arg(i)))
            kept.push_back(chain->arg(i)), kept_abs.push_back(chain->arg(i)->abstract());
        if (kept.size() - 1 != chain->num_args()) {
          if (kept_abs.empty()) return args[0];
          NodePtr t = e.emit(ctx, std::move(kept),
                             std::make_shared<AbstractTuple>(std::move(kept_abs)), loc);
          return e.emit(ctx, {e.constant(ctx, prim_value(p)), args[0], t}, a[0], loc);
        }
      }
      return keep(a[0]);
    }
    case Prim::kScalarNot:
      if (as_tensor(a[0])) {  // `not t` for a one-element tensor: its truth value
        const Shape& sh = as_tensor(a[0])->shape();
        bool dynamic = false;
        for (int64_t d : sh) dynamic |= d == kDynamic;
        if (!dynamic && numel(sh) != 1)
          MYCEL_THROW(ValueError, "[not] the truth value of a tensor of shape ", shape_str(sh),
                      " is ambiguous; use ops.all or ops.any", where(loc));
        NodePtr b = eval_prim_call(e, ctx, Prim::kTensorToScalar, {args[0]}, loc);
        return eval_prim_call(e, ctx, Prim::kScalarNot, {b}, loc);
      }
      break;
    case Prim::kUnpackCall: {
      std::vector<NodePtr> flat;
      for (size_t k = 1; k < args.size(); ++k) {
        if (auto* x = as_tensor(a[k]); x && !x->shape().empty() && x->shape()[0] != kDynamic) {
          for (int64_t i = 0; i < x->shape()[0]; ++i)  // f(*x) of a tensor: its rows, as in Python
            flat.push_back(iterate_tensor(e, ctx, Prim::kTupleGetItem,
                                          {args[k], e.constant(ctx, integer(i))}, loc));
          continue;
        }
        auto* t = as_tuple(a[k]);
        if (!t)
          MYCEL_THROW(TypeError, "[call] f(*args) needs a tuple, a list or a tensor with a static ",
                      "first dim, got ", a[k]->repr(), where(loc));
        for (size_t i = 0; i < t->items().size(); ++i) {
          if (is_prim_call(args[k], Prim::kMakeTuple) || is_prim_call(args[k], Prim::kMakeList))
            flat.push_back(as_apply(args[k])->arg(i));
          else
            flat.push_back(e.emit(ctx,
                                  {e.constant(ctx, prim_value(Prim::kTupleGetItem)), args[k],
                                   e.constant(ctx, integer(static_cast<int64_t>(i)))},
                                  t->items()[i], loc));
        }
      }
      return e.call(ctx, args[0], flat, loc);
    }
    case Prim::kPrint:
      return keep(std::make_shared<AbstractNone>());
    case Prim::kRaise: {
      // raise(exception, effects...): raised now when this code is reached at compile time,
      // else kept for the Program to raise when it runs this branch.
      Constant* c = as_constant(args[0]);
      if (!c || c->value()->kind() != ValueKind::kExternal)
        MYCEL_THROW(TypeError,
                    "[raise] exceptions must derive from BaseException and be made from "
                    "compile-time values, got ",
                    a[0]->repr(), where(loc));
      if (!e.in_runtime_branch()) throw RaisedError(c->value(), loc);
      return keep(raises());
    }
    case Prim::kAssign: {
      NodePtr target = args[0];  // an item of a tuple of Parameters (a loop over self.parameters)
      while (is_prim_call(target, Prim::kTupleGetItem)) {
        auto* g = as_apply(target);
        ValuePtr i = constant_of(g->arg(1)->abstract());
        if (!i || i->kind() != ValueKind::kInt ||
            !(is_prim_call(g->arg(0), Prim::kMakeTuple) ||
              is_prim_call(g->arg(0), Prim::kMakeList)))
          break;
        auto* t = as_apply(g->arg(0));
        int64_t k = static_cast<const IntValue&>(*i).value();
        if (k < 0) k += static_cast<int64_t>(t->num_args());
        if (k < 0 || k >= static_cast<int64_t>(t->num_args())) break;
        target = t->arg(k);
      }
      // A Parameter of the network, or a function parameter or tuple item that becomes one when
      // the call is inlined (the backend checks that); never a computed value.
      const Parameter* w = as_parameter(target);
      if (!w && !is_prim_call(target, Prim::kTupleGetItem))
        MYCEL_THROW(TypeError,
                    "[assign] argument 'variable' must be a Parameter (of the network, or a ",
                    "tensor passed to the compiled function), got a computed value of type ",
                    a[0]->repr(), where(loc));
      auto* v = as_tensor(a[1]);
      const auto* t = as_tensor(a[0]);
      if (!v || v->dtype() != t->dtype() || v->shape() != t->shape())
        MYCEL_THROW(TypeError, "[assign] argument 'value' must match Parameter '",
                    w ? w->name() : "?", "' (", t->repr(), "), got ", a[1]->repr(), where(loc));
      return e.emit(ctx, {e.constant(ctx, prim_value(p)), target, args[1]}, a[1], loc);
    }
    case Prim::kScalarToTensor: {
      ValuePtr dt = constant_of(a[1]);
      if (!dt || dt->kind() != ValueKind::kDType)
        MYCEL_THROW(TypeError, "[scalar_to_tensor] dtype must be a constant dtype", where(loc));
      scalar_result_type(Prim::kScalarAdd, {a[0]}, loc);  // checks it is a number
      return keep(
          std::make_shared<AbstractTensor>(Shape{}, static_cast<const DTypeValue&>(*dt).value()));
    }
    case Prim::kTensorToScalar: {
      auto* t = as_tensor(a[0]);
      if (!t)
        MYCEL_THROW(TypeError, "[tensor_to_scalar] expects a tensor, got ", a[0]->repr(),
                    where(loc));
      ValueKind k = is_bool(t->dtype())       ? ValueKind::kBool
                    : is_floating(t->dtype()) ? ValueKind::kFloat
                                              : ValueKind::kInt;
      return keep(scalar_abs(k));
    }
    case Prim::kIs:
    case Prim::kIsNot: {
      ValuePtr x = constant_of(a[0]), y = constant_of(a[1]);
      std::optional<bool> same;
      if (x && y)
        same = x->equals(*y);
      else if ((x && x->kind() == ValueKind::kNone) || (y && y->kind() == ValueKind::kNone))
        same = false;
      if (!same)
        MYCEL_THROW(NotSupported, "[is] can only compare compile-time values or None", where(loc));
      return e.constant(ctx, boolean(p == Prim::kIs ? *same : !*same));
    }
    case Prim::kShape:
    case Prim::kRank:
    case Prim::kDTypeOf: {
      // The parser makes len(x) shape(x)[0] when it cannot tell that x is a sequence (a
      // parameter: `def f(ts): return len(ts)` called with a tuple); a tuple's is (its length,).
      if (auto* seq = as_tuple(a[0]); seq && p == Prim::kShape)
        return e.constant(ctx, ir::tuple({integer(static_cast<int64_t>(seq->items().size()))}));
      auto* t = as_tensor(a[0]);
      if (!t)
        MYCEL_THROW(TypeError, "[", prim_name(p), "] expects a tensor, got ", a[0]->repr(),
                    where(loc));
      if (p == Prim::kRank)
        return e.constant(ctx, integer(static_cast<int64_t>(t->shape().size())));
      if (p == Prim::kDTypeOf) return e.constant(ctx, dtype_value(t->dtype()));
      std::vector<AbstractPtr> dims;
      for (int64_t d : t->shape())
        dims.push_back(d == kDynamic ? scalar_abs(ValueKind::kInt)
                                     : scalar_abs(ValueKind::kInt, integer(d)));
      return fold_or_keep(std::make_shared<AbstractTuple>(std::move(dims)));
    }
    default:
      break;
  }
  // Python scalar arithmetic and comparisons.
  std::vector<ValuePtr> consts;
  for (const auto& x : a) consts.push_back(constant_of(x));
  bool all_const = true;
  for (const auto& v : consts) all_const &= v != nullptr;
  if (all_const)
    if (ValuePtr r = fold_scalar(p, consts, loc)) return e.constant(ctx, r);
  return keep(scalar_abs(scalar_result_type(p, a, loc)));
}

}  // namespace mycel::analysis::detail
