#include "mycel/ir/checker.h"

#include <unordered_set>

#include "mycel/core/error.h"
#include "mycel/ir/printer.h"

namespace mycel::ir {

std::vector<std::string> check(const FuncGraph& root) {
  std::vector<std::string> errs;
  std::vector<const FuncGraph*> work{&root};
  std::unordered_set<const FuncGraph*> seen{&root};
  auto in_scope = [](const NodePtr& n, const FuncGraph* g) {
    return n->is_constant() || n->graph() == g || (n->graph() && n->graph()->is_ancestor_of(g));
  };
  while (!work.empty()) {
    const FuncGraph* g = work.back();
    work.pop_back();
    const std::string where = "@" + g->name();
    if (!g->output()) {
      errs.push_back(where + ": no output");
      continue;
    }
    if (!in_scope(g->output(), g))
      errs.push_back(where + ": output belongs to another graph's scope");
    for (const NodePtr& p : g->parameters())
      if (!p->is_parameter() || p->graph() != g)
        errs.push_back(where + ": parameter list holds a foreign node");
    for (const NodePtr& n : g->toposort()) {
      auto* a = static_cast<Apply*>(n.get());
      if (a->inputs().empty()) {
        errs.push_back(where + ": apply with no callee");
        continue;
      }
      for (size_t i = 0; i < a->inputs().size(); ++i) {
        const NodePtr& in = a->inputs()[i];
        if (!in)
          errs.push_back(where + ": null input " + std::to_string(i));
        else if (!in_scope(in, g))
          errs.push_back(where + ": input " + std::to_string(i) + " of a node comes from @" +
                         (in->graph() ? in->graph()->name() : "?") + ", which does not enclose it");
      }
      if (Constant* c = as_constant(a->callee()); c && c->value()->kind() == ValueKind::kPrim) {
        Prim p = static_cast<const PrimValue&>(*c->value()).prim();
        int arity = prim_arity(p);
        if (arity >= 0 && static_cast<int>(a->num_args()) != arity)
          errs.push_back(where + ": " + prim_name(p) + " takes " + std::to_string(arity) +
                         " arguments, got " + std::to_string(a->num_args()));
      }
    }
    for (FuncGraph* u : g->used_graphs()) {
      // A closure is made where its graph is visible: a graph nested in another can only be
      // referenced from its parent's scope (else its free variables would have no value there).
      if (u->parent() && u->parent() != g && !u->parent()->is_ancestor_of(g))
        errs.push_back(where + ": refers to @" + u->name() + ", nested in @" + u->parent()->name() +
                       ", which does not enclose it");
      if (seen.insert(u).second) work.push_back(u);
    }
  }
  return errs;
}

void verify(const FuncGraph& g, const std::string& stage) {
  auto errs = check(g);
  if (errs.empty()) return;
  std::string msg = "IR check failed after " + stage + ":";
  for (const auto& e : errs) msg += "\n  " + e;
  MYCEL_THROW(RuntimeError, msg, "\n", print(g));
}

}  // namespace mycel::ir
