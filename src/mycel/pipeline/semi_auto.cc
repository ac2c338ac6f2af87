// The semi-auto parallel pass (see semi_auto.h): layouts per value, redistributions and op
// collectives inserted as IR nodes, local attributes and shapes for the rewritten ops.
#include "mycel/pipeline/semi_auto.h"

#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_set>

#include "mycel/core/error.h"
#include "mycel/opt/graph_util.h"
#include "mycel/parallel/redistribution.h"
#include "mycel/parallel/search/op_model.h"
#include "mycel/pipeline/strategy_search.h"

namespace mycel::parallel {

using namespace ir;
using opt::detail::op_of;
using shard::TensorLayout;

SemiAutoConfig& semi_auto_config() {
  static SemiAutoConfig c;
  return c;
}

namespace {

constexpr const char* kHint = "shard_hint";
constexpr const char* kSliced = "sliced_weight";

const AbstractTensor* tensor_abs(const NodePtr& n) {
  return n && n->abstract() && n->abstract()->kind() == AbstractKind::kTensor
             ? static_cast<const AbstractTensor*>(n->abstract().get())
             : nullptr;
}

bool is_hint(const NodePtr& n) {
  const OpValue* v = op_of(n);
  return v && v->op().name == kHint;
}

// A hint an op reading it directly takes as its strategy for that input (Primitive.shard's);
// layout_only hints (Cell.shard's) only constrain the value.
bool is_op_hint(const NodePtr& n) {
  return is_hint(n) && !op_of(n)->attrs().get_bool("layout_only");
}

// An op node seen as a sharding rule sees it: input metas (non-tensors absent), attributes and
// output metas.
struct OpView {
  const OpDef* op;
  Attrs attrs;
  std::vector<TensorMeta> in_store;
  std::vector<const TensorMeta*> ins;
  std::vector<TensorMeta> outs;
  bool tuple = false;

