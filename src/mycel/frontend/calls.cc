// Calls: registry ops in the canonical unresolved form (every input position, then every
// attribute position in schema order), Tensor methods, graphs (arguments bound by the callee's
// signature at parse time), builtins, and Python callables left for compile-time evaluation.
#include <nanobind/stl/string.h>

#include "mycel/core/suggest.h"
#include "mycel/frontend/parser.h"
#include "mycel/frontend/py_convert.h"
#include "mycel/ops/keywords.h"

namespace mycel::frontend {

namespace {
ir::ValuePtr attr_value(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> ir::ValuePtr {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::monostate>)
          return ir::none();
        else if constexpr (std::is_same_v<X, bool>)
          return ir::boolean(x);
        else if constexpr (std::is_same_v<X, int64_t>)
          return ir::integer(x);
        else if constexpr (std::is_same_v<X, double>)
          return ir::floating(x);
        else if constexpr (std::is_same_v<X, std::string>)
          return ir::string(x);
        else if constexpr (std::is_same_v<X, DType>)
          return ir::dtype_value(x);
        else {
          std::vector<ir::ValuePtr> items;
          for (auto e : x) {
            if constexpr (std::is_same_v<X, std::vector<int64_t>>)
              items.push_back(ir::integer(e));
            else
              items.push_back(ir::floating(e));
          }
          return ir::tuple(std::move(items));
        }
      },
      v);
}
}  // namespace

nb::object to_python(const NodePtr& n) {
  ir::Constant* c = ir::as_constant(n);
  if (!c) return {};
  const ir::Value& v = *c->value();
  switch (v.kind()) {
    case ir::ValueKind::kNone:
      return nb::none();
    case ir::ValueKind::kBool:
      return nb::bool_(static_cast<const ir::BoolValue&>(v).value());
    case ir::ValueKind::kInt:
      return nb::int_(static_cast<const ir::IntValue&>(v).value());
    case ir::ValueKind::kFloat:
      return nb::float_(static_cast<const ir::FloatValue&>(v).value());
    case ir::ValueKind::kStr:
      return nb::str(static_cast<const ir::StrValue&>(v).value().c_str());
    case ir::ValueKind::kDType:
      return nb::cast(static_cast<const ir::DTypeValue&>(v).value());
    case ir::ValueKind::kExternal:
      return static_cast<const PyObjectValue&>(v).object();
    case ir::ValueKind::kTensor:
      return nb::cast(static_cast<const ir::TensorValue&>(v).tensor());
    case ir::ValueKind::kTuple:
    case ir::ValueKind::kList: {
      nb::list l;
      for (const auto& item : static_cast<const ir::SequenceValue&>(v).items()) {
        nb::object o = to_python(std::make_shared<ir::Constant>(nullptr, item));
        if (!o.is_valid()) return {};
        l.append(o);
      }
      if (v.kind() == ir::ValueKind::kList) return l;
      return nb::tuple(l);
    }
    default:
      return {};
  }
}

NodePtr Parser::op_call(Block* b, const OpDef& d, const std::vector<AttrValue>& preset,
                        std::vector<NodePtr> args, std::vector<std::pair<std::string, NodePtr>> kw,
                        const SourceLoc& loc) {
  const size_t n_in = d.inputs.size(), n_attr = d.attrs.size();
  std::vector<NodePtr> in(n_in), at(n_attr);
  std::vector<bool> fixed(n_attr, false);
  for (size_t i = 0; i < preset.size() && i < n_attr; ++i)
    if (!std::holds_alternative<std::monostate>(preset[i])) {
      at[i] = constant(attr_value(preset[i]));
      fixed[i] = true;
    }
  size_t ai = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i < n_in) {
      in[i] = args[i];
      continue;
    }
    while (ai < n_attr && fixed[ai]) ++ai;
    if (ai >= n_attr)
      error(loc, "TypeError",
            "[" + d.name + "] takes at most " + std::to_string(i) + " positional arguments, got " +
                std::to_string(args.size()));
    at[ai++] = args[i];
  }
  for (auto& [key, v] : kw) {
    bool done = false;
    for (size_t i = 0; i < n_in && !done; ++i)
      if (d.inputs[i].name == key) {
        if (in[i])
          error(loc, "TypeError", "[" + d.name + "] got multiple values for input '" + key + "'");
        in[i] = v;
        done = true;
      }
    if (done) continue;
    int idx = d.attr_index(key);
    if (idx < 0)
      error(loc, "TypeError",
            "[" + d.name + "] got an unexpected keyword argument '" + key + "'" +
                did_you_mean(key, keyword_names(d)));
    if (at[idx])
      error(loc, "TypeError", "[" + d.name + "] got multiple values for attribute '" + key + "'");
    at[idx] = v;
  }
  std::vector<AttrValue> defaults;
  for (size_t i = 0; i < n_in; ++i)
    if (!in[i]) {
      if (!d.inputs[i].optional)
        error(loc, "TypeError",
              "[" + d.name + "] missing required input '" + d.inputs[i].name + "'");
      in[i] = constant(ir::none());
    }
  for (size_t i = 0; i < n_attr; ++i) {
    const AttrDef& a = d.attrs[i];
    defaults.push_back(a.default_value);
    if (at[i]) continue;
    if (std::holds_alternative<std::monostate>(a.default_value) && !a.optional)
      error(loc, "TypeError", "[" + d.name + "] missing required attribute '" + a.name + "'");
    at[i] = constant(attr_value(a.default_value));
  }
  std::vector<NodePtr> all{constant(ir::op_value(&d, Attrs(&d, std::move(defaults))))};
  all.insert(all.end(), in.begin(), in.end());
  all.insert(all.end(), at.begin(), at.end());
  NodePtr r = apply(b, std::move(all), loc);
  if (d.tuple_output) seq_nodes.insert(r.get());  // len(ops.split(x, 1)) is the tuple's length
  return r;
}

