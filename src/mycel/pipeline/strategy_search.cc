// Cost graph of a specialized IR graph: one node per op application with the registry's
// strategies, one edge per tensor between two ops priced by the redistribution planner.
#include "mycel/pipeline/strategy_search.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>

#include "mycel/core/error.h"
#include "mycel/ir/func_graph.h"
#include "mycel/ir/node.h"
#include "mycel/ir/prim.h"
#include "mycel/ir/value.h"
#include "mycel/parallel/redistribution.h"
#include "mycel/parallel/search/collective_cost.h"

namespace mycel::parallel::search {
namespace {

// One op application and what its rule offers.
struct OpSite {
  const ir::Apply* apply = nullptr;
  const ir::OpValue* op = nullptr;
  std::vector<TensorMeta> in_metas, out_metas;
  std::vector<const TensorMeta*> in_ptrs;
  std::vector<int> producer, producer_out;  // per input: op index and output index, or -1
  std::vector<char> weight;                 // per input: a bound parameter (a trained weight)
  std::vector<shard::Strategy> strategies;
  std::vector<shard::ShardPlan> plans;
  std::vector<StrategyCost> costs;
  shard::ShardContext ctx() const {
    return {op->op(), in_ptrs, op->attrs(), out_metas, device_num};
  }
  int64_t device_num = 1;
};

const ir::OpValue* op_of(const ir::Apply* a) {
  const ir::Constant* c = ir::as_constant(a->callee());
  if (!c || c->value()->kind() != ir::ValueKind::kOp) return nullptr;
  return static_cast<const ir::OpValue*>(c->value().get());
}

bool is_sliced_weight(const ir::Apply* a) {
  const ir::OpValue* op = op_of(a);
  return op && op->op().name == "sliced_weight";
}

void tensor_metas(const ir::AbstractPtr& a, std::vector<TensorMeta>& out) {
  if (!a) return;
  if (a->kind() == ir::AbstractKind::kTensor) {
    const auto& t = static_cast<const ir::AbstractTensor&>(*a);
    out.push_back({t.shape(), t.dtype()});
  } else if (a->kind() == ir::AbstractKind::kTuple) {
    for (const auto& item : static_cast<const ir::AbstractTuple&>(*a).items())
      tensor_metas(item, out);
  }
}

// The members of a collective over `axes` of the device matrix that share a node (row-major:
// the last axis varies fastest, so a node holds the innermost devices_per_node ranks).
Group group_on(const shard::DeviceMatrix& dm, const std::vector<int>& axes, int dpn) {
  Group g;
  int64_t stride = 1;
  for (int a = static_cast<int>(dm.dims.size()) - 1; a >= 0; --a) {
    if (std::find(axes.begin(), axes.end(), a) != axes.end() && dm.dims[a] > 1) {
      g.size *= dm.dims[a];
      g.intra *= std::min<int64_t>(dm.dims[a], std::max<int64_t>(1, dpn / stride));
    }
    stride *= dm.dims[a];
  }
  return g;
}

double collective(const std::string& op, Group g, double bytes, const Topology& t, double& sent) {
  if (g.size <= 1) return 0;
  if (op == "all_reduce") return all_reduce_time(g, bytes, t, sent);
  // AllGather / ReduceScatter / AlltoAll: (g - 1) exchanges of a slice share, on the slowest
  // link the group crosses.
  const Link& link = g.intra == g.size ? t.intra_node : t.inter_node;
  const double moved = op == "all_gather" ? (g.size - 1) * bytes : bytes * (g.size - 1) / g.size;
  sent += moved;
  return (g.size - 1) * link.alpha + moved * link.beta;
}

std::string strategy_text(const shard::Strategy& s) {
  std::ostringstream o;
  o << "(";
  for (size_t i = 0; i < s.size(); ++i) {
    o << (i ? ", " : "") << "(";
    for (size_t d = 0; d < s[i].size(); ++d) o << (d ? ", " : "") << s[i][d];
    o << (s[i].size() == 1 ? ",)" : ")");
  }
  o << (s.size() == 1 ? ",)" : ")");
  return o.str();
}

// Time of a redistribution plan: each step on the slowest link its group crosses.
Redistribution price(const RedistPlan& p, const Topology& t) {
  Redistribution r;
  for (const RedistStep& s : p.steps) {
    if (s.group.size() <= 1) continue;
    bool one_node = true;
    for (int64_t rank : s.group)
      one_node = one_node && rank / t.devices_per_node == s.group[0] / t.devices_per_node;
    const Link& link = one_node ? t.intra_node : t.inter_node;
    r.time += static_cast<double>(s.group.size() - 1) * link.alpha +
              static_cast<double>(s.bytes) * link.beta;
    r.bytes += static_cast<double>(s.bytes);
  }
  return r;
}

}  // namespace

GraphSearch search_graph(const ir::FuncGraph& g, const Topology& topo, int device_num,
                         const std::string& mode, double memory_limit, bool training,
                         double optimizer_slots,
                         const std::map<const ir::Apply*, shard::Strategy>* fixed) {
  MYCEL_CHECK(device_num >= 1, ValueError, "[auto_parallel] device_num must be >= 1, got ",
              device_num);
  MYCEL_CHECK(
      mode == "dynamic_programming" || mode == "recursive_programming" || mode == "data_parallel",
      ValueError,
      "[auto_parallel] search_mode must be 'dynamic_programming', "
      "'recursive_programming' or 'data_parallel', got '",
      mode, "'");
  const auto t0 = std::chrono::steady_clock::now();
  // 1. The op applications and where each input comes from.
  std::vector<OpSite> sites;
  std::map<const ir::Node*, int> index;
  for (const ir::NodePtr& n : g.toposort()) {
    const ir::Apply* a = ir::as_apply(n);
    const ir::OpValue* op = a ? op_of(a) : nullptr;
    if (!op || is_sliced_weight(a))
      continue;  // a weight stored as slices: its consumers read it as a weight
    OpSite s;
    s.apply = a, s.op = op, s.device_num = device_num;
    tensor_metas(a->abstract(), s.out_metas);
    s.in_metas.reserve(a->num_args());
    for (size_t i = 0; i < a->num_args(); ++i) {
      const ir::NodePtr& arg = a->arg(i);
      std::vector<TensorMeta> m;
      if (arg->abstract() && arg->abstract()->kind() == ir::AbstractKind::kTensor)
        tensor_metas(arg->abstract(), m);
      s.in_metas.push_back(m.empty() ? TensorMeta{} : m[0]);
      s.in_ptrs.push_back(nullptr);  // pointed at in_metas once it stops growing
      int from = -1, out = 0;
      const ir::Node* src = arg.get();
      if (const ir::Apply* ga = ir::as_apply(arg);
          ga && ir::is_prim_call(arg, ir::Prim::kTupleGetItem)) {
        const ir::Constant* k = ir::as_constant(ga->arg(1));
        if (k && k->value()->kind() == ir::ValueKind::kInt) {
          src = ga->arg(0).get();
          out = static_cast<int>(static_cast<const ir::IntValue&>(*k->value()).value());
        }
      }
      if (auto it = index.find(src); it != index.end()) from = it->second;
      s.producer.push_back(from);
      s.producer_out.push_back(out);
      const ir::Parameter* p = ir::as_parameter(arg);
      s.weight.push_back((p && p->is_weight()) ||
                         (ir::as_apply(arg) && is_sliced_weight(ir::as_apply(arg))));
    }
    for (size_t i = 0; i < s.in_metas.size(); ++i) {
      const ir::NodePtr& arg = a->arg(i);
      if (arg->abstract() && arg->abstract()->kind() == ir::AbstractKind::kTensor)
        s.in_ptrs[i] = &s.in_metas[i];
    }
    index[a] = static_cast<int>(sites.size());
    sites.push_back(std::move(s));
  }
  MYCEL_CHECK(!sites.empty(), ValueError, "[auto_parallel] the graph has no op to place");
  for (OpSite& s : sites)  // the vector moved while it grew: point at the final metas
    for (size_t i = 0; i < s.in_metas.size(); ++i)
      if (s.in_ptrs[i]) s.in_ptrs[i] = &s.in_metas[i];
  // 2. Strategies, plans and costs from the registry.
  const double passes = training ? 3.0 : 1.0;
  CostGraph cg;
  for (OpSite& s : sites) {
    const shard::ShardContext c = s.ctx();
    std::string refused;
    std::vector<shard::Strategy> listed;
    const auto pinned = fixed ? fixed->find(s.apply)
                              : std::map<const ir::Apply*, shard::Strategy>::const_iterator{};
    const bool is_fixed = fixed && pinned != fixed->end();
    if (is_fixed)
      listed.push_back(pinned->second);
    else
      listed = shard::strategies(c);
    for (shard::Strategy& st : listed) {
      // Defensive: a rule that lists 0 for a never-split dim (as one version did) means 1.
      for (shard::Dims& d : st)
        for (int64_t& v : d) v = v == 0 ? 1 : v;
      shard::ShardPlan p;
      try {
        p = shard::plan(c, st);
      } catch (const ValueError& e) {
        if (refused.empty()) refused = e.what();
        continue;  // a listed strategy the op turns down for these shapes
      }
      StrategyCost k;
      k.compute = shard::cost(c, p).flops / topo.flops_per_second * passes;
      for (const shard::Comm& m : p.comms)
        k.comm += collective(m.op, group_on(p.device, m.axes, topo.devices_per_node),
                             static_cast<double>(m.bytes), topo, k.comm_bytes);
      for (size_t o = 0; o < p.outputs.size() && o < s.out_metas.size(); ++o)
        if (training)
          k.memory += static_cast<double>(
              shard::bytes_of(numel(p.outputs[o].slice_shape()), s.out_metas[o].dtype));
      for (size_t i = 0; i < p.inputs.size() && i < s.in_ptrs.size(); ++i) {
        if (!s.in_ptrs[i]) continue;
        const double bytes = static_cast<double>(
            shard::bytes_of(numel(p.inputs[i].slice_shape()), s.in_metas[i].dtype));
        if (s.weight[i])
          k.memory += bytes * (training ? 2 + optimizer_slots : 1);
        else if (s.producer[i] < 0)
          k.memory += bytes;
        if (!training || (!s.weight[i] && s.producer[i] < 0)) continue;
        // The input's gradient sums over the device axes its layout repeats it on.
        std::vector<int> repeat;
        for (int a = 0; a < static_cast<int>(p.inputs[i].device.dims.size()); ++a)
          if (std::find(p.inputs[i].tensor_map.begin(), p.inputs[i].tensor_map.end(), a) ==
              p.inputs[i].tensor_map.end())
            repeat.push_back(a);
        k.comm += all_reduce_time(group_on(p.inputs[i].device, repeat, topo.devices_per_node),
                                  bytes, topo, k.comm_bytes, s.weight[i]);
      }
      s.strategies.push_back(std::move(st));
      s.plans.push_back(std::move(p));
      s.costs.push_back(k);
    }
    MYCEL_CHECK(
        !s.strategies.empty(), ValueError, "[auto_parallel] op '", s.op->op().name,
        is_fixed ? "': its shard() strategy is not valid on " : "' has no valid strategy on ",
        device_num, " devices (its rule said: ", refused, ")");
    std::vector<Cost> costs;
    for (const StrategyCost& k : s.costs) costs.push_back({k.compute + k.comm, k.memory});
    cg.add_node(s.op->op().name + "#" + std::to_string(cg.nodes().size()), std::move(costs));
  }
  // 3. Edges: redistribution between the producer's output layout and the consumer's wish, both
  // ways in training (the gradient travels back). Plans are priced once per distinct pair.
  for (size_t c = 0; c < sites.size(); ++c) {
    const OpSite& s = sites[c];
    for (size_t i = 0; i < s.producer.size(); ++i) {
      if (s.producer[i] < 0 || !s.in_ptrs[i]) continue;
      const OpSite& p = sites[s.producer[i]];
      const int o = s.producer_out[i];
      std::map<std::string, double> memo;
      std::vector<double> m(p.plans.size() * s.plans.size());
      for (size_t a = 0; a < p.plans.size(); ++a)
        for (size_t b = 0; b < s.plans.size(); ++b) {
          const shard::TensorLayout& from = p.plans[a].outputs.at(o);
          const shard::TensorLayout& to = s.plans[b].inputs[i];
          if (from == to) continue;
          const std::string key = from.str() + "|" + to.str();
          auto it = memo.find(key);
          if (it == memo.end()) {
            double t = price(plan_redistribution(from, to, 0, s.in_metas[i].dtype), topo).time;
            if (training)
              t += price(plan_redistribution(to, from, 0, s.in_metas[i].dtype), topo).time;
            it = memo.emplace(key, t).first;
          }
          m[a * s.plans.size() + b] = it->second;
        }
      cg.add_edge(s.producer[i], static_cast<int>(c), std::move(m));
    }
  }
  // 4. Search (or data parallel: the batch dim, dim 0 of the first input, split everywhere).
  GraphSearch out;
  SimReport& r = out.report;
  r.mode = mode, r.device_num = device_num;
  r.memory_limit = memory_limit < 0 ? topo.memory_per_device : memory_limit;
  if (mode == "data_parallel") {
    r.solution.choice.assign(sites.size(), 0);
    for (size_t v = 0; v < sites.size(); ++v) {
      std::pair<int64_t, int64_t> best{-1, 0};  // (batch split, -(product of the other splits))
      for (size_t k = 0; k < sites[v].strategies.size(); ++k) {
        const shard::Strategy& st = sites[v].strategies[k];
        int64_t batch = 1, other = 1;
        for (size_t i = 0; i < st.size(); ++i)
          for (size_t d = 0; d < st[i].size(); ++d) (i == 0 && d == 0 ? batch : other) *= st[i][d];
        if (std::make_pair(batch, -other) > best)
          best = {batch, -other}, r.solution.choice[v] = static_cast<int>(k);
      }
    }
    const Cost c = cg.evaluate(r.solution.choice);
    r.solution.time = c.time, r.solution.memory = c.memory;
  } else {
    r.solution = solve(cg,
                       mode == "dynamic_programming" ? SearchMode::kDynamicProgramming
                                                     : SearchMode::kRecursiveProgramming,
                       r.memory_limit);
  }
  r.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // 5. The report, op by op.
  for (size_t v = 0; v < sites.size(); ++v) {
    const OpSite& s = sites[v];
    const int k = r.solution.choice[v];
    const StrategyCost& c = s.costs[k];
    const std::string& dn = s.apply->debug_name();
    OpReport o{cg.nodes()[v].name + (dn.empty() ? "" : " (" + dn + ")"),
               s.op->op().name,
               strategy_text(s.strategies[k]),
               c.compute,
               c.comm,
               0,
               c.comm_bytes,
               c.memory};
    for (size_t i = 0; i < s.producer.size(); ++i) {
      if (s.producer[i] < 0 || !s.in_ptrs[i]) continue;
      const OpSite& p = sites[s.producer[i]];
      const shard::TensorLayout& from =
          p.plans[r.solution.choice[s.producer[i]]].outputs.at(s.producer_out[i]);
      const shard::TensorLayout& to = s.plans[k].inputs[i];
      if (from == to) continue;
      for (int pass = 0; pass < (training ? 2 : 1); ++pass) {
        const Redistribution d = price(pass ? plan_redistribution(to, from, 0, s.in_metas[i].dtype)
                                            : plan_redistribution(from, to, 0, s.in_metas[i].dtype),
                                       topo);
        o.redistribution += d.time, o.comm_bytes += d.bytes;
      }
    }
    r.step_time += o.compute + o.comm + o.redistribution;
    r.comm_bytes += o.comm_bytes;
    r.memory += o.memory;
    r.ops.push_back(std::move(o));
    out.ops.push_back(s.apply);
    out.chosen.push_back(s.strategies[k]);
  }
  r.fits = r.memory_limit <= 0 || r.memory <= r.memory_limit;
  return out;
}

}  // namespace mycel::parallel::search
