// Comprehensions. [elt for t in seq if c] whose sequence length is known when parsing unrolls
// here into make_list/make_tuple; any other (a tuple parameter, a tensor's rows, several `for`
// clauses), every dict comprehension and dict(pairs) become what Python makes of them: a nested
// function whose `for` loops append to a list (or set items of a dict), which analysis unrolls
// when the trip counts are compile-time values, as it does for user loops that grow a list.
#include "mycel/frontend/parser.h"

namespace mycel::frontend {

namespace {
// Folds scalar prims whose operands are constants (a comprehension filter such as `i % 2 == 0`).
NodePtr fold(Parser& p, const NodePtr& n) {
  static const std::pair<Prim, const char*> table[] = {{Prim::kScalarAdd, "add"},
                                                       {Prim::kScalarSub, "sub"},
                                                       {Prim::kScalarMul, "mul"},
                                                       {Prim::kScalarDiv, "truediv"},
                                                       {Prim::kScalarFloorDiv, "floordiv"},
                                                       {Prim::kScalarMod, "mod"},
                                                       {Prim::kScalarPow, "pow"},
                                                       {Prim::kScalarNeg, "neg"},
                                                       {Prim::kScalarEq, "eq"},
                                                       {Prim::kScalarNe, "ne"},
                                                       {Prim::kScalarLt, "lt"},
                                                       {Prim::kScalarLe, "le"},
                                                       {Prim::kScalarGt, "gt"},
                                                       {Prim::kScalarGe, "ge"},
                                                       {Prim::kScalarNot, "not_"}};
  for (const auto& [prim, name] : table) {
    if (!ir::is_prim_call(n, prim)) continue;
    auto* a = ir::as_apply(n);
    nb::list args;
    for (size_t k = 0; k < a->num_args(); ++k) {
      NodePtr v = fold(p, a->arg(k));
      ir::Constant* c = ir::as_constant(v);
      if (!c) return n;
      const ir::Value& x = *c->value();
      if (x.kind() == ir::ValueKind::kInt)
        args.append(nb::int_(static_cast<const ir::IntValue&>(x).value()));
      else if (x.kind() == ir::ValueKind::kFloat)
        args.append(nb::float_(static_cast<const ir::FloatValue&>(x).value()));
      else if (x.kind() == ir::ValueKind::kBool)
        args.append(nb::bool_(static_cast<const ir::BoolValue&>(x).value()));
      else
        return n;
    }
    nb::object r;
    try {
      r = nb::module_::import_("operator").attr(name)(*nb::tuple(args));
    } catch (nb::python_error&) {
      return n;
    }
    if (PyBool_Check(r.ptr())) return p.constant(ir::boolean(nb::cast<bool>(r)));
    if (PyLong_Check(r.ptr())) return p.constant(ir::integer(nb::cast<int64_t>(r)));
    if (PyFloat_Check(r.ptr())) return p.constant(ir::floating(nb::cast<double>(r)));
    return n;
  }
  return n;
}

void target_names(nb::handle t, std::vector<std::string>& out) {
  std::string k = ast_type(t);
  if (k == "Name")
    out.push_back(str_attr(t, "id"));
  else if (k == "Tuple" || k == "List")
    for (nb::handle e : t.attr("elts")) target_names(e, out);
}
}  // namespace

// [elt for target in iterable if cond] (and tuple(elt for ...)): unrolled into make_list /
// make_tuple when the iterable's length is known at parse time and every filter folds to a
// constant; the target names are bound only while the element is parsed (comprehension scope).
NodePtr Parser::comprehension(Block* b, nb::handle e, Prim p) {
  const bool is_list = ast_type(e) == "ListComp";
  const char* instead = is_list ? "build the list with a for loop" : "use a for loop";
  nb::handle gens = e.attr("generators");
  for (nb::handle g : gens)
    if (PyObject_IsTrue(g.attr("is_async").ptr()) == 1)
      unsupported(e, "async comprehension", instead);
  if (len_of(gens) != 1) return comprehension_loop(b, e, p);
  nb::handle g = gens[0];
  SourceLoc loc = loc_of(e);
  Iter src;
  nb::handle it = g.attr("iter");
  src = iterable(b, it);
  int64_t n = iter_static_len(src);
  if (n < 0) return comprehension_loop(b, e, p);  // the length is found by analysis
  std::vector<std::string> names;
  target_names(g.attr("target"), names);
  std::map<std::string, NodePtr> saved;
  for (const std::string& nm : names) {
    auto f = b->vars.find(nm);
    saved[nm] = f == b->vars.end() ? nullptr : f->second;
  }
  std::vector<NodePtr> items;
  const size_t n_effects = b->effects.size();
  bool later = false;  // a filter known only to analysis (x.shape[0] > 1): loop instead
  for (int64_t k = 0; k < n && !later; ++k) {
    NodePtr item = iter_item(b, src, constant(ir::integer(k)), loc);
    assign(b, g.attr("target"), item);
    bool keep = true;
    for (nb::handle cond : g.attr("ifs")) {
      int truth = constant_truth(fold(*this, expr(b, cond)));
      if (truth < 0) later = true;
      if (truth <= 0) {
        keep = false;
        break;
      }
    }
    if (keep) items.push_back(expr(b, e.attr("elt")));
    for (auto& [nm, v] : saved) {
      if (v)
        b->vars[nm] = v;
      else
        b->vars.erase(nm);
    }
  }
  if (later) {  // what was unrolled is dropped (its nodes stay unused), with its effects
    b->effects.resize(n_effects);
    return comprehension_loop(b, e, p);
  }
  return sequence(b, p, std::move(items), loc);
}

namespace {
// Python source of the function a comprehension is; the placeholders are replaced by the
// comprehension's own ast nodes.
constexpr const char* kListLoop =
    "def f():\n  _r = []\n  for _t in _i:\n    _r.append(_e)\n  return _r\n";
constexpr const char* kDictLoop =
    "def f():\n  _r = {}\n  for _t in _i:\n    _r[_k] = _v\n  return _r\n";

// Every node of `tree` placed at `at` (errors in the generated code point at the comprehension).
void place(nb::handle ast, nb::handle tree, nb::handle at) {
  for (nb::handle n : ast.attr("walk")(tree)) {
    if (len_of(nb::getattr(n, "_attributes", nb::tuple())) == 0) continue;  // not a stmt or expr
    for (const char* a : {"lineno", "col_offset", "end_lineno", "end_col_offset"})
      n.attr(a) = at.attr(a);
    // Placeholders not replaced by user nodes become names no user code can spell.
    if (nb::hasattr(n, "id") && str_attr(n, "id").size() == 2 && str_attr(n, "id")[0] == '_')
      n.attr("id") = nb::str(("$" + str_attr(n, "id").substr(1)).c_str());
  }
}
}  // namespace

// A list comprehension (or tuple(generator)) as a loop; a tuple is made from the list.
NodePtr Parser::comprehension_loop(Block* b, nb::handle e, Prim p) {
  NodePtr lst = comprehension_loop(b, e, "<listcomp>");
  if (p == Prim::kMakeList) return lst;
  NodePtr t =
      prim(b, Prim::kUnpackCall, {constant(ir::prim_value(Prim::kMakeTuple)), lst}, loc_of(e));
  seq_nodes.insert(t.get());
  return t;
}

// dict(pairs) with pairs a zip/enumerate call, a literal or a comprehension of (key, value)
// pairs: {k: v for k, v in pairs}. Null for any other argument (a dict: Python's dict(d)).
NodePtr Parser::dict_of_pairs(Block* b, nb::handle arg) {
  const std::string t = ast_type(arg);
  bool pairs = t == "Tuple" || t == "List" || t == "ListComp" || t == "GeneratorExp";
  if (t == "Call" && ast_type(arg.attr("func")) == "Name") {
    const std::string f = str_attr(arg.attr("func"), "id");
    pairs = f == "zip" || f == "enumerate";
  }
  if (!pairs) return nullptr;
  nb::object comp = ast_.attr("parse")("{_k: _v for _k, _v in _i}", "<dict>", "eval").attr("body");
  place(ast_, comp, arg);
  comp.attr("generators")[0].attr("iter") = arg;
  return comprehension_loop(b, comp, "<dictcomp>");
}

// The comprehension e (ListComp, GeneratorExp, DictComp) as Python runs it: a nested function
// `def <listcomp>(): $r = []; for t in seq: [if c:] ... $r.append(elt); return $r`, called here.
// The iterables are read inside the function (Python reads the first one outside; they differ
// only when a target name shadows a name the first iterable reads, which is refused).
NodePtr Parser::comprehension_loop(Block* b, nb::handle e, const char* name) {
  const bool is_dict = ast_type(e) == "DictComp";
  nb::handle gens = e.attr("generators");
  std::vector<std::string> targets, read;
  for (nb::handle g : gens) target_names(g.attr("target"), targets);
  for (nb::handle n : ast_.attr("walk")(gens[0].attr("iter")))
    if (ast_type(n) == "Name") read.push_back(str_attr(n, "id"));
  for (const std::string& t : targets)
    if (std::find(read.begin(), read.end(), t) != read.end())
      unsupported(e, "a comprehension whose variable '" + t + "' shadows a name its sequence reads",
                  "rename the comprehension's variable");
  nb::object def = ast_.attr("parse")(is_dict ? kDictLoop : kListLoop).attr("body")[0];
  place(ast_, def, e);
  def.attr("name") = name;
  nb::object loop = def.attr("body")[1];
  nb::object inner = loop.attr("body")[0];
  if (is_dict) {
    inner.attr("targets")[0].attr("slice") = e.attr("key");
    inner.attr("value") = e.attr("value");
  } else {
    inner.attr("value").attr("args")[0] = e.attr("elt");
  }
  // Innermost first: each `for` clause wraps the statement in its filters, then in its loop.
  nb::object stmt = inner;
  for (size_t k = len_of(gens); k-- > 0;) {
    nb::handle g = gens[k];
    nb::list ifs = nb::cast<nb::list>(g.attr("ifs"));
    for (size_t j = len_of(ifs); j-- > 0;) {
      nb::object s = ast_.attr("If")(ast_.attr("Constant")(true), nb::list(), nb::list());
      place(ast_, s, ifs[j]);  // placed before the user's nodes go in: theirs stay
      s.attr("test") = ifs[j];
      nb::list body;
      body.append(stmt);
      s.attr("body") = body;
      stmt = s;
    }
    nb::object l = loop;
    if (k) {
      l = ast_.attr("For")(ast_.attr("Constant")(0), ast_.attr("Constant")(0), nb::list(),
                           nb::list());
      place(ast_, l, e);
    }
    l.attr("target") = g.attr("target");
    l.attr("iter") = g.attr("iter");
    nb::list body;
    body.append(stmt);
    l.attr("body") = body;
    stmt = l;
  }
  def.attr("body")[1] = stmt;
  SourceLoc loc = loc_of(e);
  NodePtr fn = nested_def(b, def, false);
  b->vars.erase(name);  // nested_def binds the name (for recursion); a comprehension has none
  NodePtr r = call_value(b, fn, {}, {}, loc);
  (is_dict ? dict_nodes : seq_nodes).insert(r.get());
  return r;
}

}  // namespace mycel::frontend