  // `split`: the layouts of the values already split (their abstracts are local shapes; the
  // rule sees the global ones).
  OpView(const NodePtr& n, const OpValue& v,
         const std::unordered_map<const Node*, TensorLayout>* split = nullptr)
      : op(&v.op()), attrs(v.attrs()) {
    const Apply* a = as_apply(n);
    in_store.resize(a->num_args());
    for (size_t i = 0; i < a->num_args(); ++i) {
      const AbstractTensor* t = tensor_abs(a->arg(i));
      if (t) in_store[i] = {t->shape(), t->dtype()};
      if (t && split)
        if (auto it = split->find(a->arg(i).get()); it != split->end())
          in_store[i].shape = it->second.shape;
      ins.push_back(t ? &in_store[i] : nullptr);
    }
    if (const AbstractTensor* t = tensor_abs(n)) {
      outs.push_back({t->shape(), t->dtype()});
    } else if (n->abstract() && n->abstract()->kind() == AbstractKind::kTuple) {
      tuple = true;
      for (const AbstractPtr& it : static_cast<const AbstractTuple*>(n->abstract().get())->items())
        if (it->kind() == AbstractKind::kTensor) {
          auto* t = static_cast<const AbstractTensor*>(it.get());
          outs.push_back({t->shape(), t->dtype()});
        }
    }
    // n's abstract may come from local inputs (full_batch=False specializes with this rank's
    // block): the rule sees the outputs of the global inputs.
    bool global_in = false;
    for (size_t i = 0; split && i < a->num_args(); ++i)
      global_in = global_in || split->count(a->arg(i).get());
    if (global_in) {
      try {
        std::vector<TensorMeta> o = infer_checked(*op, InferContext{*op, ins, attrs});
        if (o.size() == outs.size()) outs = std::move(o);
      } catch (const std::exception&) {
      }  // the rule reports what does not fit
    }
  }
  shard::ShardContext ctx(int64_t n) const { return {*op, ins, attrs, outs, n}; }
  bool shardable() const {
    if (op->effect || op->name == kHint || outs.empty()) return false;
    bool any = false;
    for (const TensorMeta* m : ins) {
      if (!m) continue;
      any = true;
      for (int64_t d : m->shape)
        if (d < 0) return false;  // dynamic shapes are not split
    }
    return any;
  }
};

// Sets n's abstract to what the op infers from its arguments' abstracts.
void infer_into(const NodePtr& n, const OpDef& op, const Attrs& attrs) {
  const Apply* a = as_apply(n);
  std::vector<TensorMeta> store(a->num_args());
  std::vector<const TensorMeta*> ptrs;
  for (size_t i = 0; i < a->num_args(); ++i) {
    const AbstractTensor* t = tensor_abs(a->arg(i));
    if (t) store[i] = {t->shape(), t->dtype()};
    ptrs.push_back(t ? &store[i] : nullptr);
  }
  std::vector<TensorMeta> outs = infer_checked(op, InferContext{op, ptrs, attrs});
  const bool tuple = op.tuple_output || outs.size() != 1;
  if (!tuple) {
    n->set_abstract(std::make_shared<AbstractTensor>(outs[0].shape, outs[0].dtype));
    return;
  }
  std::vector<AbstractPtr> items;
  for (const TensorMeta& m : outs)
    items.push_back(std::make_shared<AbstractTensor>(m.shape, m.dtype));
  n->set_abstract(std::make_shared<AbstractTuple>(std::move(items)));
}

NodePtr emit(FuncGraph* g, const std::string& name, const std::map<std::string, AttrValue>& attrs,
             std::vector<NodePtr> args, const NodePtr& like) {
  const OpDef& op = Registry::get().at(name);
  Attrs a = make_attrs(op, attrs);
  std::vector<NodePtr> in{g->constant(op_value(&op, a))};
  in.insert(in.end(), args.begin(), args.end());
  NodePtr n = g->apply(std::move(in), like->loc());
  infer_into(n, op, a);
  return n;
}

bool replicated_layout(const TensorLayout& l) {
  for (int a : l.tensor_map)
    if (a >= 0) return false;
  return l.partial.empty();
}

[[noreturn]] void rethrow_at(const std::exception& e, const NodePtr& n) {
  std::string msg = e.what();
  if (n->loc().known())
    msg += "\n  at " + n->loc().str() + (n->loc().text ? ": " + *n->loc().text : "");
  MYCEL_THROW(ValueError, msg);
}

std::vector<std::pair<std::string, std::string>>& applied() {
  static std::vector<std::pair<std::string, std::string>> a;
  return a;
}

std::string strategy_str(const shard::Strategy& s) {
  std::string o = "(";
  for (size_t i = 0; i < s.size(); ++i) {
    o += (i ? ", (" : "(");
    for (size_t d = 0; d < s[i].size(); ++d) o += (d ? ", " : "") + std::to_string(s[i][d]);
    o += s[i].size() == 1 ? ",)" : ")";
  }
  return o + (s.size() == 1 ? ",)" : ")");
}

using WeightMap = std::map<const Storage*, std::pair<Tensor, TensorLayout>>;
WeightMap& planned_weights() {
  static WeightMap m;
  return m;
}

// The tensor a weight Parameter node is bound to, or null.
const Tensor* bound_weight(const Node* n) {
  if (!n || !n->is_parameter()) return nullptr;
  const auto* p = static_cast<const ir::Parameter*>(n);
  return p->is_weight() ? &p->bound() : nullptr;
}

struct Pass {
  FuncGraph* g;
  const SemiAutoConfig& cfg;
  const StrategyMap& chosen;
  bool propagate;
  std::unordered_set<const Node*> arg_hints;  // hints read as an op's strategy (not constraints)
  std::unordered_map<const Node*, TensorLayout> layout;  // split values (absent: whole)
  std::unordered_map<const Node*, std::vector<TensorLayout>> tuple_layout;
  std::unordered_map<const Node*, std::vector<shard::Comm>> pending;  // comms after tuple_getitem
  std::unordered_map<const Node*, NodePtr> whole_of, repl;
  bool changed = false;

