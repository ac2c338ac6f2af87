// Python scalars, None and strings passed to a compiled function are compile-time constants, as
// in MindSpore: analysis specializes the entry per value (the signature key holds it), so after
// specialization such a parameter only names a known value. This step turns each into a
// Constant and drops it from the entry's parameters, so the Program takes only tensors.
#include "mycel/ir/abstract.h"
#include "mycel/ir/value.h"
#include "mycel/opt/graph_util.h"
#include "mycel/opt/opt.h"

namespace mycel::opt {

std::vector<bool> bind_constant_inputs(ir::FuncGraph* g, bool drop) {
  std::vector<bool> removed;
  std::vector<ir::NodePtr> kept;
  std::unordered_map<const ir::Node*, ir::NodePtr> repl;
  for (const ir::NodePtr& p : g->parameters()) {
    if (static_cast<const ir::Parameter&>(*p).is_weight()) {
      kept.push_back(p);
      continue;
    }
    const ir::AbstractPtr& a = p->abstract();
    ir::ValuePtr v;
    if (a && a->kind() == ir::AbstractKind::kNone) v = ir::none();
    if (a && a->kind() == ir::AbstractKind::kScalar)
      v = static_cast<const ir::AbstractScalar&>(*a).value();
    removed.push_back(v != nullptr);
    if (!v) {
      kept.push_back(p);
      continue;
    }
    ir::NodePtr c = g->constant(v);
    c->set_abstract(a);
    repl[p.get()] = c;
  }
  if (repl.empty()) return removed;
  detail::replace_uses(g, repl);
  if (drop) g->set_parameters(std::move(kept));
  return removed;
}

}  // namespace mycel::opt
