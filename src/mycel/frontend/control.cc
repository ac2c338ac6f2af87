// Control flow as graphs (Braun et al., "Simple and efficient construction of SSA form"): every
// straight-line region is a graph; a jump is a tail call of the target graph whose parameters are
// the phis; `if` is switch(c, @true, @false)(); loops are tail-recursive header graphs.
#include "mycel/frontend/parser.h"

namespace mycel::frontend {

Block* Parser::new_block(Scope* s, Block* parent, Block::Entry entry, const std::string& name) {
  auto b = std::make_unique<Block>();
  b->g = module_->add_graph(name, parent ? parent->g : nullptr);
  b->parent = parent;
  b->scope = s;
  b->entry = entry;
  b->sealed = entry != Block::kJump;
  blocks_.push_back(std::move(b));
  return blocks_.back().get();
}

NodePtr Parser::add_phi(Block* b, const std::string& name) {
  NodePtr p = b->g->add_parameter(name);
  b->phis.push_back(name);
  if (name[0] == '$') scalar_nodes.insert(p.get());  // hidden loop counters are Python ints
  b->vars[name] = p;
  return p;
}

// Gives every call of `b` one argument per phi: the variable's value in the calling block.
void Parser::fill_jumps(Block* b) {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t j = 0; j < b->jumps.size(); ++j) {
      auto [from, call] = b->jumps[j];
      auto* a = static_cast<ir::Apply*>(call.get());
      while (a->num_args() < b->phis.size()) {
        NodePtr v = read(from, b->phis[a->num_args()], call->loc());
        auto in = a->inputs();
        in.push_back(v);
        a->set_inputs(std::move(in));
        changed = true;
      }
    }
  }
}

NodePtr Parser::read(Block* b, const std::string& name, const SourceLoc& loc) {
  auto it = b->vars.find(name);
  if (it != b->vars.end()) {
    if (it->second == unbound_) unbound_error(loc, name);  // `del name` reached here
    return it->second;
  }
  NodePtr v;
  if (b->entry == Block::kSwitch) {
    v = read(b->parent, name, loc);
  } else if (b->entry == Block::kFunction || (name[0] != '$' && !b->scope->locals.count(name))) {
    // A name the function never assigns (a global, a closure, `self`'s module) cannot change
    // around a loop: resolve it now rather than through a phi, so `ops.relu(h)` inside a loop
    // body is still seen as an op call at parse time.
    v = lookup(b, name, loc);
  } else if (name[0] != '$' && !b->scope->assigned.count(name) && b->scope->entry_block &&
             b->scope->entry_block != b &&
             ir::as_constant(read(b->scope->entry_block, name, loc))) {
    // A parameter never rebound and bound to a constant (`self`): same reason. Run-time
    // parameters keep their phi, the form the later passes expect of loop-carried values.
    v = read(b->scope->entry_block, name, loc);
  } else if (!b->sealed) {
    v = add_phi(b, name);  // operands come when the block is sealed
  } else {
    if (b->jumps.empty()) error(loc, "NameError", "name '" + name + "' is not defined here");
    v = add_phi(b, name);
    try {
      fill_jumps(b);
    } catch (const FrontendError& e) {  // deleted on some path into b: report it at this read
      if (e.kind == "UnboundLocalError") unbound_error(loc, name);
      throw;
    }
    try_remove_trivial(b, v);
    v = b->vars[name];
  }
  b->vars[name] = v;
  return v;
}

void Parser::unbound_error(const SourceLoc& loc, const std::string& name) const {
  error(loc, "UnboundLocalError",
        "cannot access local variable '" + name +
            "' where it is not associated with a value "
            "(it is deleted with `del` on a path that reaches here)");
}

NodePtr Parser::jump(Block* from, Block* to, const SourceLoc& loc) {
  NodePtr call = apply(from, {constant(ir::graph_value(to->g))}, loc);
  to->jumps.push_back({from, call});
  fill_jumps(to);
  return call;
}

void Parser::seal(Block* b) {
  if (b->sealed) return;
  b->sealed = true;
  fill_jumps(b);
  std::vector<NodePtr> phis(b->g->parameters());
  for (const NodePtr& p : phis) try_remove_trivial(b, p);
}