// A primitive configured with Primitive.shard(in_strategy, out_strategy): its tensor arguments
// (and its result) pass through shard_hint nodes that the semi-auto parallel pass reads.
NodePtr Parser::sharded_op_call(Block* b, nb::handle prim, const OpDef& d,
                                const std::vector<AttrValue>& preset, std::vector<NodePtr> args,
                                std::vector<std::pair<std::string, NodePtr>> kw,
                                const SourceLoc& loc) {
  auto hinted = [&](NodePtr x, nb::handle dims) { return shard_hint(b, std::move(x), dims, loc); };
  nb::object in = nb::getattr(prim, "_in_strategy", nb::none());
  if (!in.is_none()) {
    size_t i = 0;
    for (nb::handle dims : in) {
      if (i >= args.size() || i >= d.inputs.size()) break;
      if (!dims.is_none()) args[i] = hinted(args[i], dims);
      ++i;
    }
  }
  NodePtr r = op_call(b, d, preset, std::move(args), std::move(kw), loc);
  nb::object out = nb::getattr(prim, "_out_strategy", nb::none());
  if (!out.is_none() && !d.tuple_output) r = hinted(r, out[0]);
  return r;
}

NodePtr Parser::shard_hint(Block* b, NodePtr x, nb::handle dims, const SourceLoc& loc,
                           bool layout_only) {
  std::vector<int64_t> v;
  for (nb::handle k : dims) v.push_back(nb::cast<int64_t>(k));
  return op_call(b, Registry::get().at("shard_hint"),
                 {AttrValue(std::move(v)), AttrValue(layout_only)}, {std::move(x)}, {}, loc);
}

NodePtr Parser::hint_outputs(Block* b, NodePtr out, nb::handle strategy, const SourceLoc& loc) {
  const size_t n = len_of(strategy);
  if (ir::is_prim_call(out, Prim::kMakeTuple)) {
    auto* t = ir::as_apply(out);
    if (t->num_args() != n)
      error(loc, "ValueError",
            "Cell.shard: out_strategy has " + std::to_string(n) +
                " layouts but construct returns " + std::to_string(t->num_args()) + " values");
    std::vector<NodePtr> items;
    for (size_t i = 0; i < n; ++i)
      items.push_back(strategy[i].is_none() ? t->arg(i)
                                            : shard_hint(b, t->arg(i), strategy[i], loc, true));
    return sequence(b, Prim::kMakeTuple, std::move(items), loc);
  }
  if (n != 1)
    error(loc, "ValueError",
          "Cell.shard: out_strategy has " + std::to_string(n) +
              " layouts but construct returns one value (not a tuple literal)");
  return strategy[0].is_none() ? out : shard_hint(b, std::move(out), strategy[0], loc, true);
}

NodePtr Parser::op_by_name(Block* b, const std::string& name, std::vector<NodePtr> args,
                           std::vector<std::pair<std::string, NodePtr>> kw, const SourceLoc& loc) {
  const OpDef* d = Registry::get().find(name);
  if (!d) error(loc, "NotImplementedError", "op '" + name + "' is not registered");
  return op_call(b, *d, {}, std::move(args), std::move(kw), loc);
}

