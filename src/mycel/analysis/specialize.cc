// Entry points (specialize, the compile cache, the compile-time evaluation hook) and the last
// step of specialization: graph constants replaced by the clone their calls asked for, and
// analysis-internal abstracts turned into plain IR abstracts.
#include <map>
#include <unordered_set>

#include "mycel/analysis/engine.h"
#include "mycel/core/error.h"

namespace mycel::analysis {

using namespace ir;

namespace {
ConstEvalHook& hook_slot() {
  static ConstEvalHook h;
  return h;
}
OpaqueOpHook& op_hook_slot() {
  static OpaqueOpHook h;
  return h;
}
}  // namespace

void set_const_eval_hook(ConstEvalHook hook) { hook_slot() = std::move(hook); }
void set_opaque_op_hook(OpaqueOpHook hook) { op_hook_slot() = std::move(hook); }
const OpaqueOpHook& opaque_op_hook() { return op_hook_slot(); }
const ConstEvalHook& const_eval_hook() { return hook_slot(); }

namespace detail {

namespace {
FuncGraph* single_spec(const std::shared_ptr<Site>& site, const SourceLoc& loc) {
  if (!site || site->all_specs().empty()) return nullptr;
  const auto& specs = site->all_specs();
  if (specs.size() > 1 && !site->root()->direct)
    MYCEL_THROW(NotSupported, "[specialize] function @", site->graph->name(), " is called with ",
                specs.size(),
                " different argument types through one value; call it directly instead",
                where(loc));
  return specs[0];
}

AbstractPtr plain(const AbstractPtr& a, const SourceLoc& loc) {
  if (!a) return a;
  if (is_raises(a)) return std::make_shared<AbstractNone>();  // never computed: no register data
  if (is_pending(a))
    MYCEL_THROW(RuntimeError, "[specialize] a value's type could not be inferred", where(loc));
  if (auto* f = dynamic_cast<const FnAbs*>(a.get())) {
    ValuePtr callee = f->callee();
    if (FuncGraph* s = single_spec(f->site(), loc)) callee = graph_value(s);
    std::vector<AbstractPtr> bound;
    for (const auto& b : f->bound_args()) bound.push_back(plain(b, loc));
    return std::make_shared<AbstractFunction>(callee, std::move(bound));
  }
  if (auto* u = dynamic_cast<const FnUnion*>(a.get())) {
    std::vector<ValuePtr> callees;
    for (const auto& f : u->fns())
      callees.push_back(static_cast<const AbstractFunction&>(*plain(f, loc)).callee());
    return std::make_shared<AbstractFunction>(tuple(std::move(callees)));
  }
  if (auto* o = dynamic_cast<const OpaqueAbs*>(a.get()))
    return std::make_shared<AbstractFunction>(o->value());
  if (auto* g = dynamic_cast<const GradFnAbs*>(a.get()))
    return std::make_shared<AbstractFunction>(g->op_ptr());
  if (auto* v = dynamic_cast<const VmapFnAbs*>(a.get()))
    return std::make_shared<AbstractFunction>(v->op_ptr());
  if (auto* t = as_tuple(a)) {
    bool changed = false;
    std::vector<AbstractPtr> items;
    for (const auto& i : t->items()) {
      items.push_back(plain(i, loc));
      changed |= items.back() != i;
    }
    if (!changed) return a;
    if (auto* d = dynamic_cast<const DictAbs*>(a.get()))
      return std::make_shared<DictAbs>(d->keys(), items);
    if (auto* r = as_record(a)) return r->with_items(std::move(items));
    return std::make_shared<AbstractTuple>(std::move(items), t->is_list());
  }
  return a;
}
}  // namespace

void Engine::finalize(FuncGraph* root) {
  (void)root;
  // A graph constant whose calls all went through a context memoized for another constant of the
  // same closure (a tuple of Cells passed to one helper) asked for nothing itself: it takes that
  // closure's clone when there is exactly one.
  std::map<std::pair<FuncGraph*, Context*>, std::shared_ptr<Site>> by_closure;
  for (const auto& [node, site] : sites_) {
    auto& u = by_closure[{site->graph, site->env}];
    if (!u) u = std::make_shared<Site>();
    for (FuncGraph* g : site->all_specs()) u->add(g);
  }
  auto fix = [&](const NodePtr& n, const SourceLoc& loc) -> NodePtr {
    if (!n->is_constant()) return n;
    auto it = sites_.find(n.get());
    if (it != sites_.end() && it->second->all_specs().empty()) {
      const auto& u = by_closure[{it->second->graph, it->second->env}];
      if (u && u->specs.size() == 1) it->second->add(u->specs[0]);
    }
    if (it != sites_.end())
      if (FuncGraph* s = single_spec(it->second, loc)) {
        NodePtr c = std::make_shared<Constant>(nullptr, graph_value(s));
        c->set_abstract(std::make_shared<AbstractFunction>(graph_value(s)));
        return c;
      }
    n->set_abstract(plain(n->abstract(), loc));
    return n;
  };
  // Walk every node reachable from the clones, across graphs (free variables used only by
  // nested graphs are not in their own graph's toposort).
  std::unordered_set<const Node*> seen;
  std::vector<NodePtr> work;
  for (const auto& [key, c] : memo_) {
    FuncGraph* g = c->clone;
    for (const NodePtr& p : g->parameters()) work.push_back(p);
    g->set_output(fix(g->output(), g->output()->loc()));
    work.push_back(g->output());
  }
  while (!work.empty()) {
    NodePtr n = work.back();
    work.pop_back();
    if (!seen.insert(n.get()).second) continue;
    if (auto* a = as_apply(n))
      for (size_t i = 0; i < a->inputs().size(); ++i) {
        NodePtr r = fix(a->inputs()[i], n->loc());
        if (r != a->inputs()[i]) a->set_input(i, r);
        work.push_back(r);
      }
    n->set_abstract(plain(n->abstract(), n->loc()));
  }
}

}  // namespace detail

FuncGraph* specialize(Module& m, FuncGraph* entry, const std::vector<AbstractPtr>& args,
                      const SpecializeOptions& opts, SpecializeStats* stats) {
  detail::Engine e(m, opts, stats);
  return e.run(entry, args);
}

std::string signature_key(const std::vector<AbstractPtr>& args) {
  std::string k;
  for (const auto& a : args) k += detail::key_of(a) + "|";
  return k;
}

}  // namespace mycel::analysis
