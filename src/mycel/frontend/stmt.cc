// Statements: assignment (tuple unpacking, starred, augmented), expression statements, return,
// nested defs; control statements dispatch to control.cc, raise/assert/del to checks.cc;
// everything else is a located SyntaxError.
#include <functional>
#include <unordered_set>

#include "mycel/frontend/parser.h"

namespace mycel::frontend {

Block* Parser::stmts(Block* b, nb::handle body) {
  for (nb::handle s : body) {
    if (!b) break;  // code after return/break/continue is unreachable
    b = stmt(b, s);
  }
  return b;
}

namespace {
const std::map<std::string, std::pair<std::string, std::string>>& unsupported_statements() {
  static const std::map<std::string, std::pair<std::string, std::string>> m = {
      {"Try", {"try", "check the condition with an `if`, or move the try/except outside the Cell"}},
      {"TryStar", {"try", "move the try/except outside the Cell"}},
      {"With", {"with", "move the `with` block outside the Cell's construct"}},
      {"AsyncWith", {"async with", "use plain synchronous code"}},
      {"AsyncFor", {"async for", "use a plain `for` loop"}},
      {"AsyncFunctionDef", {"async def", "use a plain `def`"}},
      {"Global", {"global", "pass the value as an argument or store it on self"}},
      {"Nonlocal", {"nonlocal", "return the new value from the nested function instead"}},
      {"Import", {"import", "import at module level, outside the function"}},
      {"ImportFrom", {"import", "import at module level, outside the function"}},
      {"ClassDef", {"class", "define the class at module level"}},
      {"Match", {"match", "use if/elif/else"}},
  };
  return m;
}
}  // namespace

Block* Parser::stmt(Block* b, nb::handle s) {
  const std::string t = ast_type(s);
  SourceLoc loc = loc_of(s);
  if (t == "Expr") {
    nb::handle v = s.attr("value");
    if (ast_type(v) == "Constant") return b;  // docstrings
    NodePtr n = expr(b, v);
    if (n->is_apply()) add_effect(b, n);  // keep calls made for their effect (print)
    return b;
  }
  if (t == "Assign") {
    NodePtr v = expr(b, s.attr("value"));
    if (has_effects(v)) add_effect(b, v);  // kept even when the value goes unused
    for (nb::handle target : s.attr("targets")) assign(b, target, v);
    return b;
  }
  if (t == "AnnAssign") {
    if (s.attr("value").is_none()) return b;
    NodePtr v = expr(b, s.attr("value"));
    if (has_effects(v)) add_effect(b, v);
    assign(b, s.attr("target"), v);
    return b;
  }
  if (t == "AugAssign") {
    nb::handle target = s.attr("target");
    if (ast_type(target) != "Name") {  // x[i] += v, self.w -= v: read, compute, assign
      NodePtr r = binop(b, ast_type(s.attr("op")), expr(b, target), expr(b, s.attr("value")), loc);
      assign(b, target, r);
      return b;
    }
    std::string name = str_attr(target, "id");
    NodePtr cur = read(b, name, loc);
    NodePtr r = binop(b, ast_type(s.attr("op")), cur, expr(b, s.attr("value")), loc);
    if (r->is_apply() && r->debug_name().empty()) r->set_debug_name(name);
    write(b, name, r);
    return b;
  }
  if (t == "Return") {
    nb::handle v = s.attr("value");
    if (b->scope->record_class.is_valid()) {  // the __init__ of a record returns the record
      if (!v.is_none() && !ir::as_constant(expr(b, v)))
        error(loc_of(s), "TypeError", "__init__() should return None");
      finish(b, record_value(b, loc_of(s)));
      return nullptr;
    }
    NodePtr out = v.is_none() ? constant(ir::none()) : expr(b, v);
    if (Block* entry = b->scope->entry_block; entry && b->g == entry->g)
      if (auto i = assigned_param(entry->g, out)) returns_assigned_param_[entry->g] = *i;
    if (b->scope->output_dtype.is_valid())
      out = cast_float(b, out, b->scope->output_dtype, loc_of(s));
    if (b->scope->output_strategy.is_valid())
      out = hint_outputs(b, out, b->scope->output_strategy, loc_of(s));
    finish(b, out);
    return nullptr;
  }
  if (t == "Pass") return b;
  if (t == "If") return if_stmt(b, s);
  if (t == "While") return while_stmt(b, s);
  if (t == "For") return for_stmt(b, s);
  if (t == "Raise") return raise_stmt(b, s);
  if (t == "Assert") return assert_stmt(b, s);
  if (t == "Delete") {
    for (nb::handle target : s.attr("targets")) del_target(b, target);
    return b;
  }
  if (t == "Break") return loop_jump(b, s, true);
  if (t == "Continue") return loop_jump(b, s, false);
  if (t == "FunctionDef") {
    write(b, str_attr(s, "name"), nested_def(b, s, false));
    return b;
  }
  auto it = unsupported_statements().find(t);
  if (it != unsupported_statements().end()) unsupported(s, it->second.first, it->second.second);
  unsupported(s, t, "rewrite it with assignments, if/while/for and function calls");
}

void Parser::assign(Block* b, nb::handle target, NodePtr v) {
  const std::string t = ast_type(target);
  SourceLoc loc = loc_of(target);
  if (t == "Name") {
    std::string name = str_attr(target, "id");
    if (v->is_apply() && v->debug_name().empty() && v->graph() == b->g) v->set_debug_name(name);
    if (dict_nodes.count(v.get())) b->scope->dict_vars.insert(name);
    write(b, name, v);
    return;
  }
  if (t == "Tuple" || t == "List") {
    nb::handle elts = target.attr("elts");
    size_t n = len_of(elts);
    for (size_t i = 0; i < n; ++i)
      if (ast_type(elts[i]) == "Starred") return assign_starred(b, target, v, i);
    // Unpacking a tuple built right here uses its items directly (a, b = b, a).
    bool literal = ir::is_prim_call(v, Prim::kMakeTuple) || ir::is_prim_call(v, Prim::kMakeList);
    std::vector<NodePtr> items;
    for (size_t i = 0; i < n; ++i) {
      if (literal) {
        auto* a = ir::as_apply(v);
        if (a->num_args() > n)
          error(loc, "ValueError",
                "too many values to unpack (expected " + std::to_string(n) + ")");
        if (a->num_args() < n)
          error(loc, "ValueError",
                "not enough values to unpack (expected " + std::to_string(n) + ", got " +
                    std::to_string(a->num_args()) + ")");
        items.push_back(a->arg(i));
      } else {
        NodePtr item =
            prim(b, Prim::kTupleGetItem, {v, constant(ir::integer(static_cast<int64_t>(i)))}, loc);
        if (shape_nodes.count(v.get())) scalar_nodes.insert(item.get());
        items.push_back(item);
      }
    }
    for (size_t i = 0; i < n; ++i) assign(b, elts[i], items[i]);
    return;
  }
  if (t == "Attribute") return assign_attribute(b, target, v);
  if (t == "Subscript") return assign_item(b, target, v);
  if (t == "Starred")
    unsupported(target, "a starred assignment target outside a tuple", "write `a, *rest = t`");
  unsupported(target, "assignment to " + t, "assign to a name or a tuple of names");
}

// a, *rest, b = v: the names before and after the star take single items, the starred name a
// list of the middle (Python's rule). A sequence built here is split now; otherwise its length
// is known at analysis: starred_end checks it as Python does and gives where the middle ends.
void Parser::assign_starred(Block* b, nb::handle target, NodePtr v, size_t star) {
  SourceLoc loc = loc_of(target);
  nb::handle elts = target.attr("elts");
  const size_t n = len_of(elts), after = n - star - 1;
  auto ci = [&](int64_t k) { return constant(ir::integer(k)); };
  std::vector<NodePtr> items;
  bool known = true;
  if (ir::is_prim_call(v, Prim::kMakeTuple) || ir::is_prim_call(v, Prim::kMakeList)) {
    auto* a = ir::as_apply(v);
    items.assign(a->inputs().begin() + 1, a->inputs().end());
  } else if (ir::Constant* c = ir::as_constant(v);
             c && (c->value()->kind() == ir::ValueKind::kTuple ||
                   c->value()->kind() == ir::ValueKind::kList)) {
    for (const auto& x : static_cast<const ir::SequenceValue&>(*c->value()).items())
      items.push_back(constant(x));
  } else {
    known = false;
  }
  if (known) {
    const size_t m = items.size();
    if (m < n - 1)
      error(loc, "ValueError",
            "not enough values to unpack (expected at least " + std::to_string(n - 1) + ", got " +
                std::to_string(m) + ")");
    for (size_t i = 0; i < star; ++i) assign(b, elts[i], items[i]);
    assign(b, elts[star].attr("value"),
           sequence(b, Prim::kMakeList,
                    std::vector<NodePtr>(items.begin() + star, items.end() - after), loc));
    for (size_t j = 0; j < after; ++j) assign(b, elts[star + 1 + j], items[m - after + j]);
    return;
  }
  static nb::handle starred_end =
      nb::object(nb::module_::import_("mycel.common.graph_syntax").attr("starred_end")).release();
  NodePtr len = prim(b, Prim::kTupleLen, {v}, loc);
  NodePtr end = apply(b,
                      {constant(py_object(starred_end)), len, ci(static_cast<int64_t>(star)),
                       ci(static_cast<int64_t>(after))},
                      loc);
  scalar_nodes.insert(end.get());
  NodePtr checked = prim(b, Prim::kDepend, {v, end}, loc);  // every item waits for the check
  auto item = [&](NodePtr i) {
    NodePtr r = prim(b, Prim::kTupleGetItem, {checked, std::move(i)}, loc);
    if (shape_nodes.count(v.get())) scalar_nodes.insert(r.get());
    return r;
  };
  for (size_t i = 0; i < star; ++i) assign(b, elts[i], item(ci(static_cast<int64_t>(i))));
  // The middle: v[star:end] (a tuple slice, or rows of a tensor) made a list.
  NodePtr mid =
      op_by_name(b, "strided_slice",
                 {checked, sequence(b, Prim::kMakeTuple, {ci(static_cast<int64_t>(star))}, loc),
                  sequence(b, Prim::kMakeTuple, {end}, loc),
                  sequence(b, Prim::kMakeTuple, {ci(1)}, loc), ci(0), ci(0), ci(0), ci(0), ci(0)},
                 {}, loc);
  NodePtr rest = prim(b, Prim::kUnpackCall, {constant(ir::prim_value(Prim::kMakeList)), mid}, loc);
  seq_nodes.insert(rest.get());
  assign(b, elts[star].attr("value"), rest);
  for (size_t j = 0; j < after; ++j)
    assign(b, elts[star + 1 + j],
           item(prim(b, Prim::kScalarAdd, {end, ci(static_cast<int64_t>(j))}, loc)));
}

void Parser::add_kwarg_param(Block* entry, Signature& sig, nb::handle kwarg) {
  std::string name = str_attr(kwarg, "arg");
  NodePtr p = entry->g->add_parameter(name);
  p->set_loc(loc_of(kwarg));
  dict_nodes.insert(p.get());
  entry->scope->dict_vars.insert(name);
  entry->scope->locals.insert(name);
  write(entry, name, p);
  sig.kwarg = static_cast<int>(sig.names.size());
  sig.names.push_back(name);
  sig.defaults.push_back(nullptr);
}

// A def or lambda inside parsed code: a graph nested in the current block, so it reads the
// enclosing function's variables as free variables (closures).
NodePtr Parser::nested_def(Block* b, nb::handle def, bool is_lambda) {
  SourceLoc loc = loc_of(def);
  if (!is_lambda && len_of(def.attr("decorator_list")) > 0)
    unsupported(def.attr("decorator_list")[0], "a decorator on a nested function",
                "define the function without a decorator");
  nb::handle args = def.attr("args");
  if (len_of(args.attr("posonlyargs")) > 0)
    unsupported(def, "positional-only parameters", "drop the `/`");
  Scope* outer = b->scope;
  auto sc = std::make_unique<Scope>();
  sc->outer = outer;
  sc->def_block = b;
  sc->globals = outer->globals;
  sc->closure = outer->closure;
  sc->src = outer->src;
  sc->name = is_lambda ? std::string("lambda") : str_attr(def, "name");
  Scope* s = sc.get();
  scopes_.push_back(std::move(sc));

  Signature sig;
  std::vector<nb::handle> params;
  for (nb::handle a : args.attr("args")) params.push_back(a);
  sig.n_positional = params.size();
  if (!args.attr("vararg").is_none()) {
    sig.vararg = static_cast<int>(params.size());
    params.push_back(args.attr("vararg"));
  }
  for (nb::handle a : args.attr("kwonlyargs")) params.push_back(a);
  for (nb::handle a : params) sig.names.push_back(str_attr(a, "arg"));
  sig.defaults.assign(params.size(), nullptr);
  nb::handle defs = args.attr("defaults");
  size_t nd = len_of(defs);
  for (size_t i = 0; i < nd; ++i) sig.defaults[sig.n_positional - nd + i] = expr(b, defs[i]);
  nb::handle kwd = args.attr("kw_defaults");
  size_t first_kw = params.size() - len_of(kwd);
  for (size_t i = 0; i < len_of(kwd); ++i)
    if (!kwd[i].is_none()) sig.defaults[first_kw + i] = expr(b, kwd[i]);

  Block* entry = new_block(s, b, Block::kFunction, s->name);
  for (size_t i = 0; i < params.size(); ++i) {
    NodePtr p = entry->g->add_parameter(sig.names[i]);
    p->set_loc(loc_of(params[i]));
    if (static_cast<int>(i) == sig.vararg) seq_nodes.insert(p.get());
    write(entry, sig.names[i], p);
    s->locals.insert(sig.names[i]);
  }
  if (!args.attr("kwarg").is_none()) add_kwarg_param(entry, sig, args.attr("kwarg"));
  signatures[entry->g] = sig;
  set_analysis_binding(entry->g, sig);  // calls through a variable (F.partial's)
  NodePtr self_ref = constant(ir::graph_value(entry->g));
  if (!is_lambda) write(b, s->name, self_ref);  // recursion inside the nested function
  if (is_lambda) {
    finish(entry, expr(entry, def.attr("body")));
  } else {
    nb::handle body = def.attr("body");
    collect_locals(ast_, body, s->locals);
    collect_locals(ast_, body, s->assigned);
    s->entry_block = entry;
    Scope* saved = current_scope;
    current_scope = s;
    Block* end = stmts(entry, body);
    current_scope = saved;
    if (end) finish(end, constant(ir::none()));
  }
  return self_ref;
}

}  // namespace mycel::frontend