  NodePtr resolve(NodePtr n) {
    for (auto it = repl.find(n.get()); it != repl.end(); it = repl.find(n.get())) n = it->second;
    return n;
  }
  TensorLayout layout_of(const NodePtr& n, const TensorMeta& m) const {
    auto it = layout.find(n.get());
    return it != layout.end() ? it->second : shard::replicated(m.shape, cfg.device_num);
  }
  NodePtr to_layout(NodePtr x, const TensorLayout& from, const TensorLayout& to, DType dt,
                    const NodePtr& like) {
    RedistPlan p = plan_redistribution(from, to, cfg.rank, dt);
    for (const RedistStep& s : p.steps) {
      std::map<std::string, AttrValue> a = s.attrs;
      if (!s.group.empty()) a["group"] = group_for(world_ranks(s.group));
      x = emit(g, s.op, a, {x}, like);
    }
    return x;
  }
  // The pass's ranks (0 .. device_num - 1) as world ranks, for the groups it creates.
  std::vector<int64_t> world_ranks(std::vector<int64_t> ranks) const {
    for (int64_t& r : ranks) r += cfg.rank_base;
    return ranks;
  }
  // A whole weight the pass splits: the first layout asked of it is where its slice would live.
  void plan_weight(const NodePtr& w, const TensorLayout& want) {
    const Tensor* t = bound_weight(w.get());
    if (t && !layout.count(w.get()) && !replicated_layout(want))
      planned_weights().emplace(t->storage().get(), std::make_pair(*t, want));
  }
  void set_layout(const NodePtr& n, const TensorLayout& l) {
    if (!replicated_layout(l)) layout[n.get()] = l;
  }
  // The whole value of n (gathered once, reused by every such use).
  NodePtr whole(const NodePtr& n) {
    auto it = layout.find(n.get());
    if (it == layout.end()) {
      if (tuple_layout.count(n.get()))
        MYCEL_THROW(NotSupported,
                    "[semi_auto_parallel] the tuple output of a split op is used whole; use its "
                    "items (x[0], x[1], ...) instead");
      return n;
    }
    auto w = whole_of.find(n.get());
    if (w != whole_of.end()) return w->second;
    NodePtr x = to_layout(n, it->second, shard::replicated(it->second.shape, cfg.device_num),
                          tensor_abs(n)->dtype(), n);
    whole_of[n.get()] = x;
    return x;
  }
  // The op's collectives on output value x (comms of `output`).
  NodePtr apply_comms(NodePtr x, const shard::ShardPlan& p, int output, const NodePtr& like) {
    for (const shard::Comm& c : p.comms) {
      if (c.output != output) continue;
      const std::vector<int64_t> ranks = p.device.group(cfg.rank, c.axes);
      const std::string group = group_for(world_ranks(ranks));
      const bool mean = c.reduce_op == "mean";
      x = emit(g, c.op, {{"reduce_op", mean ? std::string("sum") : c.reduce_op}, {"group", group}},
               {x}, like);
      if (mean) {
        const DType dt = tensor_abs(x)->dtype();
        NodePtr k =
            g->constant(tensor_value(Tensor::scalar(static_cast<double>(ranks.size()), dt)));
        k->set_abstract(std::make_shared<AbstractTensor>(Shape{}, dt));
        x = emit(g, "div", {}, {x, k}, like);
      }
    }
    return x;
  }

