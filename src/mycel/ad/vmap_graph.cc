// The vmap transform: walks a specialized, inlined graph in order, tracking for every value where
// its batch axis is (a tree for tuples), and rewrites each op call that reads a batched value by
// the op's batching rule through IrBatchBuilder, which emits IR and infers each emitted call's
// shape. An op without a rule (or whose rule declines) runs once per item on slices and the
// results are stacked: correct, and noted once per op.
#include <iostream>
#include <mutex>
#include <set>
#include <unordered_map>

#include "mycel/ad/detail.h"
#include "mycel/ad/vmap.h"
#include "mycel/analysis/abstract_util.h"
#include "mycel/core/error.h"
#include "mycel/ops/batch.h"

namespace mycel::ad {

using namespace ir;
using detail::cst;

namespace {

const AbstractTensor* tensor_of(const AbstractPtr& a) {
  return a && a->kind() == AbstractKind::kTensor ? static_cast<const AbstractTensor*>(a.get())
                                                 : nullptr;
}
const AbstractTuple* tuple_of(const AbstractPtr& a) {
  return a && a->kind() == AbstractKind::kTuple ? static_cast<const AbstractTuple*>(a.get())
                                                : nullptr;
}

/// Where the batch is in one value of the batched graph: an axis, or one entry per tuple item.
struct BDim {
  int axis = kNotBatched;
  std::vector<BDim> items;
  bool is_tuple = false;
  bool batched() const {
    if (!is_tuple) return axis != kNotBatched;
    for (const BDim& d : items)
      if (d.batched()) return true;
    return false;
  }
};

BDim from_axes(const BatchAxes& a) {
  BDim d;
  if (!a.leaf) {
    d.is_tuple = true;
    for (const BatchAxes& i : a.items) d.items.push_back(from_axes(i));
  } else {
    d.axis = a.mapped ? static_cast<int>(a.axis) : kNotBatched;
  }
  return d;
}

std::string at(const SourceLoc& loc) { return loc.known() ? " (at " + loc.str() + ")" : ""; }

/// Builds batched IR into graph G; every node it makes carries its (batched) abstract.
class IrBatchBuilder : public BatchBuilder {
 public:
  IrBatchBuilder(FuncGraph* G, int64_t b, SourceLoc loc) : G_(G), b_(b), loc_(std::move(loc)) {}

  /// Sets up the call being batched: its op value and its inputs with their batch dims.
  void begin(const OpValue* op, const std::vector<NodePtr>& inputs, const std::vector<BDim>& dims) {
    op_ = op;
    in_.clear();
    dims_ = dims;
    for (const NodePtr& n : inputs)
      in_.push_back(n && n->abstract() && n->abstract()->kind() != AbstractKind::kNone ? var(n)
                                                                                       : GradVar());
  }
  NodePtr node(const GradVar& v) const { return v.defined() ? nodes_.at(v.id()) : cst(none()); }
  GradVar var(const NodePtr& n) {
    nodes_.push_back(n);
    return GradVar(static_cast<int>(nodes_.size()) - 1);
  }