// f(**d) with d a dict literal of this function (make_dict) or a constant dict: its items become
// keyword arguments. False when the keys are not known at parse time.
bool Parser::expand_kwargs(Block* b, nb::handle k,
                           std::vector<std::pair<std::string, NodePtr>>& kw) {
  NodePtr d = expr(b, k.attr("value"));
  std::vector<ir::ValuePtr> keys;
  std::vector<NodePtr> values;
  if (ir::is_prim_call(d, Prim::kMakeDict)) {
    auto* a = ir::as_apply(d);
    ir::Constant* kc = ir::as_constant(a->arg(0));
    if (!kc) return false;
    keys = static_cast<const ir::SequenceValue&>(*kc->value()).items();
    if (ir::is_prim_call(a->arg(1), Prim::kMakeTuple)) {
      auto* t = ir::as_apply(a->arg(1));
      for (size_t i = 0; i < t->num_args(); ++i) values.push_back(t->arg(i));
    } else if (ir::Constant* vc = ir::as_constant(a->arg(1))) {
      for (const auto& v : static_cast<const ir::SequenceValue&>(*vc->value()).items())
        values.push_back(constant(v));
    } else {
      return false;
    }
  } else if (ir::Constant* c = ir::as_constant(d);
             c && c->value()->kind() == ir::ValueKind::kDict) {
    for (const auto& [key, v] : static_cast<const ir::DictValue&>(*c->value()).items()) {
      keys.push_back(key);
      values.push_back(constant(v));
    }
  } else {
    return false;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i]->kind() != ir::ValueKind::kStr)
      error(loc_of(k), "TypeError", "keywords must be strings");
    kw.push_back({static_cast<const ir::StrValue&>(*keys[i]).value(), values[i]});
  }
  return true;
}

// A builtin that only iterates its one argument (sum, max, min, any, all): a generator
// expression passed to it may be unrolled into a tuple.
bool Parser::consumes_iterable(const NodePtr& callee) const {
  const PyObjectValue* pv = callee ? py_object_of(callee) : nullptr;
  if (!pv) return false;
  for (const char* f : {"sum", "max", "min", "any", "all"})
    if (pv->object().is(builtins_.attr(f))) return true;
  return false;
}

