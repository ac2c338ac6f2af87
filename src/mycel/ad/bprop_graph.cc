// The backward half of the J transform: g's bprop graph, nested in g_J. It walks g's applies in
// reverse, accumulating sensitivities per original node (whole values, or tuple items one by one so
// tuple_getitem does not build tuples of zeros), and returns (free-variable sensitivities,
// parameter sensitivities...). Ops use their rules through IrBpropBuilder; graph calls call the
// bprop closure their J call returned.
#include "mycel/ad/ad.h"
#include "mycel/ad/detail.h"
#include "mycel/core/error.h"
#include "mycel/ops/bprop.h"

namespace mycel::ad::detail {

using namespace ir;

namespace {
std::string at(const SourceLoc& loc) { return loc.known() ? " (at " + loc.str() + ")" : ""; }

bool is_effect_op(const NodePtr& n) {
  const Apply* a = as_apply(n);
  const Constant* c = a ? as_constant(a->callee()) : nullptr;
  return c && c->value()->kind() == ValueKind::kOp &&
         static_cast<const OpValue&>(*c->value()).op().effect;
}

AbstractPtr item_abstract(const AbstractPtr& a, size_t i) {
  if (!a || a->kind() != AbstractKind::kTuple) return nullptr;
  const auto& items = static_cast<const AbstractTuple&>(*a).items();
  return i < items.size() ? items[i] : nullptr;
}

/// Sensitivities accumulated per original node while walking backwards.
class SensMap {
 public:
  explicit SensMap(FuncGraph* b) : b_(b) {}
  void add(const NodePtr& n, const NodePtr& d) {
    if (!d || n->is_constant() || !differentiable(n->abstract())) return;
    NodePtr& w = whole_[n.get()];
    w = Transformer::add(b_, w, d, n->abstract());
  }
  void add_item(const NodePtr& n, size_t i, const NodePtr& d) {
    AbstractPtr ia = item_abstract(n->abstract(), i);
    if (!d || n->is_constant() || !differentiable(ia)) return;
    NodePtr& w = items_[n.get()][i];
    w = Transformer::add(b_, w, d, ia);
  }
  /// The node's total sensitivity (nullptr if nothing reached it); `fwd` is its forward value,
  /// used for zeros of tuple items nothing reached.
  NodePtr take(const NodePtr& n, const NodePtr& fwd) {
    auto w = whole_.find(n.get());
    auto it = items_.find(n.get());
    if (it == items_.end()) return w == whole_.end() ? nullptr : w->second;
    const auto& items = static_cast<const AbstractTuple&>(*n->abstract()).items();
    std::vector<NodePtr> out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!differentiable(items[i])) {
        out.push_back(Transformer::none());
        continue;
      }
      auto p = it->second.find(i);
      NodePtr part = p == it->second.end() ? nullptr : p->second;
      if (w != whole_.end())
        part = Transformer::add(b_, part, Transformer::getitem(b_, w->second, i), items[i]);
      out.push_back(part ? part
                         : Transformer::zeros(b_, Transformer::getitem(b_, fwd, i), items[i]));
    }
    return b_->prim(Prim::kMakeTuple, std::move(out));
  }
  NodePtr take_or_zeros(const NodePtr& n, const NodePtr& fwd) {
    if (!differentiable(n->abstract())) return Transformer::none();
    NodePtr d = take(n, fwd);
    return d ? d : Transformer::zeros(b_, fwd, n->abstract());
  }

 private:
  FuncGraph* b_;
  std::unordered_map<const Node*, NodePtr> whole_;
  std::unordered_map<const Node*, std::map<size_t, NodePtr>> items_;
};

/// BpropBuilder emitting IR into the bprop graph.
class IrBpropBuilder : public BpropBuilder {
 public:
  IrBpropBuilder(FuncGraph* b, const OpValue& op, const Apply& call,
                 std::vector<NodePtr> fwd_inputs, NodePtr fwd_out, NodePtr dout,
                 std::vector<NodePtr>* effects)
      : b_(b), opv_(op), call_(call), effects_(effects) {
    for (size_t i = 0; i < fwd_inputs.size(); ++i) {
      const AbstractPtr& a = call.arg(i)->abstract();
      in_.push_back(a && a->kind() != AbstractKind::kNone ? add(fwd_inputs[i], a) : GradVar());
    }
    out_ = add(std::move(fwd_out), call.abstract());
    dout_ = add(std::move(dout), call.abstract());
  }
  NodePtr node(const GradVar& v) const {
    if (!v.defined()) return Transformer::none();
    return nodes_.at(v.id());
  }