  // The cheapest strategy for an op reading split values.
  std::optional<shard::Strategy> pick(const NodePtr& n, const OpView& v) {
    const shard::ShardContext c = v.ctx(cfg.device_num);
    const Apply* a = as_apply(n);
    bool reads_split = false;
    for (size_t i = 0; i < a->num_args(); ++i)
      reads_split = reads_split || layout.count(a->arg(i).get());
    if (!reads_split || v.op->random) return std::nullopt;
    // Lexicographic: bytes moved, then redistribution steps (keep the layout: a free local slice
    // now may cost a gather later), then flops.
    using Score = std::tuple<double, size_t, double>;
    std::optional<Score> best_score;
    std::optional<shard::Strategy> best;
    for (const shard::Strategy& s : shard::strategies(c)) {
      shard::ShardPlan p;
      try {
        p = shard::plan(c, s);
      } catch (const ValueError&) {
        continue;
      }
      double bytes = 0;
      size_t steps = 0;
      for (size_t i = 0; i < a->num_args(); ++i)
        if (v.ins[i]) {
          RedistPlan r =
              plan_redistribution(layout_of(a->arg(i), *v.ins[i]), p.inputs[i], 0, v.ins[i]->dtype);
          bytes += static_cast<double>(r.comm_bytes);
          steps += r.steps.size();
        }
      for (const shard::Comm& k : p.comms) bytes += static_cast<double>(k.bytes);
      const Score score{bytes, steps, shard::cost(c, p).flops};
      if (!best_score || score < *best_score) {
        best_score = score;
        best = s;
      }
    }
    return best;
  }

  void rewrite(const NodePtr& n, const OpView& v, const shard::Strategy& s) {
    Apply* a = as_apply(n);
    shard::ShardPlan p;
    try {
      p = shard::plan(v.ctx(cfg.device_num), s);
    } catch (const std::exception& e) {
      rethrow_at(e, n);
    }
    for (size_t i = 0; i < a->num_args(); ++i) {
      if (!v.ins[i]) continue;
      NodePtr arg = a->arg(i);
      if (tuple_layout.count(arg.get())) arg = whole(arg);  // raises: a tuple is not a tensor input
      plan_weight(arg, p.inputs[i]);
      a->set_input(i + 1,
                   to_layout(arg, layout_of(arg, *v.ins[i]), p.inputs[i], v.ins[i]->dtype, n));
    }
    applied().emplace_back(v.op->name, strategy_str(s));
    Attrs local = v.attrs;
    for (auto& [name, val] : p.local_int_attrs)
      local.values()[static_cast<size_t>(v.op->attr_index(name))] = val;
    a->set_input(0, g->constant(op_value(v.op, local)));
    infer_into(n, *v.op, local);
    if (!v.tuple) {
      NodePtr x = apply_comms(n, p, 0, n);
      set_layout(x, p.outputs[0]);
      if (x != n) repl[n.get()] = x;
    } else {
      tuple_layout[n.get()] = p.outputs;
      pending[n.get()] = p.comms;
    }
    changed = true;
  }