// A phi whose operands are all one value v (or the phi itself) is v: drop the parameter and the
// matching argument of every call, and replace its uses.
void Parser::try_remove_trivial(Block* b, const NodePtr& phi) {
  const auto& params = b->g->parameters();
  size_t index = std::find(params.begin(), params.end(), phi) - params.begin();
  if (index == params.size()) return;
  NodePtr same;
  for (auto& [from, call] : b->jumps) {
    const NodePtr& v = static_cast<ir::Apply*>(call.get())->arg(index);
    if (v == phi || v == same) continue;
    if (same && !(as_constant(v) && as_constant(same) &&
                  ir::ValueEq()(ir::as_constant(v)->value(), ir::as_constant(same)->value())))
      return;
    if (!same) same = v;
  }
  if (!same) return;
  bool in_scope = same->is_constant() || same->graph() == b->g ||
                  (same->graph() && same->graph()->is_ancestor_of(b->g));
  if (!in_scope) return;
  replace_phi(b, index, same);
}

void Parser::replace_phi(Block* b, size_t index, NodePtr v) {
  NodePtr phi = b->g->parameters()[index];
  keep_nodes_.push_back(phi);
  std::vector<NodePtr> params = b->g->parameters();
  params.erase(params.begin() + index);
  b->g->set_parameters(std::move(params));
  b->phis.erase(b->phis.begin() + index);
  for (auto& [from, call] : b->jumps) {
    auto in = static_cast<ir::Apply*>(call.get())->inputs();
    in.erase(in.begin() + index + 1);
    static_cast<ir::Apply*>(call.get())->set_inputs(std::move(in));
  }
  if (scalar_nodes.count(phi.get())) scalar_nodes.insert(v.get());
  for (const NodePtr& a : applies_) {
    auto* ap = static_cast<ir::Apply*>(a.get());
    for (size_t i = 0; i < ap->inputs().size(); ++i)
      if (ap->inputs()[i] == phi) ap->set_input(i, v);
  }
  for (auto& blk : blocks_) {
    for (auto& [k, x] : blk->vars)
      if (x == phi) x = v;
    if (blk->g->output() == phi) blk->g->set_output(v);
  }
}

void Parser::finish(Block* b, NodePtr out) {
  if (!b->effects.empty()) {
    NodePtr e =
        b->effects.size() == 1 ? b->effects[0] : prim(b, Prim::kMakeTuple, b->effects, out->loc());
    out = prim(b, Prim::kDepend, {out, e}, out->loc());
  }
  b->g->set_output(std::move(out));
  b->terminated = true;
}

NodePtr Parser::switch_call(Block* b, NodePtr cond, Block* t, Block* f, const SourceLoc& loc) {
  NodePtr sw = prim(
      b, Prim::kSwitch,
      {std::move(cond), constant(ir::graph_value(t->g)), constant(ir::graph_value(f->g))}, loc);
  return apply(b, {sw}, loc);
}

int constant_truth(const NodePtr& c) {
  ir::Constant* k = ir::as_constant(c);
  if (!k) return -1;
  const ir::Value& v = *k->value();
  switch (v.kind()) {
    case ir::ValueKind::kNone:
      return 0;
    case ir::ValueKind::kBool:
      return static_cast<const ir::BoolValue&>(v).value();
    case ir::ValueKind::kInt:
      return static_cast<const ir::IntValue&>(v).value() != 0;
    case ir::ValueKind::kFloat:
      return static_cast<const ir::FloatValue&>(v).value() != 0.0;
    case ir::ValueKind::kStr:
      return !static_cast<const ir::StrValue&>(v).value().empty();
    case ir::ValueKind::kTuple:
    case ir::ValueKind::kList:
      return !static_cast<const ir::SequenceValue&>(v).items().empty();
    default:
      return -1;
  }
}