NodePtr Parser::call(Block* b, nb::handle e) {
  SourceLoc loc = loc_of(e);
  nb::handle func = e.attr("func");
  NodePtr base, callee;
  std::string method;
  if (ast_type(func) == "Attribute") {
    base = expr(b, func.attr("value"));
    method = str_attr(func, "attr");
    if (py_object_of(base)) callee = attribute(b, base, method, loc_of(func));
  } else {
    callee = expr(b, func);
  }
  std::vector<NodePtr> args;
  // tuple(elt for v in seq) / list(...): the generator is unrolled like a list comprehension.
  nb::handle ast_args = e.attr("args");
  if (len_of(ast_args) == 1 && len_of(e.attr("keywords")) == 0 &&
      ast_type(ast_args[0]) == "GeneratorExp") {
    const PyObjectValue* pv = callee ? py_object_of(callee) : nullptr;
    if (pv &&
        (pv->object().is(builtins_.attr("tuple")) || pv->object().is(builtins_.attr("list")))) {
      bool is_tuple = pv->object().is(builtins_.attr("tuple"));
      return comprehension(b, ast_args[0], is_tuple ? Prim::kMakeTuple : Prim::kMakeList);
    }
  }
  // dict(zip(keys, values)): the pairs are iterated like a dict comprehension's.
  if (len_of(ast_args) == 1 && len_of(e.attr("keywords")) == 0 && callee && py_object_of(callee) &&
      py_object_of(callee)->object().is(builtins_.attr("dict")))
    if (NodePtr d = dict_of_pairs(b, ast_args[0])) return d;
  // f(*t) with t a tuple only analysis knows (a *args parameter): unpack_call(f, (a,), t, ...).
  bool unpack = false;
  for (nb::handle a : e.attr("args"))
    if (ast_type(a) == "Starred") {
      if (forwards_param(b, a.attr("value"), false)) {  // this function's own *args
        if (b->scope->vararg_len) continue;             // parsed for a call: its length known
        if (len_of(e.attr("keywords")) > 0) return forwarding_without_shape(b, e);
      }
      NodePtr t = expr(b, a.attr("value"));
      ir::Constant* c = ir::as_constant(t);
      unpack |= !(ir::is_prim_call(t, Prim::kMakeTuple) || ir::is_prim_call(t, Prim::kMakeList) ||
                  (c && (c->value()->kind() == ir::ValueKind::kTuple ||
                         c->value()->kind() == ir::ValueKind::kList)));
    }
  if (unpack) {
    if (len_of(e.attr("keywords")) > 0)
      unsupported(e, "keyword arguments with f(*args)", "pass them positionally");
    if (!callee) callee = attribute(b, base, method, loc_of(func));
    std::vector<NodePtr> parts{callee};
    for (nb::handle a : e.attr("args"))
      parts.push_back(ast_type(a) == "Starred" ? expr(b, a.attr("value"))
                                               : sequence(b, Prim::kMakeTuple, {expr(b, a)}, loc));
    return prim(b, Prim::kUnpackCall, std::move(parts), loc);
  }
  for (nb::handle a : e.attr("args")) {
    if (ast_type(a) == "GeneratorExp" && len_of(ast_args) == 1 && consumes_iterable(callee)) {
      args.push_back(comprehension(b, a, Prim::kMakeTuple));  // sum(x * x for x in xs)
      continue;
    }
    if (ast_type(a) != "Starred") {
      args.push_back(expr(b, a));
      continue;
    }
    NodePtr t = expr(b, a.attr("value"));
    if (forwards_param(b, a.attr("value"), false)) {
      for (NodePtr& item : forwarded_args(b, t, loc_of(a))) args.push_back(std::move(item));
      continue;
    }
    if (ir::is_prim_call(t, Prim::kMakeTuple) || ir::is_prim_call(t, Prim::kMakeList)) {
      auto* ap = ir::as_apply(t);
      for (size_t i = 0; i < ap->num_args(); ++i) args.push_back(ap->arg(i));
    } else if (ir::Constant* c = ir::as_constant(t);
               c && (c->value()->kind() == ir::ValueKind::kTuple ||
                     c->value()->kind() == ir::ValueKind::kList)) {
      for (const auto& v : static_cast<const ir::SequenceValue&>(*c->value()).items())
        args.push_back(constant(v));
    } else {
      unsupported(a, "f(*args) with a tuple not known at compile time",
                  "pass the arguments one by one, or call with a tuple literal");
    }
  }
  std::vector<std::pair<std::string, NodePtr>> kw;
  for (nb::handle k : e.attr("keywords")) {
    if (k.attr("arg").is_none()) {                     // f(**d): the dict's keys must be known here
      if (forwards_param(b, k.attr("value"), true)) {  // this function's own **kwargs
        if (!b->scope->kwarg_keys) return forwarding_without_shape(b, e);
        for (auto& item : forwarded_kwargs(b, expr(b, k.attr("value")), loc_of(k)))
          kw.push_back(std::move(item));
        continue;
      }
      if (!expand_kwargs(b, k, kw))
        unsupported(k, "f(**d) with a dict whose keys are not known where it is called",
                    "build the dict with a literal in this function, or pass the keyword arguments "
                    "by name");
      continue;
    }
    kw.push_back({str_attr(k, "arg"), expr(b, k.attr("value"))});
  }
  // Tensors have none of these methods: a list (or a name that will be one) is being changed.
  if (!callee && is_list_method(method) && !dict_nodes.count(base.get()))
    return list_method(b, func.attr("value"), base, method, std::move(args), std::move(kw), loc);
  if (!callee) return tensor_method(b, base, method, std::move(args), std::move(kw), loc);
  // Locals passed by name, for rebinding below when the callee assigns one of them.
  std::vector<std::pair<std::string, NodePtr>> named_locals;
  for (size_t i = 0; i < len_of(ast_args) && i < args.size(); ++i)
    if (ast_type(ast_args[i]) == "Name" && b->scope->locals.count(str_attr(ast_args[i], "id")))
      named_locals.emplace_back(str_attr(ast_args[i], "id"), args[i]);
  NodePtr r = call_value(b, callee, std::move(args), std::move(kw), loc);
  // A call that prints, assigns or raises runs even when its value is folded away or unused
  // (`if 0 < f(x) < 3:` with f printing and returning a constant).
  if (ir::constant_graph(callee) && has_effects(r)) add_effect(b, r);
  // ops.assign(m, v) with m a local (a loop variable over self.parameters): later reads of m in
  // this function see v, as they would eagerly (the Parameter itself is written after its reads).
  if (ir::is_prim_call(r, Prim::kAssign) && len_of(ast_args) > 0 &&
      ast_type(ast_args[0]) == "Name") {
    std::string name = str_attr(ast_args[0], "id");
    if (b->scope->locals.count(name)) write(b, name, r);
  }
  // The same through a function that returns ops.assign of one of its parameters (P.ScatterNdAdd
  // and P.AssignAdd in a helper's `op(x, i, u); return x`): x is rebound to the new value.
  if (auto* a = ir::as_apply(r); a && !ir::is_prim_call(r, Prim::kAssign))
    if (const FuncGraph* g = ir::constant_graph(a->callee()))
      if (auto it = returns_assigned_param_.find(g);
          it != returns_assigned_param_.end() && it->second + 1 < a->inputs().size())
        for (const auto& [name, node] : named_locals)
          if (node == a->inputs()[it->second + 1]) write(b, name, r);
  return r;
}