  const OpDef& op() const override { return op_->op(); }
  const Attrs& attrs() const override { return op_->attrs(); }
  GradVar input(size_t i) override { return i < in_.size() ? in_[i] : GradVar(); }
  int bdim(size_t i) const override {
    return i < dims_.size() && !dims_[i].is_tuple ? dims_[i].axis : kNotBatched;
  }
  std::vector<int> item_bdims(size_t i) const override {
    std::vector<int> out;
    for (const BDim& d : dims_.at(i).items) out.push_back(d.axis);
    return out;
  }
  size_t num_inputs() const override { return in_.size(); }
  int64_t batch_size() const override { return b_; }
  TensorMeta meta(const GradVar& v) const override {
    const AbstractTensor* t = tensor_of(node(v)->abstract());
    if (!t)
      MYCEL_THROW(RuntimeError, "[", op().name,
                  " batching rule] meta() of a value that is not a tensor");
    return {t->shape(), t->dtype()};
  }
  size_t tuple_size(const GradVar& v) const override {
    const AbstractTuple* t = tuple_of(node(v)->abstract());
    return t ? t->items().size() : 1;
  }
  GradVar call(const std::string& name, std::vector<GradVar> inputs,
               const std::map<std::string, AttrValue>& attrs = {}) override {
    const OpDef& op = Registry::get().at(name);
    return emit(op, make_attrs(op, attrs), std::move(inputs));
  }
  GradVar call_self(std::vector<GradVar> inputs,
                    const std::map<std::string, AttrValue>& attrs = {}) override {
    Attrs a = op_->attrs();
    for (const auto& [k, v] : attrs) {
      int i = op().attr_index(k);
      if (i < 0)
        MYCEL_THROW(RuntimeError, "[", op().name, " batching rule] no attribute '", k, "'");
      a.values()[i] = v;
    }
    return emit(op(), make_attrs(op(), a.values()), std::move(inputs));
  }
  GradVar make_tuple(std::vector<GradVar> items) override {
    std::vector<NodePtr> in;
    std::vector<AbstractPtr> abs;
    for (const GradVar& v : items) {
      in.push_back(node(v));
      abs.push_back(in.back()->abstract());
    }
    NodePtr n = G_->prim(Prim::kMakeTuple, std::move(in), loc_);
    n->set_abstract(std::make_shared<AbstractTuple>(std::move(abs)));
    return var(n);
  }
  GradVar after(GradVar value, GradVar effect) override {
    NodePtr v = node(value);
    NodePtr n = G_->prim(Prim::kDepend, {v, node(effect)}, loc_);
    n->set_abstract(v->abstract());
    return var(n);
  }
  GradVar tuple_get(const GradVar& t, size_t i) override {
    const AbstractTuple* ta = tuple_of(node(t)->abstract());
    if (!ta) {
      if (i == 0) return t;  // a single-output op seen as a one-item tuple
      MYCEL_THROW(RuntimeError, "[", op().name, " batching rule] tuple_get of a tensor");
    }
    NodePtr n =
        G_->prim(Prim::kTupleGetItem, {node(t), cst(integer(static_cast<int64_t>(i)))}, loc_);
    n->set_abstract(ta->items().at(i));
    return var(n);
  }

 private:
  GradVar emit(const OpDef& op, Attrs attrs, std::vector<GradVar> inputs) {
    std::vector<TensorMeta> metas;
    std::vector<NodePtr> in{cst(op_value(&op, attrs))};
    for (size_t i = 0; i < inputs.size(); ++i) {
      NodePtr n = node(inputs[i]);
      in.push_back(n);
      if (!inputs[i].defined()) continue;
      if (i < op.inputs.size() && op.inputs[i].variadic) {
        for (const AbstractPtr& a : tuple_of(n->abstract())->items())
          metas.push_back({tensor_of(a)->shape(), tensor_of(a)->dtype()});
      } else {
        metas.push_back(meta(inputs[i]));
      }
    }
    while (in.size() < op.inputs.size() + 1) in.push_back(cst(none()));
    // Absent optional inputs are nullptr for infer, in input order.
    std::vector<const TensorMeta*> ptrs;
    size_t k = 0;
    for (size_t i = 0; i + 1 < in.size(); ++i) {
      const AbstractPtr& a = in[i + 1]->abstract();
      bool absent = !a || a->kind() == AbstractKind::kNone;
      if (i < op.inputs.size() && op.inputs[i].variadic) {
        for (size_t j = 0; j < tuple_of(a)->items().size(); ++j) ptrs.push_back(&metas[k++]);
      } else {
        ptrs.push_back(absent ? nullptr : &metas[k++]);
      }
    }
    std::vector<TensorMeta> outs;
    try {
      outs = infer_checked(op, InferContext{op, ptrs, attrs});
    } catch (const Error& e) {
      MYCEL_THROW(RuntimeError, "vmap: the batching of '", op_ ? op_->op().name : op.name,
                  "' made a call of '", op.name, "' that does not check: ", e.what(), at(loc_));
    }
    NodePtr n = G_->apply(std::move(in), loc_);
    if (outs.size() == 1) {
      n->set_abstract(std::make_shared<AbstractTensor>(outs[0].shape, outs[0].dtype));
    } else {
      std::vector<AbstractPtr> items;
      for (const TensorMeta& m : outs)
        items.push_back(std::make_shared<AbstractTensor>(m.shape, m.dtype));
      n->set_abstract(std::make_shared<AbstractTuple>(std::move(items)));
    }
    return var(n);
  }