Block* Parser::if_stmt(Block* b, nb::handle s) {
  SourceLoc loc = loc_of(s);
  NodePtr c = expr(b, s.attr("test"));
  if (int truth = constant_truth(c); truth >= 0)  // fold `if self.flag:` at parse time
    return stmts(b, truth ? s.attr("body") : s.attr("orelse"));
  const std::string& fn = b->scope->name;
  Block* t = new_block(b->scope, b, Block::kSwitch, fn + "_true");
  Block* f = new_block(b->scope, b, Block::kSwitch, fn + "_false");
  finish(b, switch_call(b, c, t, f, loc));
  Block* te = stmts(t, s.attr("body"));
  Block* fe = stmts(f, s.attr("orelse"));
  if (!te && !fe) return nullptr;
  Block* join = new_block(b->scope, b, Block::kJump, fn + "_after");
  if (te) finish(te, jump(te, join, loc));
  if (fe) finish(fe, jump(fe, join, loc));
  seal(join);
  return join;
}

Block* Parser::while_stmt(Block* b, nb::handle s) {
  SourceLoc loc = loc_of(s);
  const std::string& fn = b->scope->name;
  Block* header = new_block(b->scope, b, Block::kJump, fn + "_while");
  finish(b, jump(b, header, loc));
  NodePtr c = expr(header, s.attr("test"));
  Block* body = new_block(b->scope, header, Block::kSwitch, fn + "_body");
  Block* exit = new_block(b->scope, header, Block::kSwitch, fn + "_exit");
  finish(header, switch_call(header, c, body, exit, loc));
  b->scope->loops.push_back({header, nullptr});
  if (Block* end = stmts(body, s.attr("body"))) finish(end, jump(end, header, loc));
  Block* after = b->scope->loops.back().after;
  b->scope->loops.pop_back();
  seal(header);
  return loop_end(exit, after, s.attr("orelse"), loc);
}

// The loop's `else` runs in the block its condition left by (no break reached it); a break
// jumps past it to `after`, where both paths meet.
Block* Parser::loop_end(Block* exit, Block* after, nb::handle orelse, const SourceLoc& loc) {
  Block* end = stmts(exit, orelse);
  if (!after) return end;
  if (end) finish(end, jump(end, after, loc));
  seal(after);
  return after;
}

Block* Parser::loop_jump(Block* b, nb::handle s, bool is_break) {
  Scope* sc = b->scope;
  if (sc->loops.empty()) unsupported(s, is_break ? "break" : "continue", "use it inside a loop");
  Scope::Loop& l = sc->loops.back();
  SourceLoc loc = loc_of(s);
  if (!is_break) {
    finish(b, jump(b, l.header, loc));
    return nullptr;
  }
  if (!l.after) l.after = new_block(sc, l.header, Block::kJump, sc->name + "_break");
  finish(b, jump(b, l.after, loc));
  return nullptr;
}

Parser::Iter Parser::iterable(Block* b, nb::handle it, NodePtr fn) {
  Iter r;
  nb::handle func = ast_type(it) == "Call" ? it.attr("func") : nb::handle();
  bool method = func.is_valid() && ast_type(func) == "Attribute";
  if (method) {  // d.items(), self.layers.values(): evaluated as a call
    r.seq = expr(b, it);
    return r;
  }
  if (ast_type(it) == "Call" && len_of(it.attr("keywords")) == 0) {
    if (!fn) fn = expr(b, it.attr("func"));
    const PyObjectValue* pv = py_object_of(fn);
    auto is = [&](const char* n) { return pv && pv->object().is(builtins_.attr(n)); };
    nb::handle args = it.attr("args");
    for (nb::handle a : args)
      if (ast_type(a) == "Starred")
        unsupported(a, "*args in a for iterable", "pass the items directly");
    size_t n = len_of(args);
    if ((is("zip") && n > 0) || (is("enumerate") && (n == 1 || n == 2))) {
      r.kind = is("zip") ? Iter::kZip : Iter::kEnumerate;
      r.subs.push_back(iterable(b, args[0]));
      if (r.kind == Iter::kZip)
        for (size_t k = 1; k < n; ++k) r.subs.push_back(iterable(b, args[k]));
      else if (n == 2) {
        r.start = expr(b, args[1]);
        if (!is_scalar(r.start))
          unsupported(args[1], "an enumerate start that is not an integer", "pass an int");
      }
      return r;
    }
    std::vector<NodePtr> av;
    for (nb::handle a : args) av.push_back(expr(b, a));
    if (is("range")) {  // range(...) with constant bounds inside zip/enumerate: a constant tuple
      nb::list pa;
      bool all = true;
      for (const NodePtr& a : av) {
        ir::Constant* k = ir::as_constant(a);
        if (!k || k->value()->kind() != ir::ValueKind::kInt) {
          all = false;
          break;
        }
        pa.append(nb::int_(static_cast<const ir::IntValue&>(*k->value()).value()));
      }
      if (all && !av.empty() && av.size() <= 3) {
        std::vector<ir::ValuePtr> vals;
        try {
          for (nb::handle v : builtins_.attr("range")(*nb::tuple(pa)))
            vals.push_back(ir::integer(nb::cast<int64_t>(v)));
        } catch (nb::python_error& e) {
          error(loc_of(it), "ValueError", e.what());
        }
        r.seq = constant(ir::tuple(std::move(vals)));
        return r;
      }
    }
    r.seq = call_value(b, fn, std::move(av), {}, loc_of(it));
    return r;
  }
  r.seq = expr(b, it);
  if (dict_nodes.count(r.seq.get()))
    r.seq = prim(b, Prim::kDictKeys, {r.seq}, loc_of(it));  // for k in d
  return r;
}

