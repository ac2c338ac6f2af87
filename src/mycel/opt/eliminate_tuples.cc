// Tuple elimination: a tuple built and taken apart in the same program never exists at run time.
#include "mycel/opt/graph_util.h"
#include "mycel/opt/opt.h"

namespace mycel::opt {

using namespace ir;

namespace {
bool is_tuple_literal(const NodePtr& n) {
  return is_prim_call(n, Prim::kMakeTuple) || is_prim_call(n, Prim::kMakeList);
}

std::optional<int64_t> const_int(const NodePtr& n) {
  const ValuePtr* v = detail::const_value(n);
  if (!v || (*v)->kind() != ValueKind::kInt) return std::nullopt;
  return static_cast<const IntValue&>(**v).value();
}
}  // namespace

bool eliminate_tuples(FuncGraph* root, const OptOptions&) {
  std::unordered_map<const Node*, NodePtr> repl;
  auto current = [&](const NodePtr& n) {
    auto it = repl.find(n.get());
    return it == repl.end() ? n : it->second;
  };
  for (const NodePtr& n : detail::all_applies(root)) {
    auto* a = static_cast<Apply*>(n.get());
    if (is_prim_call(n, Prim::kTupleGetItem)) {
      NodePtr t = current(a->arg(0));
      auto i = const_int(a->arg(1));
      if (!i) continue;
      if (is_tuple_literal(t)) {
        auto* mt = as_apply(t);
        int64_t k = *i < 0 ? *i + static_cast<int64_t>(mt->num_args()) : *i;
        if (k >= 0 && k < static_cast<int64_t>(mt->num_args())) repl[n.get()] = current(mt->arg(k));
      } else if (const ValuePtr* v = detail::const_value(t);
                 v && ((*v)->kind() == ValueKind::kTuple || (*v)->kind() == ValueKind::kList)) {
        const auto& items = static_cast<const SequenceValue&>(**v).items();
        int64_t k = *i < 0 ? *i + static_cast<int64_t>(items.size()) : *i;
        if (k >= 0 && k < static_cast<int64_t>(items.size())) {
          NodePtr c = n->graph()->constant(items[k]);
          c->set_abstract(n->abstract());
          repl[n.get()] = c;
        }
      }
    } else if (is_prim_call(n, Prim::kTupleLen) && is_tuple_literal(current(a->arg(0)))) {
      NodePtr c = n->graph()->constant(
          integer(static_cast<int64_t>(as_apply(current(a->arg(0)))->num_args())));
      c->set_abstract(n->abstract());
      repl[n.get()] = c;
    } else if (is_prim_call(n, Prim::kMakeTuple) && a->num_args() > 0) {
      // make_tuple(t[0], ..., t[n-1]) -> t, when t is a tuple of exactly n items.
      NodePtr t;
      bool ok = true;
      for (size_t k = 0; k < a->num_args() && ok; ++k) {
        NodePtr item = current(a->arg(k));
        auto* g = as_apply(item);
        ok = g && is_prim_call(item, Prim::kTupleGetItem) &&
             const_int(g->arg(1)) == static_cast<int64_t>(k) && (!t || g->arg(0) == t);
        if (ok) t = g->arg(0);
      }
      const auto* ta = t && t->abstract() && t->abstract()->kind() == AbstractKind::kTuple
                           ? static_cast<const AbstractTuple*>(t->abstract().get())
                           : nullptr;
      if (ok && ta && !ta->is_list() && ta->items().size() == a->num_args()) repl[n.get()] = t;
    }
  }
  detail::replace_uses(root, repl);
  return !repl.empty();
}

}  // namespace mycel::opt