  FuncGraph* G_;
  int64_t b_;
  SourceLoc loc_;
  const OpValue* op_ = nullptr;
  std::vector<NodePtr> nodes_;
  std::vector<GradVar> in_;
  std::vector<BDim> dims_;
};

/// Notes once per op (and reason) that it runs once per batch item.
void note_loop(const std::string& op, const std::string& why = "") {
  static std::mutex mu;
  static std::set<std::string> noted;
  std::lock_guard<std::mutex> lock(mu);
  if (!noted.insert(op + why).second) return;
  if (why.empty())
    std::cerr << "mycel vmap: op '" << op
              << "' has no batching rule for these inputs; it runs once per batch "
              << "item (correct, slower)\n";
  else
    std::cerr << "mycel vmap: the batching rule of '" << op << "' failed (" << why
              << "); it runs once per batch "
              << "item instead (correct, slower; please report)\n";
}

/// The call run once per item: batched inputs sliced along axis 0, results stacked on axis 0.
Batched loop_over_batch(IrBatchBuilder& g) {
  const int64_t B = g.batch_size();
  auto slices = [&](GradVar v, int bdim) {
    std::vector<GradVar> out;
    if (bdim == kNotBatched) return std::vector<GradVar>(B, v);
    v = batch::move_axis(g, v, bdim, 0);
    Shape item = g.meta(v).shape;
    item.erase(item.begin());
    GradVar parts = B == 1 ? v : g.call("split", {v}, {{"axis", int64_t{0}}, {"output_num", B}});
    for (int64_t b = 0; b < B; ++b)
      out.push_back(g.reshape_to(B == 1 ? parts : g.tuple_get(parts, b), item));
    return out;
  };
  std::vector<std::vector<GradVar>> per_input;  // [input][item]
  for (size_t i = 0; i < g.num_inputs(); ++i) {
    GradVar x = g.input(i);
    if (!x.defined()) {
      per_input.emplace_back(B, x);
    } else if (g.op().inputs[i].variadic) {
      std::vector<int> dims = g.item_bdims(i);
      std::vector<std::vector<GradVar>> items;
      for (size_t k = 0; k < dims.size(); ++k) items.push_back(slices(g.tuple_get(x, k), dims[k]));
      std::vector<GradVar> tuples;
      for (int64_t b = 0; b < B; ++b) {
        std::vector<GradVar> t;
        for (auto& it : items) t.push_back(it[b]);
        tuples.push_back(g.make_tuple(t));
      }
      per_input.push_back(tuples);
    } else {
      per_input.push_back(slices(x, g.bdim(i)));
    }
  }
  std::vector<GradVar> results;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<GradVar> in;
    for (auto& p : per_input) in.push_back(p[b]);
    results.push_back(g.call_self(in));
  }
  size_t n_out = g.tuple_size(results[0]);
  bool tuple_out = tuple_of(g.node(results[0])->abstract()) != nullptr;
  std::vector<GradVar> stacked;
  for (size_t k = 0; k < n_out; ++k) {
    std::vector<GradVar> items;
    for (GradVar r : results) items.push_back(tuple_out ? g.tuple_get(r, k) : r);
    stacked.push_back(g.call("stack", {g.make_tuple(items)}, {{"axis", int64_t{0}}}));
  }
  return {tuple_out ? g.make_tuple(stacked) : stacked[0], std::vector<int>(n_out, 0)};
}

class VmapTransform {
 public:
  VmapTransform(FuncGraph* f, FuncGraph* G, int64_t b) : f_(f), G_(G), b_(b) {}

  void map(const Node* orig, NodePtr n, BDim d) { image_[orig] = {std::move(n), std::move(d)}; }

  void run() {
    for (const NodePtr& n : f_->toposort()) {
      if (image_.count(n.get())) continue;
      if (n->is_constant()) {
        if (constant_graph(n))
          MYCEL_THROW(NotSupported,
                      "vmap: the function calls a nested function or has control flow left after "
                      "inlining",
                      at(n->loc()), "; vmap supports straight-line code");
        map(n.get(), n, {});
        continue;
      }
      if (n->graph() != f_) {  // a free variable: defined outside the mapped function, shared
        map(n.get(), n, {});
        continue;
      }
      if (n->is_parameter())
        MYCEL_THROW(RuntimeError, "vmap: a parameter without an image", at(n->loc()));
      apply(n);
    }
  }