std::optional<size_t> Parser::assigned_param(const FuncGraph* fg, const NodePtr& out) const {
  auto* a = ir::as_apply(out);
  if (!a) return std::nullopt;
  NodePtr target;  // the node the returned value assigns
  if (ir::is_prim_call(out, Prim::kAssign) && a->inputs().size() > 1) {
    target = a->inputs()[1];
  } else if (const FuncGraph* callee = ir::constant_graph(a->callee())) {
    auto it = returns_assigned_param_.find(callee);
    if (it != returns_assigned_param_.end() && it->second + 1 < a->inputs().size())
      target = a->inputs()[it->second + 1];
  }
  if (!target) return std::nullopt;
  const auto& params = fg->parameters();
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i] == target) return i;
  return std::nullopt;
}

void Parser::note_assigning_call(Block* b, const FuncGraph* callee, const std::vector<NodePtr>& in,
                                 const NodePtr& r, const SourceLoc& loc) {
  auto it = returns_assigned_param_.find(callee);
  if (!assigned_ || it == returns_assigned_param_.end() || it->second + 1 >= in.size()) return;
  for (auto& [obj, node] : weights_)
    if (node == in[it->second + 1]) (*assigned_)[obj] = Assigned{loc, b, r};
}

namespace {
// The names a keyword argument may take (not *args): candidates for "did you mean".
std::vector<std::string> signature_keywords(const Signature& sig) {
  std::vector<std::string> names;
  for (size_t i = 0; i < sig.names.size(); ++i)
    if (static_cast<int>(i) != sig.vararg) names.push_back(sig.names[i]);
  return names;
}

std::vector<NodePtr> bind_args(Parser& p, Block* b, const Signature& sig, const std::string& fname,
                               std::vector<NodePtr> args,
                               std::vector<std::pair<std::string, NodePtr>> kw,
                               const SourceLoc& loc) {
  std::vector<NodePtr> out(sig.names.size());
  std::vector<NodePtr> extra;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i < sig.n_positional)
      out[i] = args[i];
    else if (sig.vararg >= 0)
      extra.push_back(args[i]);
    else
      p.error(loc, "TypeError",
              fname + "() takes " + std::to_string(sig.n_positional) +
                  " positional arguments but " + std::to_string(args.size()) + " were given");
  }
  if (sig.vararg >= 0) out[sig.vararg] = p.prim(b, Prim::kMakeTuple, std::move(extra), loc);
  std::vector<ir::ValuePtr> extra_keys;  // keywords **kwargs collects
  std::vector<NodePtr> extra_values;
  for (auto& [k, v] : kw) {
    auto it = std::find(sig.names.begin(), sig.names.end(), k);
    size_t i = it - sig.names.begin();
    if ((it == sig.names.end() || static_cast<int>(i) == sig.kwarg) && sig.kwarg >= 0) {
      extra_keys.push_back(ir::string(k));
      extra_values.push_back(v);
      continue;
    }
    if (it == sig.names.end() || static_cast<int>(i) == sig.vararg)
      p.error(loc, "TypeError",
              fname + "() got an unexpected keyword argument '" + k + "'" +
                  did_you_mean(k, signature_keywords(sig)));
    if (out[i])
      p.error(loc, "TypeError", fname + "() got multiple values for argument '" + k + "'");
    out[i] = v;
  }
  if (sig.kwarg >= 0)
    out[sig.kwarg] = p.make_dict(b, std::move(extra_keys), std::move(extra_values), loc);
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i]) {
      if (!sig.defaults[i])
        p.error(loc, "TypeError", fname + "() missing required argument '" + sig.names[i] + "'");
      out[i] = sig.defaults[i];
    }
  return out;
}
}  // namespace