  const OpDef& op() const override { return opv_.op(); }
  const Attrs& attrs() const override { return opv_.attrs(); }
  GradVar input(size_t i) override { return in_.at(i); }
  GradVar out() override { return out_; }
  GradVar dout() override { return dout_; }
  TensorMeta meta(const GradVar& v) const override { return tensor_meta(abstract(v)); }
  TensorMeta out_meta(size_t k) const override {
    const AbstractPtr& a = call_.abstract();
    return tensor_meta(a->kind() == AbstractKind::kTuple ? item_abstract(a, k) : a);
  }
  size_t tuple_size(const GradVar& v) const override {
    const AbstractPtr& a = abstract(v);
    if (a->kind() != AbstractKind::kTuple)
      MYCEL_THROW(RuntimeError, "[", opv_.op().name, " bprop] tuple_size of a non-tuple");
    return static_cast<const AbstractTuple&>(*a).items().size();
  }
  GradVar call(const std::string& name, std::vector<GradVar> inputs,
               const std::map<std::string, AttrValue>& attrs) override {
    const OpDef& op = Registry::get().at(name);
    if (inputs.size() > op.inputs.size())
      MYCEL_THROW(RuntimeError, "[", opv_.op().name, " bprop] calls ", name, " with ",
                  inputs.size(), " inputs");
    std::vector<NodePtr> in{cst(op_value(&op, make_attrs(op, attrs)))};
    for (const GradVar& v : inputs) in.push_back(node(v));
    while (in.size() < op.inputs.size() + 1) in.push_back(Transformer::none());
    NodePtr n = b_->apply(std::move(in), call_.loc());
    if (op.effect) effects_->push_back(n);  // kept alive even where no gradient reads it
    return add(std::move(n), nullptr);
  }
  GradVar constant(const Tensor& t) override { return add(cst(tensor_value(t)), nullptr); }
  GradVar make_tuple(std::vector<GradVar> items) override {
    std::vector<NodePtr> in;
    for (const GradVar& v : items) in.push_back(node(v));
    return add(b_->prim(Prim::kMakeTuple, std::move(in), call_.loc()), nullptr);
  }
  GradVar tuple_get(const GradVar& t, size_t i) override {
    return add(Transformer::getitem(b_, node(t), i), item_abstract(abstracts_.at(t.id()), i));
  }

 private:
  GradVar add(NodePtr n, AbstractPtr a) {
    nodes_.push_back(std::move(n));
    abstracts_.push_back(std::move(a));
    return GradVar(static_cast<int>(nodes_.size()) - 1);
  }
  const AbstractPtr& abstract(const GradVar& v) const {
    if (!v.defined() || !abstracts_.at(v.id()))
      MYCEL_THROW(RuntimeError, "[", opv_.op().name,
                  " bprop] asks for the shape of a value that is not one of "
                  "the forward call's (only inputs, out and dout have known shapes)");
    return abstracts_[v.id()];
  }
  TensorMeta tensor_meta(const AbstractPtr& a) const {
    if (!a || a->kind() != AbstractKind::kTensor)
      MYCEL_THROW(RuntimeError, "[", opv_.op().name,
                  " bprop] meta() of a value that is not a tensor");
    const auto& t = static_cast<const AbstractTensor&>(*a);
    return {t.shape(), t.dtype()};
  }

  FuncGraph* b_;
  const OpValue& opv_;
  const Apply& call_;
  std::vector<NodePtr>* effects_;
  std::vector<NodePtr> nodes_;
  std::vector<AbstractPtr> abstracts_;
  std::vector<GradVar> in_;
  GradVar out_, dout_;
};
}  // namespace