  void run() {
    // full_batch=False: each data input holds this rank's block of the global batch.
    if (!cfg.full_batch)
      for (const NodePtr& prm : g->parameters()) {
        const ir::Parameter* q = as_parameter(prm);
        const AbstractTensor* t = tensor_abs(prm);
        if (!q || q->is_weight() || !t || t->shape().empty() || t->shape()[0] < 0) continue;
        Shape global = t->shape();
        global[0] *= cfg.device_num;
        shard::Dims split(global.size(), 1);
        split[0] = cfg.device_num;
        set_layout(prm, shard::layout_from_dims(global, split, cfg.device_num));
      }
    // Hints read directly by an op are that op's strategy; other hints constrain a value.
    for (const NodePtr& n : g->toposort())
      if (const Apply* a = as_apply(n); a && op_of(n) && !is_hint(n) && chosen.count(n.get()))
        for (size_t i = 0; i < a->num_args(); ++i)
          if (is_op_hint(a->arg(i))) arg_hints.insert(a->arg(i).get());
    for (const NodePtr& n : g->toposort()) {
      Apply* a = as_apply(n);
      if (!a) continue;
      for (size_t i = 1; i < a->inputs().size(); ++i) a->set_input(i, resolve(a->inputs()[i]));
      const OpValue* ov = op_of(n);
      if (ov && ov->op().name == kSliced) {  // a weight stored as slices: read the slice in place
        const Attrs& at = ov->attrs();
        TensorLayout l;
        l.device.dims = at.get_ints("device_matrix");
        for (int64_t m : at.get_ints("tensor_map")) l.tensor_map.push_back(static_cast<int>(m));
        l.shape = at.get_ints("shape");
        if (l.device.size() != cfg.device_num)
          rethrow_at(ValueError("[slice_parameters] a weight stored as slices for " +
                                std::to_string(l.device.size()) +
                                " devices is read on device_num " + std::to_string(cfg.device_num)),
                     n);
        layout[a->arg(0).get()] = l;
        repl[n.get()] = a->arg(0);
        changed = true;
        continue;
      }
      if (ov && ov->op().name == kHint) {
        NodePtr x = a->arg(0);
        if (!arg_hints.count(n.get())) {  // a layout constraint: redistribute x to it
          const AbstractTensor* t = tensor_abs(x);
          const TensorLayout have =
              layout_of(x, {t->shape(), t->dtype()});  // x may be split already
          TensorLayout want;
          try {
            want = shard::layout_from_dims(have.shape, ov->attrs().get_ints("strategy"),
                                           cfg.device_num);
          } catch (const std::exception& e) {
            rethrow_at(e, n);
          }
          plan_weight(x, want);
          x = to_layout(x, have, want, t->dtype(), n);
          set_layout(x, want);
        }
        repl[n.get()] = x;
        changed = true;
        continue;
      }
      if (is_prim_call(n, Prim::kTupleGetItem) && tuple_layout.count(a->arg(0).get())) {
        const ValuePtr* iv = opt::detail::const_value(a->arg(1));
        const int64_t k = iv && (*iv)->kind() == ValueKind::kInt
                              ? static_cast<const IntValue&>(**iv).value()
                              : -1;
        const auto& outs = tuple_layout[a->arg(0).get()];
        if (k < 0 || k >= static_cast<int64_t>(outs.size()))
          MYCEL_THROW(NotSupported,
                      "[semi_auto_parallel] tuple_getitem of a split op needs a constant index");
        // The item's abstract follows the rewritten (local) tuple.
        if (auto src = a->arg(0)->abstract(); src && src->kind() == AbstractKind::kTuple)
          n->set_abstract(
              static_cast<const AbstractTuple*>(src.get())->items().at(static_cast<size_t>(k)));
        shard::ShardPlan p;
        p.device = outs[static_cast<size_t>(k)].device;
        p.comms = pending[a->arg(0).get()];
        NodePtr x = apply_comms(n, p, static_cast<int>(k), n);
        set_layout(x, outs[static_cast<size_t>(k)]);
        if (x != n) repl[n.get()] = x;
        continue;
      }
      if (ov) {
        OpView v(n, *ov, &layout);
        if (v.shardable() && shard::rule_of(*v.op)) {
          std::optional<shard::Strategy> s;
          if (auto it = chosen.find(n.get()); it != chosen.end())
            s = it->second;
          else if (propagate)
            s = pick(n, v);
          if (s) {
            rewrite(n, v, *s);
            continue;
          }
        }
      }
      // Anything else reads whole values.
      for (size_t i = 1; i < a->inputs().size(); ++i)
        if (layout.count(a->inputs()[i].get()) || tuple_layout.count(a->inputs()[i].get())) {
          a->set_input(i, whole(a->inputs()[i]));
          changed = true;
        }
    }
    NodePtr out = resolve(g->output());
    if (layout.count(out.get()) || tuple_layout.count(out.get())) out = whole(out);
    if (out != g->output()) {
      g->set_output(out);
      changed = true;
    }
  }
};

// The strategy each op node reads from shard_hint arguments (unhinted tensor inputs: whole).
StrategyMap hinted(FuncGraph* g) {
  StrategyMap m;
  for (const NodePtr& n : g->toposort()) {
    const Apply* a = as_apply(n);
    if (!a || !op_of(n) || is_hint(n)) continue;
    shard::Strategy s;
    bool any = false;
    for (size_t i = 0; i < a->num_args(); ++i) {
      if (is_op_hint(a->arg(i))) {
        s.push_back(op_of(a->arg(i))->attrs().get_ints("strategy"));
        any = true;
      } else if (const AbstractTensor* t = tensor_abs(a->arg(i))) {
        s.push_back(shard::Dims(t->shape().size(), 1));
      } else {
        s.push_back({});
      }
    }
    if (any) m[n.get()] = s;
  }
  return m;
}

// Hints, or weights stored as slices (which only the pass reads in place).
bool has_hints(FuncGraph* g) {
  for (const NodePtr& n : g->toposort())
    if (const OpValue* v = op_of(n); v && (v->op().name == kHint || v->op().name == kSliced))
      return true;
  return false;
}

std::string& last_report() {
  static std::string r;
  return r;
}

// The function S of a gradient call grad_op(S, w)(x...), or null.
FuncGraph* grad_target(const NodePtr& n) {
  const Apply* a = as_apply(n);
  const Apply* made = a ? as_apply(a->callee()) : nullptr;
  const Constant* c = made ? as_constant(made->callee()) : nullptr;
  return c && c->value()->kind() == ValueKind::kGradOp && made->num_args() > 0
             ? constant_graph(made->arg(0))
             : nullptr;
}

// The differentiated functions of the gradient calls in the graphs root reaches: `ready` those
// holding no gradient call themselves (expanded this round), `all` every one.
void grad_targets(FuncGraph* root, std::vector<FuncGraph*>& ready,
                  std::unordered_set<FuncGraph*>& all) {
  for (FuncGraph* k : opt::detail::reachable_graphs(root))
    for (const NodePtr& n : k->toposort())
      if (FuncGraph* S = grad_target(n); S && all.insert(S).second) {
        bool inner = false;
        for (FuncGraph* j : opt::detail::reachable_graphs(S))
          for (const NodePtr& m : j->toposort()) inner = inner || grad_target(m);
        if (!inner) ready.push_back(S);
      }
}

// AUTO_PARALLEL on one forward: the hints read by ops become fixed strategies (the op reads the
// value itself), the search chooses the rest, and the pass applies the choice as it is.
// The key of each op the search places (searched_strategies): its registry name and its count
// among the ops of that name searched so far in this pass run.
using OpCounts = std::map<std::string, int>;

std::vector<std::pair<std::string, shard::Strategy>>& searched() {
  static std::vector<std::pair<std::string, shard::Strategy>> s;
  return s;
}

// The loaded strategy for key, matched on the whole name or a scoped name's last component.
const shard::Strategy* loaded_for(const SemiAutoConfig& cfg, const std::string& key) {
  if (auto it = cfg.loaded.find(key); it != cfg.loaded.end()) return &it->second;
  for (const auto& [name, st] : cfg.loaded)
    if (name.size() > key.size() && name.compare(name.size() - key.size(), key.size(), key) == 0 &&
        name[name.size() - key.size() - 1] == '/')
      return &st;
  return nullptr;
}

bool search_and_apply(FuncGraph* g, const SemiAutoConfig& cfg, OpCounts& counts) {
  const StrategyMap hints = hinted(g);
  std::map<const Apply*, shard::Strategy> fixed;
  std::map<const Apply*, std::string> keys;
  std::string first_key;
  size_t matched = 0;
  for (const NodePtr& n : g->toposort()) {
    Apply* a = as_apply(n);
    const OpValue* op = a && !is_hint(n) ? op_of(n) : nullptr;
    if (!op || op->op().name == kSliced) continue;  // the ops the search places
    const std::string key = op->op().name + "-op" + std::to_string(counts[op->op().name]++);
    keys[a] = key;
    if (first_key.empty()) first_key = key;
    if (auto it = hints.find(n.get()); it != hints.end()) {  // the user's shard() wins
      for (size_t i = 0; i < a->num_args(); ++i)
        if (is_op_hint(a->arg(i))) a->set_input(i + 1, as_apply(a->arg(i))->arg(0));
      fixed[a] = it->second;
    } else if (const shard::Strategy* st = loaded_for(cfg, key)) {
      fixed[a] = *st, ++matched;
    }
  }
  MYCEL_CHECK(cfg.loaded.empty() || matched > 0, ValueError,
              "[auto_parallel] the loaded strategy file names none of the ops of '", g->name(),
              "' (it has ", cfg.loaded.size(), " strategies, e.g. '", cfg.loaded.begin()->first,
              "'; this graph's first op is '", first_key, "'): was it saved from another network?");
  search::GraphSearch r;
  try {
    r = search::search_graph(*g, cfg.topology, static_cast<int>(cfg.device_num), cfg.search_mode,
                             cfg.memory_limit, /*training=*/true, /*optimizer_slots=*/1, &fixed);
  } catch (const ValueError& e) {
    MYCEL_THROW(ValueError, e.what(), "\n  (searching the strategies of '", g->name(), "')");
  }
  StrategyMap chosen;
  for (size_t i = 0; i < r.ops.size(); ++i) {
    chosen[r.ops[i]] = r.chosen[i];
    if (auto k = keys.find(r.ops[i]); k != keys.end())
      searched().emplace_back(k->second, r.chosen[i]);
  }
  last_report() = search::report_to_json(r.report);
  return apply_strategies(g, chosen, cfg, /*propagate=*/false) || !hints.empty();
}

}  // namespace

const std::string& last_search_report() { return last_report(); }

const std::vector<std::pair<std::string, shard::Strategy>>& searched_strategies() {
  return searched();
}

std::vector<std::pair<Tensor, TensorLayout>> take_planned_weights() {
  std::vector<std::pair<Tensor, TensorLayout>> out;
  for (auto& [k, v] : planned_weights()) out.push_back(v);
  planned_weights().clear();
  return out;
}

std::vector<OpCandidates> op_candidates(FuncGraph* g, int64_t device_num) {
  std::vector<OpCandidates> out;
  for (const NodePtr& n : g->toposort()) {
    const OpValue* ov = op_of(n);
    if (!ov) continue;
    OpView v(n, *ov);
    if (!v.shardable()) continue;
    const shard::ShardContext c = v.ctx(device_num);
    OpCandidates k;
    k.node = n;
    k.op = v.op;
    for (const shard::Strategy& s : shard::strategies(c)) {
      shard::ShardPlan p = shard::plan(c, s);
      k.costs.push_back(shard::cost(c, p));
      k.plans.push_back(std::move(p));
      k.strategies.push_back(s);
    }
    out.push_back(std::move(k));
  }
  return out;
}

const std::vector<std::pair<std::string, std::string>>& last_applied() { return applied(); }

StrategyMap propagate_backward(FuncGraph* g, StrategyMap chosen, const SemiAutoConfig& cfg) {
  std::vector<NodePtr> order = g->toposort();
  std::unordered_map<const Node*, TensorLayout>
      want;  // producer -> the layout a chosen consumer reads
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const NodePtr& n = *it;
    const OpValue* ov = op_of(n);
    if (!ov || is_hint(n)) continue;
    OpView v(n, *ov);
    if (!v.shardable() || !shard::rule_of(*v.op) || v.tuple) continue;
    const shard::ShardContext c = v.ctx(cfg.device_num);
    auto ch = chosen.find(n.get());
    if (ch == chosen.end()) {  // a producer: the strategy that yields the wanted layout as it is
      auto w = want.find(n.get());
      if (w == want.end() || v.op->random) continue;
      using Score = std::tuple<size_t, double>;  // local slicing steps, flops
      std::optional<Score> best_score;
      for (const shard::Strategy& s : shard::strategies(c)) {
        shard::ShardPlan p;
        try {
          p = shard::plan(c, s);
        } catch (const ValueError&) {
          continue;
        }
        if (!p.comms.empty()) continue;  // its own collectives would cost what the split saves
        RedistPlan r = plan_redistribution(p.outputs[0], w->second, 0, v.outs[0].dtype);
        if (r.comm_bytes != 0 || replicated_layout(p.outputs[0])) continue;
        const Score score{r.steps.size(), shard::cost(c, p).flops};
        if (!best_score || score < *best_score) best_score = score, chosen[n.get()] = s;
      }
      ch = chosen.find(n.get());
      if (ch == chosen.end()) continue;
    }
    shard::ShardPlan p;
    try {
      p = shard::plan(c, ch->second);
    } catch (const std::exception&) {
      continue;  // apply_strategies reports it with the op's line
    }
    const Apply* a = as_apply(n);
    for (size_t i = 0; i < a->num_args(); ++i) {
      NodePtr src = a->arg(i);
      if (is_op_hint(src))
        src = as_apply(src)->arg(0);  // the hint is this op's; the value is its input
      if (v.ins[i] && op_of(src) && !is_hint(src) && !chosen.count(src.get()) &&
          !replicated_layout(p.inputs[i]))
        want.emplace(src.get(), p.inputs[i]);  // the first (latest in the graph) consumer wins
    }
  }
  return chosen;
}