namespace mycel::frontend {

bool Parser::has_effects(const NodePtr& n) {
  std::unordered_set<const FuncGraph*> seen;
  std::function<bool(const NodePtr&)> node_effects;
  std::function<bool(const FuncGraph*)> graph_effects = [&](const FuncGraph* g) {
    if (!g || !seen.insert(g).second) return false;
    if (g->output() && node_effects(g->output())) return true;
    for (const NodePtr& a : g->toposort())
      if (node_effects(a)) return true;
    for (const FuncGraph* k : g->used_graphs())
      if (graph_effects(k)) return true;
    return false;
  };
  node_effects = [&](const NodePtr& x) {
    auto* a = ir::as_apply(x);
    if (!a) return false;
    if (ir::is_prim_call(x, Prim::kAssign) || ir::is_prim_call(x, Prim::kPrint) ||
        ir::is_prim_call(x, Prim::kRaise))
      return true;
    if (ir::Constant* c = ir::as_constant(a->callee());  // a collective: every rank must run it
        c && c->value()->kind() == ir::ValueKind::kOp &&
        static_cast<const ir::OpValue&>(*c->value()).op().effect)
      return true;
    for (const NodePtr& in : a->inputs())
      if (FuncGraph* g = ir::constant_graph(in); g && graph_effects(g)) return true;
    return false;
  };
  if (!n || !n->is_apply()) return false;
  if (ir::is_prim_call(n, Prim::kDepend)) return true;  // ops.depend(value, effect)
  return node_effects(n);
}

}  // namespace mycel::frontend
