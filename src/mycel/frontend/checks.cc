// raise, assert and del. `raise E(msg)` ends its block with raise(exception): analysis raises it
// at compile time when the block is reached on a compile-time path, and otherwise keeps it for
// the backend, which raises it when the Program runs. `assert c, msg` is
// `if not c: raise AssertionError(msg)`. `del x` unbinds x for the code after it.
#include "mycel/frontend/parser.h"

namespace mycel::frontend {

void Parser::finish_raise(Block* b, NodePtr exc, const SourceLoc& loc) {
  // An f-string argument of the exception (`raise ValueError(f"got {c}")`) is formatted by
  // format_message, which shows a value known only at run time (a dynamic dim) as what is known
  // of it: the message is needed at compile time, and nothing but the error reads it.
  if (ir::Apply* call = ir::as_apply(exc)) {
    static nb::handle message =
        nb::object(nb::module_::import_("mycel.common.graph_syntax").attr("format_message"))
            .release();
    for (const NodePtr& arg : call->inputs())
      if (ir::Apply* f = ir::as_apply(arg); f && fstring_parts.count(arg.get()))
        f->set_input(0, constant(py_object(message)));
  }
  if (ir::as_constant(exc)) {  // Python's check, made here when exc is known
    const PyObjectValue* pv = py_object_of(exc);
    PyObject* o = pv ? pv->object().ptr() : nullptr;
    if (!(o && (PyExceptionClass_Check(o) || PyExceptionInstance_Check(o))))
      error(loc, "TypeError", "exceptions must derive from BaseException");
  }
  // Effects of the block (print) are inputs of the raise, so they run before it.
  std::vector<NodePtr> in{std::move(exc)};
  in.insert(in.end(), b->effects.begin(), b->effects.end());
  b->effects.clear();
  finish(b, prim(b, Prim::kRaise, std::move(in), loc));
}

Block* Parser::raise_stmt(Block* b, nb::handle s) {
  nb::handle exc = s.attr("exc"), cause = s.attr("cause");
  if (exc.is_none())
    unsupported(s, "a bare `raise`", "raise an exception object: raise ValueError(msg)");
  // `from None` only hides the context, which a compiled function never has.
  if (!cause.is_none() && !(ast_type(cause) == "Constant" && cause.attr("value").is_none()))
    unsupported(cause, "raise ... from <exception>", "raise the exception without `from`");
  finish_raise(b, expr(b, exc), loc_of(s));
  return nullptr;  // the code after a raise is unreachable
}

Block* Parser::assert_stmt(Block* b, nb::handle s) {
  SourceLoc loc = loc_of(s);
  NodePtr c = expr(b, s.attr("test"));
  if (constant_truth(c) == 1) return b;  // passes when parsed: nothing to check
  const std::string& fn = b->scope->name;
  Block* ok = new_block(b->scope, b, Block::kSwitch, fn + "_assert_ok");
  Block* fail = new_block(b->scope, b, Block::kSwitch, fn + "_assert_fail");
  finish(b, switch_call(b, c, ok, fail, loc));
  // The message is evaluated only when the assertion fails, as in Python.
  std::vector<NodePtr> args;
  if (!s.attr("msg").is_none()) args.push_back(expr(fail, s.attr("msg")));
  NodePtr cls = object_node(fail, builtins_.attr("AssertionError"), loc);
  NodePtr exc = call_value(fail, cls, std::move(args), {}, loc);
  finish_raise(fail, exc, loc);
  Block* after = new_block(b->scope, b, Block::kJump, fn + "_after");
  finish(ok, jump(ok, after, loc));
  seal(after);
  return after;
}

void Parser::del_target(Block* b, nb::handle target) {
  const std::string t = ast_type(target);
  SourceLoc loc = loc_of(target);
  if (t == "Name") {
    const std::string name = str_attr(target, "id");
    read(b, name, loc);  // deleting a name that is already deleted is an error too
    write(b, name, unbound_);
    return;
  }
  if (t == "Tuple" || t == "List") {
    for (nb::handle e : target.attr("elts")) del_target(b, e);
    return;
  }
  if (t == "Subscript")
    unsupported(target, "del of an item", "build the value without it (t = t[:i] + t[i + 1:])");
  if (t == "Attribute")
    unsupported(target, "del of an attribute",
                "attributes cannot be changed inside a compiled function");
  unsupported(target, "del of " + t, "delete a name");
}

}  // namespace mycel::frontend