bool apply_strategies(FuncGraph* g, const StrategyMap& chosen, const SemiAutoConfig& cfg,
                      bool propagate) {
  if (cfg.rank < 0 || cfg.rank >= cfg.device_num)
    MYCEL_THROW(ValueError, "[semi_auto_parallel] rank ", cfg.rank,
                " is not in [0, device_num=", cfg.device_num, ")");
  applied().clear();
  Pass p{g, cfg, chosen, propagate, {}, {}, {}, {}, {}, {}};
  p.run();
  return p.changed;
}

bool shard_graph(FuncGraph* root, const SemiAutoConfig& cfg, bool root_is_forward) {
  if (!cfg.enabled) return false;
  bool changed = false;
  std::unordered_set<FuncGraph*> forwards;  // AUTO_PARALLEL: graphs to search, now or later
  if (cfg.search) {
    std::vector<FuncGraph*> ready;
    if (root_is_forward) ready.push_back(root), forwards.insert(root);
    grad_targets(root, ready, forwards);
    OpCounts counts;
    if (!ready.empty() && cfg.search_mode != "sharding_propagation") searched().clear();
    for (FuncGraph* g : ready) {
      if (cfg.search_mode != "sharding_propagation")
        changed = search_and_apply(g, cfg, counts) || changed;
      else if (has_hints(g) || !cfg.full_batch)  // propagation both ways from the hints
        changed =
            apply_strategies(g, propagate_backward(g, hinted(g), cfg), cfg, /*propagate=*/true) ||
            changed;
    }
  }
  // Hints elsewhere (SEMI_AUTO_PARALLEL, or graphs no gradient reads under AUTO_PARALLEL).
  // full_batch=False: the forwards read split data, so propagation runs on them without hints too.
  std::unordered_set<FuncGraph*> data_split;
  if (!cfg.full_batch && !cfg.search) {
    std::vector<FuncGraph*> ready;
    if (root_is_forward) ready.push_back(root);
    grad_targets(root, ready, forwards);
    for (FuncGraph* g : ready) data_split.insert(g);
  }
  for (FuncGraph* g : opt::detail::reachable_graphs(root))
    if (data_split.count(g) || (!forwards.count(g) && has_hints(g)))
      changed = apply_strategies(g, hinted(g), cfg, /*propagate=*/true) || changed;
  return changed;
}

}  // namespace mycel::parallel