void Parser::iter_lens(Block* b, const Iter& it, std::vector<NodePtr>& lens, const SourceLoc& loc) {
  if (it.kind != Iter::kSeq) {
    for (const Iter& s : it.subs) iter_lens(b, s, lens, loc);
    return;
  }
  NodePtr n = prim(b, Prim::kTupleLen, {it.seq}, loc);
  scalar_nodes.insert(n.get());
  lens.push_back(n);
}

NodePtr Parser::iter_item(Block* b, const Iter& it, NodePtr i, const SourceLoc& loc) {
  if (it.kind == Iter::kSeq) {
    if (ir::Constant* k = ir::as_constant(i)) {  // a parse-time index: take literal items directly
      int64_t idx = static_cast<const ir::IntValue&>(*k->value()).value();
      if (ir::is_prim_call(it.seq, Prim::kMakeTuple) || ir::is_prim_call(it.seq, Prim::kMakeList))
        return ir::as_apply(it.seq)->arg(idx);
      ir::Constant* c = ir::as_constant(it.seq);
      if (c && (c->value()->kind() == ir::ValueKind::kTuple ||
                c->value()->kind() == ir::ValueKind::kList))
        return constant(static_cast<const ir::SequenceValue&>(*c->value()).items()[idx]);
    }
    return prim(b, Prim::kTupleGetItem, {it.seq, i}, loc);
  }
  std::vector<NodePtr> items;
  if (it.kind == Iter::kEnumerate) {
    NodePtr index = i;
    if (it.start) {
      ir::Constant* ki = ir::as_constant(i);
      ir::Constant* ks = ir::as_constant(it.start);
      if (ki && ks && ks->value()->kind() == ir::ValueKind::kInt)
        index = constant(ir::integer(static_cast<const ir::IntValue&>(*ki->value()).value() +
                                     static_cast<const ir::IntValue&>(*ks->value()).value()));
      else
        index = prim(b, Prim::kScalarAdd, {i, it.start}, loc);
    }
    items.push_back(index);
  }
  for (const Iter& s : it.subs) items.push_back(iter_item(b, s, i, loc));
  return sequence(b, Prim::kMakeTuple, std::move(items), loc);
}

// The number of items, when known at parse time (literal tuples and lists, constants), or -1.
int64_t Parser::iter_static_len(const Iter& it) const {
  if (it.kind == Iter::kSeq) {
    if (ir::is_prim_call(it.seq, Prim::kMakeTuple) || ir::is_prim_call(it.seq, Prim::kMakeList))
      return static_cast<int64_t>(ir::as_apply(it.seq)->num_args());
    ir::Constant* c = ir::as_constant(it.seq);
    if (c &&
        (c->value()->kind() == ir::ValueKind::kTuple || c->value()->kind() == ir::ValueKind::kList))
      return static_cast<int64_t>(
          static_cast<const ir::SequenceValue&>(*c->value()).items().size());
    return -1;
  }
  int64_t n = -1;
  for (const Iter& s : it.subs) {
    int64_t m = iter_static_len(s);
    if (m < 0) return -1;
    n = n < 0 ? m : std::min(n, m);
  }
  return n;
}

