// Algebraic simplification (x * ones_like(.) and x + zeros_like(.) count as x * 1 and x + 0). Each
// rule fires only when the result's abstract equals the operand's (same dtype, same shape: no
// broadcast or promotion is lost). x + 0 turns -0.0 into +0.0 in IEEE arithmetic; the two compare
// equal, and MindSpore simplifies it the same way. A copy of a Parameter that the step assigns
// (`step = global_step + 0`) is a snapshot: a read of the Parameter itself that is ordered after
// the assign sees the new value, so such copies stay.
#include <unordered_set>

#include "mycel/opt/graph_util.h"
#include "mycel/opt/opt.h"

namespace mycel::opt {

using namespace ir;

namespace {
bool same_abstract(const NodePtr& a, const NodePtr& b) {
  return a->abstract() && b->abstract() && a->abstract()->equals(*b->abstract());
}
bool is_const(const NodePtr& n, double v) {
  auto c = detail::uniform_constant(n);
  return c && *c == v;
}
// The permutation transpose applies, with the empty default (reverse) made explicit.
std::optional<std::vector<int64_t>> perm_of(const Apply& a) {
  auto* t = dynamic_cast<const AbstractTensor*>(a.arg(0)->abstract().get());
  if (!t) return std::nullopt;
  const int64_t nd = static_cast<int64_t>(t->shape().size());
  std::vector<int64_t> p =
      static_cast<const OpValue&>(*as_constant(a.callee())->value()).attrs().get_ints("perm");
  if (p.empty())
    for (int64_t i = nd - 1; i >= 0; --i) p.push_back(i);
  for (int64_t& x : p) x = x < 0 ? x + nd : x;
  return p;
}
NodePtr with_attrs(FuncGraph* g, const char* op, std::map<std::string, AttrValue> attrs) {
  const OpDef& d = Registry::get().at(op);
  return g->constant(op_value(&d, make_attrs(d, attrs)));
}
// Parameters written by an assign somewhere in the graphs of root.
std::unordered_set<const Node*> assigned_weights(const std::vector<NodePtr>& applies) {
  std::unordered_set<const Node*> out;
  for (const NodePtr& n : applies)
    if (is_prim_call(n, Prim::kAssign)) out.insert(as_apply(n)->arg(0).get());
  return out;
}
}  // namespace

bool simplify_algebra(FuncGraph* root, const OptOptions&) {
  std::unordered_map<const Node*, NodePtr> repl;
  auto current = [&](const NodePtr& n) {
    auto it = repl.find(n.get());
    return it == repl.end() ? n : it->second;
  };
  const std::vector<NodePtr> applies = detail::all_applies(root);
  const std::unordered_set<const Node*> assigned = assigned_weights(applies);
  for (const NodePtr& n : applies) {
    const OpValue* op = detail::op_of(n);
    if (!op) continue;
    auto* a = static_cast<Apply*>(n.get());
    const std::string& name = op->op().name;
    NodePtr x = a->num_args() > 0 ? current(a->arg(0)) : nullptr;
    NodePtr y = a->num_args() > 1 ? current(a->arg(1)) : nullptr;
    NodePtr r;
    if (name == "mul") {
      if ((is_const(y, 1) || detail::is_op(y, "ones_like")) && same_abstract(n, x))
        r = x;
      else if ((is_const(x, 1) || detail::is_op(x, "ones_like")) && same_abstract(n, y))
        r = y;
    } else if (name == "add") {
      if ((is_const(y, 0) || detail::is_op(y, "zeros_like")) && same_abstract(n, x))
        r = x;
      else if ((is_const(x, 0) || detail::is_op(x, "zeros_like")) && same_abstract(n, y))
        r = y;
    } else if (name == "sub") {
      if (is_const(y, 0) && same_abstract(n, x)) r = x;
    } else if (name == "div") {
      if (is_const(y, 1) && same_abstract(n, x)) r = x;
    } else if (name == "identity" || name == "cast" || name == "reshape") {
      if (same_abstract(n, x))
        r = x;
      else if (name == "reshape" && detail::is_op(x, "reshape"))
        r = detail::make_like(n->graph(), {a->callee(), as_apply(x)->arg(0)}, n);
    } else if (name == "transpose" && detail::is_op(x, "transpose")) {
      auto q = perm_of(*a), p = perm_of(*as_apply(x));
      if (!q || !p || q->size() != p->size()) continue;
      std::vector<int64_t> c(q->size());
      bool identity = true;
      for (size_t i = 0; i < c.size(); ++i) {
        c[i] = (*p)[(*q)[i]];  // out[i] = y[q[i]] = x[p[q[i]]]
        identity &= c[i] == static_cast<int64_t>(i);
      }
      NodePtr src = as_apply(x)->arg(0);
      if (identity && same_abstract(n, src))
        r = src;
      else if (!identity)
        r = detail::make_like(n->graph(), {with_attrs(n->graph(), "transpose", {{"perm", c}}), src},
                              n);
    }
    // Views (reshape) share the Parameter's storage anyway; any other op is a copy to keep.
    if (r && assigned.count(r.get()) && !op->op().view) continue;
    if (r) repl[n.get()] = r;
  }
  detail::replace_uses(root, repl);
  return !repl.empty();
}

}  // namespace mycel::opt
