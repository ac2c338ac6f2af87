// Expressions: names, constants, literals, operators (registry ops for tensors, scalar prims for
// values known to be Python scalars), short-circuit and/or and conditional expressions (switch),
// attributes and subscripts.
#include <functional>

#include "mycel/frontend/parser.h"

namespace mycel::frontend {

NodePtr Parser::constant(ir::ValuePtr v) {
  NodePtr c = std::make_shared<ir::Constant>(nullptr, std::move(v));
  keep_nodes_.push_back(c);  // the node sets below hold raw pointers: no address may be reused
  auto k = static_cast<const ir::Constant*>(c.get())->value()->kind();
  if (k == ir::ValueKind::kInt || k == ir::ValueKind::kFloat || k == ir::ValueKind::kBool ||
      k == ir::ValueKind::kStr)  // Python values: == and + on two of them are Python's
    scalar_nodes.insert(c.get());
  if (k == ir::ValueKind::kTuple || k == ir::ValueKind::kList) seq_nodes.insert(c.get());
  if (k == ir::ValueKind::kDict) dict_nodes.insert(c.get());
  return c;
}

NodePtr Parser::apply(Block* b, std::vector<NodePtr> in, const SourceLoc& loc) {
  NodePtr a = b->g->apply(std::move(in), loc);
  applies_.push_back(a);
  return a;
}

namespace {
// The Python operator a scalar prim stands for, for folding it at parse time, or null.
const char* python_operator(Prim p) {
  switch (p) {
    case Prim::kScalarAdd:
      return "add";
    case Prim::kScalarSub:
      return "sub";
    case Prim::kScalarMul:
      return "mul";
    case Prim::kScalarDiv:
      return "truediv";
    case Prim::kScalarFloorDiv:
      return "floordiv";
    case Prim::kScalarMod:
      return "mod";
    case Prim::kScalarPow:
      return "pow";
    case Prim::kScalarNeg:
      return "neg";
    case Prim::kScalarEq:
      return "eq";
    case Prim::kScalarNe:
      return "ne";
    case Prim::kScalarLt:
      return "lt";
    case Prim::kScalarLe:
      return "le";
    case Prim::kScalarGt:
      return "gt";
    case Prim::kScalarGe:
      return "ge";
    case Prim::kScalarNot:
      return "not_";
    case Prim::kIs:
      return "is_";
    case Prim::kIsNot:
      return "is_not";
    default:
      return nullptr;
  }
}

// Whether a constant is a plain Python value (None, bool, int, float, str) whose operators have
// no side effects; `is` and `is not` also compare any object (Cells, functions) by identity.
bool plain_constant(const NodePtr& n, Prim p) {
  ir::Constant* c = ir::as_constant(n);
  if (!c) return false;
  switch (c->value()->kind()) {
    case ir::ValueKind::kNone:
    case ir::ValueKind::kBool:
    case ir::ValueKind::kInt:
    case ir::ValueKind::kFloat:
    case ir::ValueKind::kStr:
      return true;
    case ir::ValueKind::kExternal:
      return p == Prim::kIs || p == Prim::kIsNot;
    default:
      return false;
  }
}
}  // namespace

// Scalar prims whose operands are all constants fold now, as Python evaluates them, so that a
// branch on `self.stride > 1` or `self.act is not None` is decided at parse time and the branch
// not taken is never resolved (it may name attributes that exist only when it is taken).
NodePtr Parser::fold_scalar(Block* b, Prim p, const std::vector<NodePtr>& args,
                            const SourceLoc& loc) {
  const char* name = python_operator(p);
  if (!name) return nullptr;
  nb::list vals;
  for (const NodePtr& a : args) {
    if (!plain_constant(a, p)) return nullptr;
    vals.append(to_python(a));
  }
  static nb::handle op_module = nb::module_::import_("operator").release();
  try {
    return object_node(b, op_module.attr(name)(*nb::tuple(vals)), loc);
  } catch (nb::python_error&) {  // 1 // 0: left to analysis, which reports it with its location
    return nullptr;
  }
}

NodePtr Parser::prim(Block* b, Prim p, std::vector<NodePtr> args, const SourceLoc& loc) {
  if (NodePtr folded = fold_scalar(b, p, args, loc)) return folded;
  args.insert(args.begin(), constant(ir::prim_value(p)));
  NodePtr n = apply(b, std::move(args), loc);
  switch (p) {
    case Prim::kMakeTuple:
    case Prim::kMakeList:
      seq_nodes.insert(n.get());
      break;
    case Prim::kShape:
      seq_nodes.insert(n.get());
      shape_nodes.insert(n.get());
      break;
    case Prim::kMakeDict:
    case Prim::kDictSetItem:
      dict_nodes.insert(n.get());
      break;
    case Prim::kDictKeys:
    case Prim::kDictValues:
    case Prim::kDictItems:
      seq_nodes.insert(n.get());
      break;
    case Prim::kTupleLen:
    case Prim::kRank:
    case Prim::kScalarAdd:
    case Prim::kScalarSub:
    case Prim::kScalarMul:
    case Prim::kScalarDiv:
    case Prim::kScalarFloorDiv:
    case Prim::kScalarMod:
    case Prim::kScalarPow:
    case Prim::kScalarNeg:
    case Prim::kScalarEq:
    case Prim::kScalarNe:
    case Prim::kScalarLt:
    case Prim::kScalarLe:
    case Prim::kScalarGt:
    case Prim::kScalarGe:
    case Prim::kScalarNot:
    case Prim::kIs:
    case Prim::kIsNot:
      scalar_nodes.insert(n.get());
      break;
    default:
      break;
  }
  return n;
}

bool Parser::is_scalar(const NodePtr& n) const { return scalar_nodes.count(n.get()) > 0; }
bool Parser::is_sequence(const NodePtr& n) const { return seq_nodes.count(n.get()) > 0; }

NodePtr Parser::make_dict(Block* b, std::vector<ir::ValuePtr> keys, std::vector<NodePtr> values,
                          const SourceLoc& loc) {
  return prim(
      b, Prim::kMakeDict,
      {constant(ir::tuple(std::move(keys))), prim(b, Prim::kMakeTuple, std::move(values), loc)},
      loc);
}

NodePtr Parser::sequence(Block* b, Prim p, std::vector<NodePtr> items, const SourceLoc& loc) {
  // A literal made only of constants is one constant ((2, 3) as a reshape shape stays readable).
  bool all_const = true;
  std::vector<ir::ValuePtr> vals;
  for (const NodePtr& n : items) {
    ir::Constant* c = ir::as_constant(n);
    // Graphs stay visible as node inputs (used_graphs, garbage collection do not look in tuples).
    if (!c || c->value()->kind() == ir::ValueKind::kExternal ||
        c->value()->kind() == ir::ValueKind::kGraph) {
      all_const = false;
      break;
    }
    vals.push_back(c->value());
  }
  if (all_const && p != Prim::kMakeDict)
    return constant(p == Prim::kMakeList ? ir::list(std::move(vals)) : ir::tuple(std::move(vals)));
  return prim(b, p, std::move(items), loc);
}

namespace {
struct BinOpInfo {
  const char* op;
  Prim scalar;
  bool has_scalar;
};
const std::map<std::string, BinOpInfo>& binops() {
  static const std::map<std::string, BinOpInfo> m = {
      {"Add", {"add", Prim::kScalarAdd, true}},
      {"Sub", {"sub", Prim::kScalarSub, true}},
      {"Mult", {"mul", Prim::kScalarMul, true}},
      {"Div", {"div", Prim::kScalarDiv, true}},
      {"FloorDiv", {"floor_div", Prim::kScalarFloorDiv, true}},
      {"Mod", {"mod", Prim::kScalarMod, true}},
      {"Pow", {"pow", Prim::kScalarPow, true}},
      {"MatMult", {"matmul", Prim::kScalarAdd, false}},
      // &, |, ^ and ~ as MindSpore's Tensor: bitwise on integers, logical on bools.
      {"BitAnd", {"bitwise_and", Prim::kScalarAdd, false}},
      {"BitOr", {"bitwise_or", Prim::kScalarAdd, false}},
      {"BitXor", {"bitwise_xor", Prim::kScalarAdd, false}},
      {"Eq", {"equal", Prim::kScalarEq, true}},
      {"NotEq", {"not_equal", Prim::kScalarNe, true}},
      {"Lt", {"less", Prim::kScalarLt, true}},
      {"LtE", {"less_equal", Prim::kScalarLe, true}},
      {"Gt", {"greater", Prim::kScalarGt, true}},
      {"GtE", {"greater_equal", Prim::kScalarGe, true}},
  };
  return m;
}
}  // namespace

// Operands both known to be Python scalars use scalar prims; anything else uses the registry op
// eager mode's Tensor operator calls (analysis turns an op on two scalars into scalar math).
NodePtr Parser::binop(Block* b, const std::string& op, NodePtr l, NodePtr r, const SourceLoc& loc) {
  auto it = binops().find(op);
  if (it == binops().end())
    error(loc, "SyntaxError", "operator '" + op + "' is not supported in graph mode");
  auto is_str = [](const NodePtr& n) {
    ir::Constant* c = ir::as_constant(n);
    return c && c->value()->kind() == ir::ValueKind::kStr;
  };
  // A str operand makes it Python's operator (k == "b" with k a loop variable over dict keys).
  if (it->second.has_scalar && ((is_scalar(l) && is_scalar(r)) || is_str(l) || is_str(r)))
    return prim(b, it->second.scalar, {l, r}, loc);
  return op_by_name(b, it->second.op, {l, r}, {}, loc);
}

NodePtr Parser::compare(Block* b, nb::handle e) {
  SourceLoc loc = loc_of(e);
  nb::handle ops = e.attr("ops"), comps = e.attr("comparators");
  const size_t n = len_of(ops);
  auto one = [&](Block* blk, NodePtr l, NodePtr r, size_t i) -> NodePtr {
    std::string op = ast_type(ops[i]);
    if (op == "Is" || op == "IsNot")
      return prim(blk, op == "Is" ? Prim::kIs : Prim::kIsNot, {l, r}, loc);
    if (op == "In" || op == "NotIn") {
      if (dict_nodes.count(r.get()))
        r = prim(blk, Prim::kDictKeys, {r}, loc);  // k in d: a key test
      NodePtr c = constant(py_object(nb::module_::import_("operator").attr("contains")));
      NodePtr in = apply(blk, {c, r, l}, loc);
      return op == "In" ? in : prim(blk, Prim::kScalarNot, {in}, loc);
    }
    return binop(blk, op, l, r, loc);
  };
  // a < b < c is (a < b) and (b < c) with b evaluated once: each later comparison (and its
  // operand) lives in the branch taken when the one before holds, as the `and` lowering does.
  std::function<NodePtr(Block*, NodePtr, size_t)> chain = [&](Block* blk, NodePtr l, size_t i) {
    NodePtr r = expr(blk, comps[i]);
    NodePtr c = one(blk, l, r, i);
    if (i + 1 == n) return c;
    if (int truth = constant_truth(c); truth >= 0)  // decided at parse time: no switch
      return truth ? chain(blk, r, i + 1) : c;
    Block* rest = new_block(blk->scope, blk, Block::kSwitch, blk->scope->name + "_and");
    Block* keep = new_block(blk->scope, blk, Block::kSwitch, blk->scope->name + "_keep");
    finish(rest, chain(rest, r, i + 1));
    finish(keep, c);
    return switch_call(blk, c, rest, keep, loc);
  };
  return chain(b, expr(b, e.attr("left")), 0);
}

NodePtr Parser::boolop(Block* b, nb::handle e) {
  SourceLoc loc = loc_of(e);
  bool is_and = ast_type(e.attr("op")) == "And";
  nb::handle values = e.attr("values");
  NodePtr acc = expr(b, values[0]);
  for (size_t i = 1; i < len_of(values); ++i) {
    // Known at parse time: Python's short circuit now, and the operand not reached is not parsed.
    if (int truth = constant_truth(acc); truth >= 0) {
      if (truth != is_and) return acc;
      acc = expr(b, values[i]);
      continue;
    }
    // and: switch(a, @rest, @keep_a)();  or: switch(a, @keep_a, @rest)().
    Block* rest =
        new_block(b->scope, b, Block::kSwitch, b->scope->name + (is_and ? "_and" : "_or"));
    Block* keep = new_block(b->scope, b, Block::kSwitch, b->scope->name + "_keep");
    finish(rest, expr(rest, values[i]));
    finish(keep, acc);
    acc = is_and ? switch_call(b, acc, rest, keep, loc) : switch_call(b, acc, keep, rest, loc);
  }
  return acc;
}

NodePtr Parser::ifexp(Block* b, nb::handle e) {
  SourceLoc loc = loc_of(e);
  NodePtr c = expr(b, e.attr("test"));
  if (int truth = constant_truth(c); truth >= 0)
    return expr(b, truth ? e.attr("body") : e.attr("orelse"));
  Block* t = new_block(b->scope, b, Block::kSwitch, b->scope->name + "_true");
  Block* f = new_block(b->scope, b, Block::kSwitch, b->scope->name + "_false");
  finish(t, expr(t, e.attr("body")));
  finish(f, expr(f, e.attr("orelse")));
  return switch_call(b, c, t, f, loc);
}

NodePtr Parser::expr(Block* b, nb::handle e) {
  const std::string t = ast_type(e);
  SourceLoc loc = loc_of(e);
  if (t == "Name") {
    std::string name = str_attr(e, "id");
    NodePtr n = read(b, name, loc);
    // A name bound to a dict in this function stays one through branches and loops (phis).
    if (b->scope->dict_vars.count(name)) dict_nodes.insert(n.get());
    if (b->scope->list_vars.count(name)) seq_nodes.insert(n.get());
    return n;
  }
  if (t == "Constant") {
    nb::handle v = e.attr("value");
    if (v.ptr() == Py_Ellipsis) return constant(py_object(v));
    if (PyBytes_Check(v.ptr()) || PyComplex_Check(v.ptr()))
      unsupported(e, "a bytes or complex literal", "use a str, int or float");
    return object_node(b, v, loc);
  }
  if (t == "BinOp")
    return binop(b, ast_type(e.attr("op")), expr(b, e.attr("left")), expr(b, e.attr("right")), loc);
  if (t == "UnaryOp") {
    std::string op = ast_type(e.attr("op"));
    NodePtr v = expr(b, e.attr("operand"));
    if (op == "UAdd") return v;
    if (op == "Not") return prim(b, Prim::kScalarNot, {v}, loc);
    if (ir::Constant* c = ir::as_constant(v); op == "USub" && c) {  // -1, -0.5: literals
      if (c->value()->kind() == ir::ValueKind::kInt)
        return constant(ir::integer(-static_cast<const ir::IntValue&>(*c->value()).value()));
      if (c->value()->kind() == ir::ValueKind::kFloat)
        return constant(ir::floating(-static_cast<const ir::FloatValue&>(*c->value()).value()));
    }
    if (op == "USub")
      return is_scalar(v) ? prim(b, Prim::kScalarNeg, {v}, loc)
                          : op_by_name(b, "neg", {v}, {}, loc);
    return op_by_name(b, "invert", {v}, {}, loc);  // ~x, as Tensor.__invert__
  }
  if (t == "BoolOp") return boolop(b, e);
  if (t == "Compare") return compare(b, e);
  if (t == "IfExp") return ifexp(b, e);
  if (t == "Call") return call(b, e);
  if (t == "Attribute") {
    nb::handle v = e.attr("value");
    if (!b->scope->record_self.empty() && ast_type(v) == "Name" &&
        str_attr(v, "id") == b->scope->record_self)  // self.f inside a record's __init__
      return read(b, b->scope->record_self + "." + str_attr(e, "attr"), loc);
    return attribute(b, expr(b, v), str_attr(e, "attr"), loc);
  }
  if (t == "Subscript") return subscript(b, e);
  if (t == "Lambda") return nested_def(b, e, true);
  if (t == "Tuple" || t == "List") {
    std::vector<NodePtr> items;
    for (nb::handle x : e.attr("elts")) {
      if (ast_type(x) == "Starred")
        unsupported(x, "*unpacking in a literal", "concatenate tuples with +");
      items.push_back(expr(b, x));
    }
    return sequence(b, t == "Tuple" ? Prim::kMakeTuple : Prim::kMakeList, std::move(items), loc);
  }
  if (t == "Dict") {
    std::vector<ir::ValuePtr> keys;
    std::vector<NodePtr> values;
    nb::handle ks = e.attr("keys"), vs = e.attr("values");
    for (size_t i = 0; i < len_of(ks); ++i) {
      if (ks[i].is_none()) unsupported(vs[i], "**unpacking in a dict", "list the keys explicitly");
      ir::Constant* k = ir::as_constant(expr(b, ks[i]));
      if (!k)
        unsupported(ks[i], "a dict key that is not a constant", "use str or int literals as keys");
      keys.push_back(k->value());
      values.push_back(expr(b, vs[i]));
    }
    return make_dict(b, std::move(keys), std::move(values), loc);
  }
  if (t == "ListComp") return comprehension(b, e, Prim::kMakeList);
  if (t == "GeneratorExp") unsupported(e, "generator expression", "use a for loop");
  if (t == "SetComp" || t == "Set") unsupported(e, "set", "use a tuple");
  if (t == "DictComp") return comprehension_loop(b, e, "<dictcomp>");
  if (t == "JoinedStr") return fstring(b, e);
  if (t == "NamedExpr") unsupported(e, "':=' (assignment expression)", "assign on its own line");
  if (t == "Yield" || t == "YieldFrom") unsupported(e, "yield", "return a tuple of the values");
  if (t == "Await") unsupported(e, "await", "use synchronous code");
  if (t == "Starred") unsupported(e, "*unpacking here", "pass the items explicitly");
  unsupported(e, t, "rewrite the expression with supported operations");
}

// f"a {x:>4}": format_fstring("a {:>4}", x), evaluated by analysis when x is a compile-time
// value. print() of an f-string with run-time values prints its pieces instead (fstring_parts).
NodePtr Parser::fstring(Block* b, nb::handle e) {
  SourceLoc loc = loc_of(e);
  std::string tmpl;
  std::vector<NodePtr> values, parts;
  auto escaped = [](const std::string& s) {
    std::string r;
    for (char c : s) {
      r += c;
      if (c == '{' || c == '}') r += c;
    }
    return r;
  };
  for (nb::handle v : e.attr("values")) {
    if (ast_type(v) == "Constant") {
      std::string text = nb::cast<std::string>(nb::str(v.attr("value")));
      tmpl += escaped(text);
      parts.push_back(constant(ir::string(text)));
      continue;
    }
    NodePtr x = expr(b, v.attr("value"));
    int conv = nb::cast<int>(v.attr("conversion"));
    std::string field = "{";
    if (conv >= 0) field += std::string("!") + static_cast<char>(conv);
    nb::handle spec = v.attr("format_spec");
    if (!spec.is_none()) {
      std::string sp;
      for (nb::handle sv : spec.attr("values")) {
        if (ast_type(sv) != "Constant")
          unsupported(sv, "a computed format spec in an f-string",
                      "write the spec literally ({x:.3f})");
        sp += nb::cast<std::string>(nb::str(sv.attr("value")));
      }
      field += ":" + sp;
    }
    tmpl += field + "}";
    values.push_back(x);
    parts.push_back(x);
  }
  static nb::handle fmt =
      nb::object(nb::module_::import_("mycel.common.graph_syntax").attr("format_fstring"))
          .release();
  std::vector<NodePtr> in{constant(py_object(fmt)), constant(ir::string(tmpl))};
  in.insert(in.end(), values.begin(), values.end());
  NodePtr r = apply(b, std::move(in), loc);
  fstring_parts[r.get()] = std::move(parts);
  scalar_nodes.insert(r.get());  // a str: == and + are Python's
  return r;
}

NodePtr Parser::attribute(Block* b, NodePtr base, const std::string& attr, const SourceLoc& loc) {
  if (const PyObjectValue* pv = py_object_of(base)) {  // a Python object: look it up now
    nb::object v;
    try {
      v = pv->object().attr(attr.c_str());
    } catch (nb::python_error& e) {
      error(loc, "AttributeError", "'" + pv->name() + "' has no attribute '" + attr + "'");
    }
    NodePtr n = object_node(b, v, loc);
    if (nb::isinstance(v, param_type_) && nb::isinstance(pv->object(), cell_type_)) {
      n = planned_cell_weight(b, pv->object(), attr, v, std::move(n), loc);
      n = cast_cell_weight(b, pv->object(), v, std::move(n), loc);
    }
    return n;
  }
  if (attr == "shape") return prim(b, Prim::kShape, {base}, loc);
  if (attr == "ndim") return prim(b, Prim::kRank, {base}, loc);
  if (attr == "dtype") return prim(b, Prim::kDTypeOf, {base}, loc);
  if (attr == "T") return op_by_name(b, "transpose", {base}, {}, loc);
  if (attr ==
      "size") {  // a tensor's: the product of its shape (a constant unless a dim is dynamic)
    NodePtr t = thunk(b, "size", [&](Block* tb) {
      return call_value(tb, library_graph("mycel.common.graph_syntax", "tensor_size", loc), {base},
                        {}, loc);
    });
    return value_attribute(b, base, attr, t, loc);
  }
  return value_attribute(b, base, attr, constant(ir::none()), loc);
}

}  // namespace mycel::frontend
