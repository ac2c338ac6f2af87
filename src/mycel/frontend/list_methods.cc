// Methods that change a local list: lst.append(v), extend(seq), insert(i, v), pop([i]). Graph
// values are immutable, so each rebinds the name to a new list (lst = lst + [v]). A list whose
// items are known here (a literal, []) grows at parse time; any other (a loop variable's phi)
// becomes list concatenation and slicing, resolved by analysis, which unrolls loops with
// compile-time trip counts. A list growing in a loop that stays a loop is a located error there.
#include "mycel/frontend/parser.h"

namespace mycel::frontend {

namespace {
// The items of a sequence known when parsing (make_list/make_tuple, a constant); false if not.
bool known_items(Parser& p, const NodePtr& n, std::vector<NodePtr>& out) {
  if (ir::is_prim_call(n, Prim::kMakeTuple) || ir::is_prim_call(n, Prim::kMakeList)) {
    auto* a = ir::as_apply(n);
    out.assign(a->inputs().begin() + 1, a->inputs().end());
    return true;
  }
  ir::Constant* c = ir::as_constant(n);
  if (!c ||
      (c->value()->kind() != ir::ValueKind::kTuple && c->value()->kind() != ir::ValueKind::kList))
    return false;
  out.clear();
  for (const auto& x : static_cast<const ir::SequenceValue&>(*c->value()).items())
    out.push_back(p.constant(x));
  return true;
}

bool const_int(const NodePtr& n, int64_t* v) {
  ir::Constant* c = ir::as_constant(n);
  if (!c || c->value()->kind() != ir::ValueKind::kInt) return false;
  *v = static_cast<const ir::IntValue&>(*c->value()).value();
  return true;
}
}  // namespace

bool Parser::is_list_method(const std::string& m) {
  return m == "append" || m == "extend" || m == "insert" || m == "pop";
}

NodePtr Parser::list_method(Block* b, nb::handle base, NodePtr lst, const std::string& m,
                            std::vector<NodePtr> args,
                            std::vector<std::pair<std::string, NodePtr>> kw, const SourceLoc& loc) {
  if (ast_type(base) != "Name")
    unsupported(base, "list." + m + " on an expression",
                "call it on a local variable (lst = []; lst." + m + "(...))");
  const std::string name = str_attr(base, "id");
  if (!b->scope->locals.count(name))
    unsupported(
        base, "list." + m + " on a list of an enclosing function or a global",
        "build the list in this function (graph values are immutable: the name is rebound)");
  // The caller's list would change eagerly; here only the name is rebound, so refuse rather
  // than silently differ.
  if (lst->is_parameter() && b->scope->entry_block && lst->graph() == b->scope->entry_block->g)
    unsupported(base, "list." + m + " on parameter '" + name + "' (the caller's list)",
                "build and return a new list instead (return " + name + " + [v])");
  if (!kw.empty()) error(loc, "TypeError", "list." + m + "() takes no keyword arguments");
  auto arity = [&](size_t lo, size_t hi) {
    if (args.size() >= lo && args.size() <= hi) return;
    error(loc, "TypeError",
          "list." + m + "() takes " +
              (lo == hi ? "exactly " + std::to_string(lo) : "at most " + std::to_string(hi)) +
              " argument" + (hi == 1 ? "" : "s") + " (" + std::to_string(args.size()) + " given)");
  };
  auto ci = [&](int64_t k) { return constant(ir::integer(k)); };
  auto mark = [&](NodePtr n) {
    seq_nodes.insert(n.get());
    return n;
  };
  // lst[lo:hi] at analysis (nullptr: that bound is absent); Python's clamping.
  auto slice = [&](NodePtr lo, NodePtr hi) {
    return mark(op_by_name(b, "strided_slice",
                           {lst, sequence(b, Prim::kMakeTuple, {lo ? lo : ci(0)}, loc),
                            sequence(b, Prim::kMakeTuple, {hi ? hi : ci(0)}, loc),
                            sequence(b, Prim::kMakeTuple, {ci(1)}, loc), ci(lo ? 0 : 1),
                            ci(hi ? 0 : 1), ci(0), ci(0), ci(0)},
                           {}, loc));
  };
  auto concat = [&](NodePtr l, NodePtr r) {
    std::vector<NodePtr> li, ri;
    if (known_items(*this, l, li) && known_items(*this, r, ri)) {
      li.insert(li.end(), ri.begin(), ri.end());
      return mark(sequence(b, Prim::kMakeList, std::move(li), loc));
    }
    return mark(op_by_name(b, "add", {l, r}, {}, loc));  // list + list at analysis
  };
  std::vector<NodePtr> items;
  const bool known = known_items(*this, lst, items);
  NodePtr result = constant(ir::none()), updated;
  if (m == "append") {
    arity(1, 1);
    updated = concat(lst, sequence(b, Prim::kMakeList, {args[0]}, loc));
  } else if (m == "extend") {
    arity(1, 1);
    NodePtr seq = args[0];
    if (dict_nodes.count(seq.get())) seq = prim(b, Prim::kDictKeys, {seq}, loc);
    std::vector<NodePtr> extra;
    if (!known_items(*this, seq, extra))  // any iterable: a tuple, a list, a tensor's rows
      seq = mark(prim(b, Prim::kUnpackCall, {constant(ir::prim_value(Prim::kMakeList)), seq}, loc));
    updated = concat(lst, seq);
  } else if (m == "insert") {
    arity(2, 2);
    int64_t i;
    if (known && const_int(args[0], &i)) {  // Python clamps the position into the list
      const int64_t n = static_cast<int64_t>(items.size());
      int64_t at = i < 0 ? std::max<int64_t>(i + n, 0) : std::min(i, n);
      items.insert(items.begin() + at, args[1]);
      updated = mark(sequence(b, Prim::kMakeList, std::move(items), loc));
    } else {
      updated =
          concat(concat(slice(nullptr, args[0]), sequence(b, Prim::kMakeList, {args[1]}, loc)),
                 slice(args[0], nullptr));
    }
  } else {  // pop
    arity(0, 1);
    int64_t i = -1;
    if (known && (args.empty() || const_int(args[0], &i))) {
      const int64_t n = static_cast<int64_t>(items.size());
      if (n == 0) error(loc, "IndexError", "pop from empty list");
      if (i < -n || i >= n) error(loc, "IndexError", "pop index out of range");
      if (i < 0) i += n;
      result = items[i];
      items.erase(items.begin() + i);
      updated = mark(sequence(b, Prim::kMakeList, std::move(items), loc));
    } else {
      // pop_index checks the index as Python does and makes it non-negative (at compile time).
      static nb::handle pop_index =
          nb::object(nb::module_::import_("mycel.common.graph_syntax").attr("pop_index")).release();
      NodePtr len = prim(b, Prim::kTupleLen, {lst}, loc);
      NodePtr at =
          apply(b, {constant(py_object(pop_index)), len, args.empty() ? ci(-1) : args[0]}, loc);
      scalar_nodes.insert(at.get());
      result = prim(b, Prim::kTupleGetItem, {lst, at}, loc);
      updated =
          concat(slice(nullptr, at), slice(prim(b, Prim::kScalarAdd, {at, ci(1)}, loc), nullptr));
    }
  }
  if (updated->is_apply()) updated->set_debug_name(name);
  b->scope->list_vars.insert(name);
  write(b, name, updated);
  return result;
}

}  // namespace mycel::frontend
