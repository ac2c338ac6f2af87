// Closure elimination: partial applications called in place become direct calls (after
// inlining, this leaves straight-line models without closures), switches on constants pick.
#include "mycel/opt/graph_util.h"
#include "mycel/opt/opt.h"

namespace mycel::opt {

using namespace ir;

bool eliminate_closures(FuncGraph* root, const OptOptions&) {
  std::unordered_map<const Node*, NodePtr> repl;
  auto current = [&](const NodePtr& n) {
    auto it = repl.find(n.get());
    return it == repl.end() ? n : it->second;
  };
  for (const NodePtr& n : detail::all_applies(root)) {
    auto* a = static_cast<Apply*>(n.get());
    NodePtr callee = current(a->callee());
    if (is_prim_call(n, Prim::kSwitch)) {
      const ValuePtr* c = detail::const_value(a->arg(0));
      if (c && (*c)->kind() == ValueKind::kBool)
        repl[n.get()] = current(a->arg(static_cast<const BoolValue&>(**c).value() ? 1 : 2));
    } else if (is_prim_call(n, Prim::kPartial) &&
               is_prim_call(current(a->arg(0)), Prim::kPartial)) {
      auto* inner = as_apply(current(a->arg(0)));
      std::vector<NodePtr> in(inner->inputs().begin(), inner->inputs().end());
      in.insert(in.end(), a->inputs().begin() + 2, a->inputs().end());
      repl[n.get()] = detail::make_like(n->graph(), std::move(in), n);
    } else if (is_prim_call(callee, Prim::kPartial)) {
      auto* p = as_apply(callee);
      std::vector<NodePtr> in(p->inputs().begin() + 1, p->inputs().end());  // f, bound args
      in.insert(in.end(), a->inputs().begin() + 1, a->inputs().end());
      repl[n.get()] = detail::make_like(n->graph(), std::move(in), n);
    }
  }
  detail::replace_uses(root, repl);
  return !repl.empty();
}

}  // namespace mycel::opt