NodePtr Parser::call_value(Block* b, NodePtr callee, std::vector<NodePtr> args,
                           std::vector<std::pair<std::string, NodePtr>> kw, const SourceLoc& loc) {
  if (ir::is_prim_value(callee, Prim::kAssign) || ir::is_prim_value(callee, Prim::kDepend)) {
    // ops.assign(variable, value), ops.depend(value, expr)
    Prim p = ir::is_prim_value(callee, Prim::kAssign) ? Prim::kAssign : Prim::kDepend;
    const char* names[2] = {p == Prim::kAssign ? "variable" : "value",
                            p == Prim::kAssign ? "value" : "expr"};
    for (auto& [k, v] : kw) {
      if (k == names[0] && args.empty())
        args.push_back(v);
      else if (k == names[1] && args.size() == 1)
        args.push_back(v);
      else
        error(loc, "TypeError",
              std::string(ir::prim_name(p)) + "() got an unexpected keyword argument '" + k + "'");
    }
    if (args.size() != 2)
      error(loc, "TypeError",
            std::string(ir::prim_name(p)) + "() takes 2 arguments (" + names[0] + ", " + names[1] +
                "), got " + std::to_string(args.size()));
    if (p == Prim::kAssign && assigned_)
      for (auto& [obj, node] : weights_)
        if (node == args[0]) (*assigned_)[obj] = Assigned{loc, b, args[1]};
    return prim(b, p, std::move(args), loc);
  }
  if (FuncGraph* g = ir::constant_graph(callee)) {
    auto it = signatures.find(g);
    if (it != signatures.end())
      if (FuncGraph* shaped = shaped_graph(g, it->second, args.size(), kw, loc); shaped != g) {
        g = shaped;
        callee = constant(ir::graph_value(g));
        it = signatures.find(g);
      }
    std::vector<NodePtr> in{callee};
    if (it != signatures.end()) {
      auto bound = bind_args(*this, b, it->second, g->name(), std::move(args), std::move(kw), loc);
      in.insert(in.end(), bound.begin(), bound.end());
    } else {
      in.insert(in.end(), args.begin(), args.end());
    }
    NodePtr r = apply(b, in, loc);
    note_assigning_call(b, g, in, r, loc);
    return r;
  }
  if (const PyObjectValue* pv = py_object_of(callee)) {
    nb::object fn = pv->object();
    if (PyType_Check(fn.ptr()) && nb::hasattr(fn, "_mycel_record"))  // CSRTensor(...), @jit_class
      return record_construct(b, fn, std::move(args), std::move(kw), loc);
    const OpDef* op = nullptr;
    std::vector<AttrValue> preset;
    if ((op = op_of_function(fn))) return op_call(b, *op, {}, std::move(args), std::move(kw), loc);
    if (nb::hasattr(fn, "_mycel_transform") &&
        !PyType_Check(fn.ptr()))  // grad(f), vmap(f) made here
      return transform_call(b, fn, std::move(args), std::move(kw), loc);
    if (nb::hasattr(fn, "_mycel_graph_impl") &&
        !PyType_Check(fn.ptr()))  // library code with a parsable form
      return call_value(b, object_node(b, fn.attr("_mycel_graph_impl"), loc), std::move(args),
                        std::move(kw), loc);
    if (op_handle_of(fn, &op, &preset))
      return sharded_op_call(b, fn, *op, preset, std::move(args), std::move(kw), loc);
    bool constant_arguments = true;
    for (auto& a : args) constant_arguments &= to_python(a).is_valid();
    for (auto& [k, v] : kw) constant_arguments &= to_python(v).is_valid();
    if (PyType_Check(fn.ptr()) && PyObject_IsSubclass(fn.ptr(), prim_type_.ptr()) == 1 &&
        constant_arguments) {
      // ops.MatMul(transpose_b=True) inside construct: configure the primitive now.
      nb::list pa;
      nb::dict pk;
      for (auto& a : args) pa.append(to_python(a));
      for (auto& [k, v] : kw) pk[k.c_str()] = to_python(v);
      try {
        return object_node(b, fn(*nb::tuple(pa), **pk), loc);
      } catch (nb::python_error& e) {
        error(loc, "TypeError", e.what());
      }
    }
    if ((PyCFunction_Check(fn.ptr()) || PyType_Check(fn.ptr())) && nb::hasattr(fn, "__name__") &&
        fn.is(nb::getattr(builtins_, str_attr(fn, "__name__").c_str(), nb::none()))) {
      bool handled = false;  // len, print, abs, tuple, list, getattr; others are evaluated later
      NodePtr r = builtin(b, str_attr(fn, "__name__"), fn, args, kw, loc, &handled);
      if (handled) return r;
    }
    // Anything else is evaluated by analysis at compile time: a primitive configured from a
    // parameter (ops.Median(axis=axis)) once the graph is specialized to its value. Keywords
    // known only then travel as trailing arguments (graph_syntax.call_keywords); constant
    // keywords are bound now.
    if (!constant_arguments && !kw.empty()) {
      static nb::handle call_keywords =
          nb::object(nb::module_::import_("mycel.common.graph_syntax").attr("call_keywords"))
              .release();
      std::vector<ir::ValuePtr> names;
      for (auto& [k, v] : kw) {
        names.push_back(ir::string(k));
        args.push_back(v);
      }
      args.insert(args.begin(), {constant(py_object(call_keywords)), callee,
                                 constant(ir::tuple(std::move(names)))});
      return apply(b, std::move(args), loc);
    }
    if (!kw.empty()) {
      nb::dict pk;
      for (auto& [k, v] : kw) {
        nb::object o = to_python(v);
        if (!o.is_valid())
          error(loc, "TypeError",
                "keyword argument '" + k + "' of " + pv->name() +
                    " must be a compile-time constant in graph mode");
        pk[k.c_str()] = o;
      }
      callee = constant(py_object(nb::module_::import_("functools").attr("partial")(fn, **pk)));
    }
    std::vector<NodePtr> in{callee};
    in.insert(in.end(), args.begin(), args.end());
    return apply(b, std::move(in), loc);
  }
  if (!kw.empty()) error(loc, "TypeError", "keyword arguments need a callee known at compile time");
  std::vector<NodePtr> in{callee};
  in.insert(in.end(), args.begin(), args.end());
  return apply(b, std::move(in), loc);
}

