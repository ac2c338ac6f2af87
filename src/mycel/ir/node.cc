#include "mycel/ir/node.h"

#include "mycel/ir/func_graph.h"

namespace mycel::ir {

std::string SourceLoc::str() const {
  if (!known()) return "<unknown>";
  return (file ? *file : std::string("<string>")) + ":" + std::to_string(line) + ":" + std::to_string(col);
}

bool is_prim_value(const NodePtr& n, Prim p) {
  Constant* c = as_constant(n);
  return c && c->value()->kind() == ValueKind::kPrim && static_cast<const PrimValue&>(*c->value()).prim() == p;
}

bool is_prim_call(const NodePtr& n, Prim p) {
  Apply* a = as_apply(n);
  return a && is_prim_value(a->callee(), p);
}

FuncGraph* constant_graph(const NodePtr& n) {
  Constant* c = as_constant(n);
  if (!c || c->value()->kind() != ValueKind::kGraph) return nullptr;
  return static_cast<const GraphValue&>(*c->value()).graph();
}

}  // namespace mycel::ir