  const std::pair<NodePtr, BDim>& image(const NodePtr& n) {
    auto it = image_.find(n.get());
    if (it == image_.end() &&
        ((n->is_constant() && !constant_graph(n)) || (!n->is_constant() && n->graph() != f_)))
      it =
          image_.emplace(n.get(), std::make_pair(n, BDim{})).first;  // constants and free variables
    if (it == image_.end())
      MYCEL_THROW(RuntimeError, "vmap: a node used before it is made", at(n->loc()));
    return it->second;
  }

  /// The output with its batch axes moved to out_axes (outputs not batched are broadcast).
  NodePtr place(const NodePtr& v, const BDim& d, const BatchAxes& out, const std::string& where) {
    if (!out.leaf || d.is_tuple) {
      const AbstractTuple* t = tuple_of(v->abstract());
      if (!t)
        MYCEL_THROW(ValueError, "vmap: out_axes ", out.repr(), " for ", where,
                    " expects a tuple, the function returns ", v->abstract()->repr());
      if (!out.leaf && out.items.size() != t->items().size())
        MYCEL_THROW(ValueError, "vmap: out_axes ", out.repr(), " has ", out.items.size(),
                    " entries, but ", where, " has ", t->items().size(), " items");
      std::vector<NodePtr> items;
      std::vector<AbstractPtr> abs;
      for (size_t i = 0; i < t->items().size(); ++i) {
        NodePtr item = G_->prim(Prim::kTupleGetItem, {v, cst(integer(static_cast<int64_t>(i)))});
        item->set_abstract(t->items()[i]);
        BDim di = d.is_tuple ? d.items.at(i) : BDim{};
        items.push_back(
            place(item, di, out.leaf ? out : out.items[i], where + "[" + std::to_string(i) + "]"));
        abs.push_back(items.back()->abstract());
      }
      NodePtr n = G_->prim(Prim::kMakeTuple, std::move(items));
      n->set_abstract(std::make_shared<AbstractTuple>(std::move(abs), t->is_list()));
      return n;
    }
    if (!out.mapped) {
      if (d.axis != kNotBatched)
        MYCEL_THROW(ValueError, "vmap: out_axes is None for ", where,
                    ", but it depends on the mapped inputs "
                    "(give it an axis)");
      return v;
    }
    const AbstractTensor* t = tensor_of(v->abstract());
    if (!t)
      MYCEL_THROW(ValueError, "vmap: out_axes ", out.axis, " for ", where,
                  ", which is not a tensor: ", v->abstract()->repr());
    IrBatchBuilder g(G_, b_, {});
    GradVar x = g.var(v);
    int64_t r = static_cast<int64_t>(t->shape().size()) + (d.axis == kNotBatched);
    if (out.axis < -r || out.axis >= r)
      MYCEL_THROW(ValueError, "vmap: out_axes axis ", out.axis, " for ", where,
                  " is out of range for its batched shape (rank ", r, ")");
    int to = static_cast<int>(out.axis < 0 ? out.axis + r : out.axis);
    x = d.axis == kNotBatched ? batch::move_axis(g, batch::to_front(g, x, kNotBatched), 0, to)
                              : batch::move_axis(g, x, d.axis, to);
    return g.node(x);
  }

