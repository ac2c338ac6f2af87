// Splitting a compiled gradient at its sensitivity input (see pipeline.h, split_at_sens): the
// nodes that do not depend on the sensitivity are the forward and run first; the values the
// others read from them are the residuals the forward returns and the backward takes back.
#include <unordered_map>
#include <unordered_set>

#include "mycel/core/error.h"
#include "mycel/ir/prim.h"
#include "mycel/pipeline/pipeline.h"

namespace mycel::pipeline {

namespace {

using ir::NodePtr;

bool is_weight(const NodePtr& n) {
  const ir::Parameter* p = ir::as_parameter(n);
  return p && p->is_weight();
}

// Copies nodes of one graph into another: parameters and constants on request, applies in the
// order given (their inputs first).
struct Copier {
  ir::FuncGraph* to;
  std::unordered_map<const ir::Node*, NodePtr> map;

  NodePtr parameter(const NodePtr& p, const std::string& name) {
    NodePtr q = to->add_parameter(name);
    q->set_abstract(p->abstract());
    if (is_weight(p)) ir::as_parameter(q)->bind(ir::as_parameter(p)->bound());
    map[p.get()] = q;
    return q;
  }
  NodePtr get(const NodePtr& n) {
    auto it = map.find(n.get());
    if (it != map.end()) return it->second;
    if (const ir::Constant* c = ir::as_constant(n)) {
      NodePtr k = to->constant(c->value());
      k->set_abstract(n->abstract());
      return map[n.get()] = k;
    }
    if (is_weight(n)) return parameter(n, ir::as_parameter(n)->name());
    MYCEL_THROW(RuntimeError, "[split_at_sens] a value of the gradient graph has no copy");
  }
  void apply(const NodePtr& n) {
    const auto* a = static_cast<const ir::Apply*>(n.get());
    std::vector<NodePtr> in;
    in.reserve(a->inputs().size());
    for (const NodePtr& x : a->inputs()) in.push_back(get(x));
    NodePtr c = to->apply(std::move(in), n->loc());
    c->set_abstract(n->abstract());
    c->set_debug_name(n->debug_name());
    map[n.get()] = c;
  }
  NodePtr tuple(const std::vector<NodePtr>& items) {
    std::vector<ir::AbstractPtr> abs;
    for (const NodePtr& x : items) abs.push_back(x->abstract());
    NodePtr t = to->prim(ir::Prim::kMakeTuple, items);
    t->set_abstract(std::make_shared<ir::AbstractTuple>(std::move(abs)));
    return t;
  }
};

}  // namespace

SplitStep split_at_sens(const Step& step, const Options& o) {
  const ir::FuncGraph& g = *step.graph;
  for (bool c : step.constant_args)
    if (c)
      MYCEL_THROW(NotSupported,
                  "[split_at_sens] every input of the gradient must be a tensor (one was folded)");
  if (!g.used_graphs().empty())
    MYCEL_THROW(NotSupported,
                "[split_at_sens] the gradient graph calls other graphs (control flow); only a "
                "straight-line gradient can be split");
  std::vector<NodePtr> inputs;
  for (const NodePtr& p : g.parameters())
    if (!is_weight(p)) inputs.push_back(p);
  if (inputs.empty())
    MYCEL_THROW(TypeError, "[split_at_sens] the gradient has no sensitivity input");
  const NodePtr sens = inputs.back();
  const ir::Apply* out = ir::as_apply(g.output());
  if (!out || !ir::is_prim_call(g.output(), ir::Prim::kMakeTuple) || out->num_args() != 2)
    MYCEL_THROW(TypeError,
                "[split_at_sens] the gradient must return (value, gradients) (return_value=True)");
  const NodePtr value = out->arg(0), grads = out->arg(1);

  // Everything computed from the sensitivity is the backward.
  const std::vector<NodePtr> order = g.toposort();
  std::unordered_set<const ir::Node*> back{sens.get()};
  for (const NodePtr& n : order)
    for (const NodePtr& x : static_cast<const ir::Apply*>(n.get())->inputs())
      if (back.count(x.get())) {
        back.insert(n.get());
        break;
      }
  if (back.count(value.get()))
    MYCEL_THROW(ValueError, "[split_at_sens] the function's value depends on the sensitivity");

  // Residuals: forward values (and inputs) the backward reads; weights and constants are read
  // where they are, not carried.
  std::vector<NodePtr> residuals;
  std::unordered_set<const ir::Node*> seen;
  auto note = [&](const NodePtr& x) {
    if (back.count(x.get()) || x->is_constant() || is_weight(x) || !seen.insert(x.get()).second)
      return;
    if (!x->abstract() || x->abstract()->kind() != ir::AbstractKind::kTensor)
      MYCEL_THROW(NotSupported, "[split_at_sens] the backward reads a non-tensor forward value (",
                  x->abstract() ? x->abstract()->repr() : std::string("?"),
                  "); only tensors can be carried");
    residuals.push_back(x);
  };
  for (const NodePtr& n : order)
    if (back.count(n.get()))
      for (const NodePtr& x : static_cast<const ir::Apply*>(n.get())->inputs()) note(x);
  note(grads);

  SplitStep s;
  s.module = std::make_unique<ir::Module>();
  s.num_residuals = residuals.size();
  s.value = value->abstract();
  s.grads = grads->abstract();
  // The forward: the same inputs less the sensitivity; returns (value, residuals...).
  s.forward = s.module->add_graph(g.name() + ".forward");
  Copier f{s.forward, {}};
  for (const NodePtr& p : g.parameters())
    if (p != sens && !is_weight(p)) f.parameter(p, ir::as_parameter(p)->name());
  for (const NodePtr& n : order)
    if (!back.count(n.get())) f.apply(n);
  std::vector<NodePtr> fout{f.get(value)};
  for (const NodePtr& r : residuals) fout.push_back(f.get(r));
  s.forward->set_output(f.tuple(fout));
  // The backward: (residuals..., sensitivity) -> the gradients.
  s.backward = s.module->add_graph(g.name() + ".backward");
  Copier b{s.backward, {}};
  for (size_t k = 0; k < residuals.size(); ++k) b.parameter(residuals[k], "r" + std::to_string(k));
  b.parameter(sens, "sens");
  for (const NodePtr& n : order)
    if (back.count(n.get())) b.apply(n);
  s.backward->set_output(b.get(grads));
  s.forward_program = backend::compile(*s.forward, o.backend);
  s.backward_program = backend::compile(*s.backward, o.backend);
  return s;
}

}  // namespace mycel::pipeline