void Transformer::build_bprop(GraphJ* s, const NodePtr& dout) {
  FuncGraph* g = s->orig;
  FuncGraph* b = s->graph;
  SensMap sens(b);
  sens.add(g->output(), dout);
  // Communication a bprop rule emits (the Receive answering a Send, the AllReduce of a gradient):
  // every rank must run it whether or not its own gradient uses the result, else the peer waits.
  std::vector<NodePtr> effects;
  const std::vector<NodePtr> order = g->toposort();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodePtr& n = *it;
    NodePtr d = sens.take(n, fwd(s, n));
    // A collective's backward runs on every rank, with a zero sensitivity where nothing reached
    // it here, so that the ranks' backward passes issue the same communication.
    if (!d && is_effect_op(n) && differentiable(n->abstract()))
      d = zeros(b, fwd(s, n), n->abstract());
    if (!d) continue;
    const Apply& a = *as_apply(n);
    auto call_site = s->calls.find(n.get());
    if (call_site != s->calls.end()) {
      const CallSite& cs = call_site->second;
      // The callee's vjp (recomputing its forward), called with the forward arguments and d.
      NodePtr fn =
          cst(graph_value(vjp(cs.callee, cs.other ? cs.fvs : std::vector<NodePtr>{})->graph));
      if (cs.other)
        fn = b->prim(Prim::kSwitch, {cs.cond, fn, cst(graph_value(vjp(cs.other, cs.fvs)->graph))},
                     n->loc());
      std::vector<NodePtr> in{fn};
      const Apply& fa = *as_apply(fwd(s, n));
      in.insert(in.end(), fa.inputs().begin() + 1, fa.inputs().end());
      in.push_back(d);
      NodePtr t = b->apply(std::move(in), n->loc());
      NodePtr fv_sens = getitem(b, t, 0);
      for (size_t k = 0; k < cs.fvs.size(); ++k) sens.add(cs.fvs[k], getitem(b, fv_sens, k));
      for (size_t j = 0; j < cs.bound.size(); ++j) sens.add(cs.bound[j], getitem(b, t, 1 + j));
      for (size_t i = 0; i < a.num_args(); ++i)
        sens.add(a.arg(i), getitem(b, t, 1 + cs.bound.size() + i));
      continue;
    }
    const ValuePtr& v = as_constant(a.callee())->value();
    if (v->kind() == ValueKind::kOp) {
      const auto& opv = static_cast<const OpValue&>(*v);
      const BpropFn* rule = BpropRegistry::get().find(opv.op().name);
      if (!rule) {
        if (opv.op().grad == "none") continue;  // not differentiable: no sensitivity flows back
        MYCEL_THROW(NotSupported, "[grad] op '", opv.op().name,
                    "' has no backward rule (gradient policy '", opv.op().grad, "')", at(n->loc()));
      }
      std::vector<NodePtr> fin;
      for (size_t i = 0; i < a.num_args(); ++i) fin.push_back(fwd(s, a.arg(i)));
      IrBpropBuilder builder(b, opv, a, fin, fwd(s, n), d, &effects);
      std::vector<GradVar> grads = (*rule)(builder);
      if (grads.size() != a.num_args())
        MYCEL_THROW(RuntimeError, "[", opv.op().name, " bprop] returned ", grads.size(),
                    " sensitivities for ", a.num_args(), " inputs");
      for (size_t i = 0; i < grads.size(); ++i)
        if (grads[i].defined()) sens.add(a.arg(i), builder.node(grads[i]));
      continue;
    }
    if (v->kind() != ValueKind::kPrim)
      MYCEL_THROW(RuntimeError, "[grad] unexpected callee ", v->repr(), at(n->loc()));
    switch (static_cast<const PrimValue&>(*v).prim()) {
      case Prim::kMakeTuple:
      case Prim::kMakeList:
        for (size_t i = 0; i < a.num_args(); ++i) sens.add(a.arg(i), getitem(b, d, i));
        break;
      case Prim::kTupleGetItem: {
        const Constant* idx = as_constant(a.arg(1));
        if (!idx || idx->value()->kind() != ValueKind::kInt)
          MYCEL_THROW(NotSupported, "[grad] tuple index not known at compile time", at(n->loc()));
        sens.add_item(a.arg(0),
                      static_cast<size_t>(static_cast<const IntValue&>(*idx->value()).value()), d);
        break;
      }
      case Prim::kSwitch: {
        NodePtr c = fwd(s, a.arg(0));
        for (int k = 0; k < 2; ++k) {
          const NodePtr& x = a.arg(1 + k);
          if (x->is_constant() || !differentiable(x->abstract())) continue;
          NodePtr z = zeros(b, fwd(s, x), x->abstract());
          sens.add(x, b->prim(Prim::kSwitch, {c, k == 0 ? d : z, k == 0 ? z : d}, n->loc()));
        }
        break;
      }
      case Prim::kDepend:
        sens.add(a.arg(0), d);
        break;
      default:
        MYCEL_THROW(NotSupported, "[grad] cannot differentiate through ", v->repr(), at(n->loc()));
    }
  }
  std::vector<NodePtr> fv_sens, out;
  for (const NodePtr& v : s->fvs) fv_sens.push_back(sens.take_or_zeros(v, fwd(s, v)));
  out.push_back(b->prim(Prim::kMakeTuple, std::move(fv_sens)));
  for (const NodePtr& p : g->parameters()) out.push_back(sens.take_or_zeros(p, fwd(s, p)));
  NodePtr result = b->prim(Prim::kMakeTuple, std::move(out));
  if (!effects.empty()) {
    // The backward's communication runs after the whole forward (its value first in the tuple:
    // the schedule takes inputs in order), so a Receive answering this rank's Send is never
    // posted before that Send, whatever the data dependencies say.
    effects.insert(effects.begin(), fwd(s, g->output()));
    result = b->prim(Prim::kDepend, {result, b->prim(Prim::kMakeTuple, std::move(effects))});
  }
  b->set_output(result);
}

}  // namespace mycel::ad::detail