// for target in <iterable>: a loop over a hidden counter. range(start, stop, step) counts
// directly; tuples, lists, CellLists, enumerate and zip index the sequences with tuple_getitem.
Block* Parser::for_stmt(Block* b, nb::handle s) {
  SourceLoc loc = loc_of(s);
  Scope* sc = b->scope;
  std::string counter = "$i" + (sc->hidden ? std::to_string(sc->hidden + 1) : std::string());
  ++sc->hidden;
  nb::handle it = s.attr("iter");
  bool is_range = false;
  Iter src;
  NodePtr start = constant(ir::integer(0)), stop, step = constant(ir::integer(1));
  bool descending = false;
  bool range_call = false;
  NodePtr fn;
  if (ast_type(it) == "Call" && len_of(it.attr("keywords")) == 0 &&
      ast_type(it.attr("func")) != "Attribute") {
    fn = expr(b, it.attr("func"));
    const PyObjectValue* pv = py_object_of(fn);
    range_call = pv && pv->object().is(builtins_.attr("range"));
  }
  if (range_call) {
    is_range = true;
    std::vector<NodePtr> args;
    for (nb::handle a : it.attr("args")) {
      if (ast_type(a) == "Starred")
        unsupported(a, "*args in a for iterable", "pass the items directly");
      args.push_back(expr(b, a));
    }
    if (args.empty() || args.size() > 3) error(loc, "TypeError", "range expected 1 to 3 arguments");
    if (args.size() == 1)
      stop = args[0];
    else {
      start = args[0];
      stop = args[1];
    }
    if (args.size() == 3) {
      step = args[2];
      ir::Constant* k = ir::as_constant(step);
      if (!k || k->value()->kind() != ir::ValueKind::kInt ||
          static_cast<const ir::IntValue&>(*k->value()).value() == 0)
        unsupported(it.attr("args")[2], "a range step that is not a constant",
                    "write the step as a nonzero integer literal or a constant attribute");
      descending = static_cast<const ir::IntValue&>(*k->value()).value() < 0;
    }
  } else {
    src = iterable(b, it, fn);
  }
  std::vector<NodePtr> lens;
  if (!is_range) iter_lens(b, src, lens, loc);
  write(b, counter, start);
  Block* header = new_block(sc, b, Block::kJump, sc->name + "_for");
  header->g->set_unroll(!is_range);  // a sequence's items may differ in type: unroll it
  finish(b, jump(b, header, loc));
  NodePtr i = read(header, counter, loc);
  NodePtr c;
  if (is_range) {
    c = prim(header, descending ? Prim::kScalarGt : Prim::kScalarLt, {i, stop}, loc);
  } else {
    for (const NodePtr& n : lens) {
      NodePtr ci = prim(header, Prim::kScalarLt, {i, n}, loc);
      c = c ? prim(header, Prim::kSwitch, {c, ci, constant(ir::boolean(false))}, loc) : ci;
    }
  }
  Block* body = new_block(sc, header, Block::kSwitch, sc->name + "_body");
  Block* exit = new_block(sc, header, Block::kSwitch, sc->name + "_exit");
  finish(header, switch_call(header, c, body, exit, loc));
  // The counter advances first, so `continue` can jump straight back to the header.
  NodePtr next = prim(body, Prim::kScalarAdd, {i, step}, loc);
  scalar_nodes.insert(next.get());
  write(body, counter, next);
  NodePtr item = is_range ? i : iter_item(body, src, i, loc);
  assign(body, s.attr("target"), item);
  sc->loops.push_back({header, nullptr});
  if (Block* end = stmts(body, s.attr("body"))) finish(end, jump(end, header, loc));
  Block* after = sc->loops.back().after;
  sc->loops.pop_back();
  seal(header);
  return loop_end(exit, after, s.attr("orelse"), loc);
}

}  // namespace mycel::frontend