 private:
  void apply(const NodePtr& n) {
    const Apply& a = *as_apply(n);
    std::vector<NodePtr> in;
    std::vector<BDim> dims;
    bool batched = false;
    for (size_t i = 0; i < a.num_args(); ++i) {
      const auto& [m, d] = image(a.arg(i));
      in.push_back(m);
      dims.push_back(d);
      batched |= d.batched();
    }
    const Constant* c = as_constant(a.callee());
    if (!c || c->value()->kind() == ValueKind::kGraph) {
      if (!batched && c) return copy(n, in, {});
      MYCEL_THROW(
          NotSupported,
          "vmap: the function calls a nested function or has control flow left after inlining",
          at(n->loc()), "; vmap supports straight-line code");
    }
    const ValuePtr& v = c->value();
    if (v->kind() == ValueKind::kPrim)
      return prim(n, static_cast<const PrimValue&>(*v).prim(), in, dims, batched);
    if (v->kind() != ValueKind::kOp || !batched) {
      if (batched)
        MYCEL_THROW(NotSupported, "vmap: cannot batch a call of ", v->repr(), at(n->loc()));
      return copy(n, in, {});
    }
    const auto& opv = static_cast<const OpValue&>(*v);
    // A collective is batched by its rule as one call or not at all: a per-item loop would
    // issue batch-size calls, and ranks mapping different batch sizes would deadlock.
    const bool effect = opv.op().effect;
    if (effect && !BatchRegistry::get().has_own(opv.op().name))
      MYCEL_THROW(NotSupported, "vmap: op '", opv.op().name,
                  "' talks to other processes and cannot be batched", at(n->loc()));
    IrBatchBuilder g(G_, b_, n->loc());
    g.begin(&opv, in, dims);
    Batched out;
    std::string failed;
    if (const BatchRuleFn* rule = BatchRegistry::get().find(opv.op())) {
      try {
        out = (*rule)(g);
      } catch (const Error& e) {  // a rule's bug must not cost a correct result: the loop is right
        failed = e.what();
        out = {};
      }
    }
    if (!out.value.defined() && effect)
      MYCEL_THROW(NotSupported, "vmap: op '", opv.op().name,
                  "' talks to other processes and cannot be batched ", "here (",
                  failed.empty() ? "an unmapped or 0-d input" : failed, ")", at(n->loc()));
    if (!out.value.defined()) {
      note_loop(opv.op().name, failed);
      out = loop_over_batch(g);
    }
    BDim d;
    const AbstractTuple* t = tuple_of(g.node(out.value)->abstract());
    if (t) {
      d.is_tuple = true;
      for (int k : out.dims) d.items.push_back(BDim{k, {}, false});
    } else {
      d.axis = out.dims.at(0);
    }
    map(n.get(), g.node(out.value), d);
  }

  void copy(const NodePtr& n, const std::vector<NodePtr>& in, BDim d) {
    std::vector<NodePtr> inputs{as_apply(n)->callee()};
    inputs.insert(inputs.end(), in.begin(), in.end());
    NodePtr m = G_->apply(std::move(inputs), n->loc());
    m->set_abstract(n->abstract());
    map(n.get(), m, std::move(d));
  }

  void prim(const NodePtr& n, Prim p, const std::vector<NodePtr>& in, const std::vector<BDim>& dims,
            bool batched) {
    switch (p) {
      case Prim::kMakeTuple:
      case Prim::kMakeList: {
        std::vector<NodePtr> inputs{as_apply(n)->callee()};
        inputs.insert(inputs.end(), in.begin(), in.end());
        std::vector<AbstractPtr> abs;
        for (const NodePtr& x : in) abs.push_back(x->abstract());
        NodePtr m = G_->apply(std::move(inputs), n->loc());
        m->set_abstract(std::make_shared<AbstractTuple>(std::move(abs), p == Prim::kMakeList));
        BDim d;
        d.is_tuple = true;
        d.items = dims;
        return map(n.get(), m, d);
      }
      case Prim::kTupleGetItem: {
        const Constant* idx = as_constant(as_apply(n)->arg(1));
        if (!idx || idx->value()->kind() != ValueKind::kInt)
          MYCEL_THROW(NotSupported, "vmap: a tuple index not known at compile time", at(n->loc()));
        size_t i = static_cast<size_t>(static_cast<const IntValue&>(*idx->value()).value());
        NodePtr m = G_->prim(Prim::kTupleGetItem, {in[0], in[1]}, n->loc());
        m->set_abstract(tuple_of(in[0]->abstract())->items().at(i));
        return map(n.get(), m, dims[0].is_tuple ? dims[0].items.at(i) : BDim{});
      }
      case Prim::kDepend: {
        NodePtr m = G_->prim(Prim::kDepend, in, n->loc());
        m->set_abstract(in[0]->abstract());
        return map(n.get(), m, dims[0]);
      }
      case Prim::kAssign:
        // A mapped target (a Parameter passed with in_axes k: item i is its slice i along k)
        // takes the value with its batch moved to k, an unmapped value broadcast over the
        // batch. An unmapped target cannot hold per-item values: that stays an error below.
        if (batched && !dims[0].is_tuple && dims[0].axis != kNotBatched && !dims[1].is_tuple) {
          IrBatchBuilder g(G_, b_, n->loc());
          g.begin(nullptr, {in[0], in[1]}, {dims[0], dims[1]});
          GradVar v = batch::to_front(g, g.input(1), dims[1].axis);
          v = batch::move_axis(g, v, 0, dims[0].axis);
          NodePtr m = G_->prim(Prim::kAssign, {in[0], g.node(v)}, n->loc());
          m->set_abstract(in[0]->abstract());
          return map(n.get(), m, dims[0]);
        }
        break;
      default:
        break;
    }
    if (!batched) return copy(n, in, {});
    // Shapes, ranks and dtypes of one item are known after specialization: its value as a constant.
    const AbstractPtr& a = n->abstract();
    if ((p == Prim::kShape || p == Prim::kRank || p == Prim::kDTypeOf) && a &&
        a->kind() == AbstractKind::kScalar) {
      if (const ValuePtr& v = static_cast<const AbstractScalar&>(*a).value())
        return map(n.get(), cst(v), {});
    }
    if (p == Prim::kShape && a && a->kind() == AbstractKind::kTuple) {
      std::vector<ValuePtr> items;
      for (const AbstractPtr& i : tuple_of(a)->items()) {
        if (i->kind() != AbstractKind::kScalar || !static_cast<const AbstractScalar&>(*i).value())
          break;
        items.push_back(static_cast<const AbstractScalar&>(*i).value());
      }
      if (items.size() == tuple_of(a)->items().size())
        return map(n.get(), cst(tuple(std::move(items))), {});
    }
    MYCEL_THROW(NotSupported, "vmap: cannot batch ", prim_name(p),
                " of a value that depends on the mapped inputs", at(n->loc()));
  }