NodePtr Parser::builtin(Block* b, const std::string& name, nb::handle fn, std::vector<NodePtr> args,
                        std::vector<std::pair<std::string, NodePtr>> kw, const SourceLoc& loc,
                        bool* handled) {
  *handled = true;
  if (name == "print") {
    // print's pieces are written one after another: a space between arguments; an f-string
    // whose values are known only at run time contributes its pieces (text and values).
    std::vector<NodePtr> pieces;
    for (size_t k = 0; k < args.size(); ++k) {
      if (k) pieces.push_back(constant(ir::string(" ")));
      auto it = fstring_parts.find(args[k].get());
      bool constant_values = true;
      if (it != fstring_parts.end())
        for (const NodePtr& x : it->second) constant_values &= ir::as_constant(x) != nullptr;
      if (it == fstring_parts.end() || constant_values) {
        pieces.push_back(args[k]);
        continue;
      }
      pieces.insert(pieces.end(), it->second.begin(), it->second.end());
    }
    return prim(b, Prim::kPrint, std::move(pieces), loc);
  }
  if (name == "len" && args.size() == 1) {
    if (is_sequence(args[0]) || dict_nodes.count(args[0].get()))
      return prim(b, Prim::kTupleLen, args, loc);
    // A constant or a compile-time Python call's result (name.upper()): Python's len, evaluated
    // then.
    auto* a = ir::as_apply(args[0]);
    if (ir::as_constant(args[0]) || (a && py_object_of(a->callee()))) {
      *handled = false;
      return nullptr;
    }
    NodePtr n = prim(b, Prim::kTupleGetItem,
                     {prim(b, Prim::kShape, args, loc), constant(ir::integer(0))}, loc);
    scalar_nodes.insert(n.get());
    return n;
  }
  if (name == "abs" && args.size() == 1 && !is_scalar(args[0]) && !ir::as_constant(args[0]))
    return op_by_name(b, "abs", args, {}, loc);
  // max/min/sum: Python's at compile time without tensors, else Python's loop over the items
  // (graph_syntax.builtin_*); max/min with key= or default= stay Python's.
  if (((name == "max" || name == "min") && kw.empty() && !args.empty()) ||
      (name == "sum" && (args.size() == 1 || args.size() == 2))) {
    const std::string helper = "builtin_" + name;
    return call_value(b, library_graph("mycel.common.graph_syntax", helper.c_str(), loc),
                      std::move(args), std::move(kw), loc);
  }
  if ((name == "tuple" || name == "list") && args.size() == 1) {
    Prim p = name == "tuple" ? Prim::kMakeTuple : Prim::kMakeList;
    if (ir::is_prim_call(args[0], Prim::kMakeTuple) || ir::is_prim_call(args[0], Prim::kMakeList)) {
      auto* a = ir::as_apply(args[0]);
      return prim(b, p, std::vector<NodePtr>(a->inputs().begin() + 1, a->inputs().end()), loc);
    }
  }
  if (name == "dict" && args.empty()) {  // dict(a=1, b=x)
    std::vector<ir::ValuePtr> keys;
    std::vector<NodePtr> values;
    for (auto& [k, v] : kw) {
      keys.push_back(ir::string(k));
      values.push_back(v);
    }
    return make_dict(b, std::move(keys), std::move(values), loc);
  }
  if (name == "getattr" && (args.size() == 2 || args.size() == 3) && py_object_of(args[0])) {
    ir::Constant* c = ir::as_constant(args[1]);
    if (c && c->value()->kind() == ir::ValueKind::kStr) {
      const std::string& a = static_cast<const ir::StrValue&>(*c->value()).value();
      if (args.size() == 3 && !nb::hasattr(py_object_of(args[0])->object(), a.c_str()))
        return args[2];
      return attribute(b, args[0], a, loc);
    }
  }
  if (name == "super")
    error(loc, "SyntaxError",
          "'super()' is not supported in graph mode; "
          "call the base class method as Base.method(self, ...)");
  *handled = false;
  return nullptr;
}

