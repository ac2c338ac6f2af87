// Item and attribute assignment inside parsed code. Graph values are immutable, so `x[k] = v`
// becomes a functional update that rebinds the name x: tensors through the graph_syntax helpers
// (parsed like user code), dicts through dict_setitem. `self.w = v` writes a Parameter with
// assign; any other attribute write is refused, since the object is not part of the graph.
#include "mycel/frontend/parser.h"

namespace mycel::frontend {

NodePtr Parser::library_graph(const char* module, const char* name, const SourceLoc& loc) {
  nb::object fn = nb::module_::import_(module).attr(name);
  keep_alive_.push_back(fn);
  return constant(ir::graph_value(function_graph(fn, nb::handle(), loc)));
}

void Parser::assign_item(Block* b, nb::handle target, NodePtr v) {
  SourceLoc loc = loc_of(target);
  nb::handle base_ast = target.attr("value"), key = target.attr("slice");
  if (ast_type(base_ast) != "Name")
    unsupported(target, "item assignment into an expression",
                "assign into a local name (y = self.x; y[i] = v) and use or return y");
  const std::string name = str_attr(base_ast, "id");
  NodePtr base = read(b, name, loc);
  if (py_object_of(base))
    unsupported(target, "item assignment into a Python object",
                "build the container inside the function, or return the new value");
  if (is_sequence(base))
    unsupported(target, "item assignment into a tuple or list",
                "build a new tuple: t = t[:i] + (v,) + t[i + 1:]");
  if (dict_nodes.count(base.get()) || b->scope->dict_vars.count(name) ||  // (a loop's phi)
      (ast_type(key) == "Constant" && nb::isinstance<nb::str>(key.attr("value")))) {
    NodePtr d = prim(b, Prim::kDictSetItem, {base, expr(b, key), v}, loc);
    dict_nodes.insert(d.get());
    write(b, name, d);
    return;
  }
  NodePtr index;
  std::vector<NodePtr> sargs = strided_key(b, key, &index);
  NodePtr updated;
  if (index) {
    updated = call_value(b, library_graph("mycel.common.graph_syntax", "setitem_tensor", loc),
                         {base, index, v}, {}, loc);
  } else {
    sargs.insert(sargs.begin(), {base, v});
    updated = call_value(b, library_graph("mycel.common.graph_syntax", "setitem_strided", loc),
                         std::move(sargs), {}, loc);
  }
  updated->set_debug_name(name);
  write(b, name, updated);
}

void Parser::assign_attribute(Block* b, nb::handle target, NodePtr v) {
  SourceLoc loc = loc_of(target);
  const std::string attr = str_attr(target, "attr");
  nb::handle tv = target.attr("value");
  if (!b->scope->record_self.empty() && ast_type(tv) == "Name" &&
      str_attr(tv, "id") == b->scope->record_self) {  // a field of the record being built
    write(b, b->scope->record_self + "." + attr, std::move(v));
    return;
  }
  NodePtr base = expr(b, tv);
  const PyObjectValue* pv = py_object_of(base);
  if (pv && nb::hasattr(pv->object(), attr.c_str())) {
    nb::object cur = pv->object().attr(attr.c_str());
    if (nb::isinstance(cur, param_type_)) {
      // self.w = value writes the Parameter, as eager Cell.__setattr__ does (ops.assign).
      NodePtr r = call_value(b, constant(ir::prim_value(Prim::kAssign)),
                             {object_node(b, cur, loc), v}, {}, loc);
      add_effect(b, r);
      return;
    }
  }
  unsupported(target, "assignment to attribute '" + attr + "'",
              "return the value from construct (or keep it in a local variable); only Parameters "
              "can be written inside a compiled function (self.w = v is ops.assign(self.w, v)), "
              "and the fields of a @jit_class object only in its __init__");
}

}  // namespace mycel::frontend