  FuncGraph* f_;
  FuncGraph* G_;
  int64_t b_;
  std::unordered_map<const Node*, std::pair<NodePtr, BDim>> image_;
};

}  // namespace

std::vector<AbstractPtr> unbatched_inputs(const std::vector<AbstractPtr>& batched,
                                          const VmapSpec& spec, int64_t& batch_size,
                                          std::vector<BatchAxes>& expanded) {
  return analysis::detail::unbatched_inputs(batched, spec.in_axes, batch_size, expanded);
}

namespace {

FuncGraph* build(FuncGraph* G, FuncGraph* f, const VmapSpec& spec,
                 const std::vector<BatchAxes>& expanded, const std::vector<AbstractPtr>& batched,
                 int64_t batch_size) {
  VmapTransform t(f, G, batch_size);
  size_t k = 0;
  for (const NodePtr& p : f->parameters()) {
    NodePtr q = G->add_parameter(as_parameter(p)->name());
    q->set_loc(p->loc());
    if (as_parameter(p)->is_weight()) {  // a Cell's Parameters are shared by every item
      as_parameter(q)->bind(as_parameter(p)->bound());
      q->set_abstract(p->abstract());
      t.map(p.get(), q, {});
      continue;
    }
    if (k >= batched.size() || k >= expanded.size())
      MYCEL_THROW(ValueError, "vmap: the function takes more inputs than the ", batched.size(),
                  " it is called with");
    q->set_abstract(batched[k]);
    t.map(p.get(), q, from_axes(expanded[k]));
    ++k;
  }
  t.run();
  const auto& [out, d] = t.image(f->output());
  G->set_output(t.place(out, d, spec.out_axes, "the output"));
  return G;
}

}  // namespace

FuncGraph* vmap_graph(FuncGraph* f, const VmapSpec& spec, const std::vector<BatchAxes>& expanded,
                      const std::vector<AbstractPtr>& batched, int64_t batch_size) {
  if (f->parent())
    MYCEL_THROW(RuntimeError, "vmap: vmap_graph needs a top-level graph, @", f->name(),
                " is nested");
  return build(f->module()->add_graph(f->name() + "_vmap"), f, spec, expanded, batched, batch_size);
}

FuncGraph* vmap_graph_in(FuncGraph* parent, FuncGraph* f, const VmapSpec& spec,
                         const std::vector<BatchAxes>& expanded,
                         const std::vector<AbstractPtr>& batched, int64_t batch_size) {
  return build(f->module()->add_graph(f->name() + "_vmap", parent), f, spec, expanded, batched,
               batch_size);
}

}  // namespace mycel::ad
