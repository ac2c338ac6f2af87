// Python scalars, None and strings passed to a compiled function are compile-time constants, as
// in MindSpore: analysis specializes the entry per value (the signature key holds it), so after
// specialization such a parameter only names a known value. This step turns each into a
// Constant and drops it from the entry's parameters, so the Program takes only tensors. A tuple
// or list of such values (a shape passed as construct(x, (3, 4))) is one constant the same way;
// one holding a tensor stays a parameter (its items are the Program's inputs).
#include "mycel/ir/abstract.h"
#include "mycel/ir/value.h"
#include "mycel/opt/graph_util.h"
#include "mycel/opt/opt.h"

namespace mycel::opt {
namespace {

// The value an abstract fixes: None, a scalar's value, or a tuple/list of those (else null).
ir::ValuePtr constant_of(const ir::AbstractPtr& a) {
  if (!a) return nullptr;
  if (a->kind() == ir::AbstractKind::kNone) return ir::none();
  if (a->kind() == ir::AbstractKind::kScalar)
    return static_cast<const ir::AbstractScalar&>(*a).value();
  if (a->kind() != ir::AbstractKind::kTuple) return nullptr;
  const auto& t = static_cast<const ir::AbstractTuple&>(*a);
  std::vector<ir::ValuePtr> items;
  for (const ir::AbstractPtr& item : t.items()) {
    ir::ValuePtr v = constant_of(item);
    if (!v) return nullptr;
    items.push_back(std::move(v));
  }
  return t.is_list() ? ir::list(std::move(items)) : ir::tuple(std::move(items));
}

}  // namespace

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
    ir::ValuePtr v = constant_of(a);
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