NodePtr Parser::plain_tensor_method(Block* b, NodePtr self, const std::string& m,
                                    std::vector<NodePtr> args,
                                    std::vector<std::pair<std::string, NodePtr>> kw,
                                    const SourceLoc& loc) {
  auto shape_arg = [&]() -> NodePtr {
    if (args.size() == 1) return args[0];
    return sequence(b, Prim::kMakeTuple, args, loc);
  };
  if ((m == "keys" || m == "values" || m == "items") && args.empty() && kw.empty()) {
    // Tensors have no such methods: self is a dict (its keys are known at compile time).
    Prim p = m == "keys" ? Prim::kDictKeys : m == "values" ? Prim::kDictValues : Prim::kDictItems;
    return prim(b, p, {self}, loc);
  }
  if (m == "reshape" || m == "view") return op_by_name(b, "reshape", {self, shape_arg()}, {}, loc);
  if (m == "transpose" || m == "permute")
    return op_by_name(b, "transpose", {self, shape_arg()}, {}, loc);
  if (m == "tile") return op_by_name(b, "tile", {self, shape_arg()}, {}, loc);
  if (m == "flatten" && args.empty() && kw.empty())
    return op_by_name(b, "reshape", {self, constant(ir::tuple({ir::integer(-1)}))}, {}, loc);
  if (m == "astype" || m == "to") {
    args.insert(args.begin(), self);
    return op_by_name(b, "cast", std::move(args), std::move(kw), loc);
  }
  if (m == "copy" || m == "clone") return op_by_name(b, "identity", {self}, {}, loc);
  if (m == "item" && args.empty()) return prim(b, Prim::kTensorToScalar, {self}, loc);
  static const char* direct[] = {"expand_dims", "squeeze", "broadcast_to"};
  for (const char* d : direct)
    if (m == d) {
      args.insert(args.begin(), self);
      return op_by_name(b, m, std::move(args), std::move(kw), loc);
    }
  nb::dict table =
      nb::cast<nb::dict>(nb::module_::import_("mycel.common.tensor_op_methods").attr("_METHODS"));
  if (table.contains(m.c_str()) && Registry::get().find(nb::cast<std::string>(table[m.c_str()]))) {
    args.insert(args.begin(), self);
    return op_by_name(b, nb::cast<std::string>(table[m.c_str()]), std::move(args), std::move(kw),
                      loc);
  }
  // MindSpore Tensor methods made of ops (x.acos(), x.hsplit(2)): the Python function is parsed
  // like user code, with the tensor as its first argument (mycel/ops/tensor_composites.py).
  nb::dict composites =
      nb::cast<nb::dict>(nb::module_::import_("mycel.ops.tensor_composites").attr("METHODS"));
  if (composites.contains(m.c_str())) {
    args.insert(args.begin(), self);
    return call_value(b, object_node(b, composites[m.c_str()], loc), std::move(args), std::move(kw),
                      loc);
  }
  // Any other method is Python's (name.lower(), shape.index(3), "{}-{}".format(a, b)): evaluated
  // at compile time on a compile-time receiver; analysis refuses a receiver known only at run time.
  static nb::handle call_method =
      nb::object(nb::module_::import_("mycel.common.graph_syntax").attr("call_method")).release();
  std::vector<ir::ValuePtr> names;  // keyword values follow the positional ones
  for (auto& [k, v] : kw) {
    names.push_back(ir::string(k));
    args.push_back(v);
  }
  args.insert(args.begin(), {constant(py_object(call_method)), self, constant(ir::string(m)),
                             constant(ir::tuple(std::move(names)))});
  return apply(b, std::move(args), loc);
}

}  // namespace mycel::frontend
