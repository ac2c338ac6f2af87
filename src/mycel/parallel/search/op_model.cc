// Strategy enumeration and pricing per op, redistribution between layouts, the cost graph of a
// model, and the simulation that searches it without ranks.
#include "mycel/parallel/search/op_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "mycel/core/error.h"
#include "mycel/parallel/search/collective_cost.h"

namespace mycel::parallel::search {

double all_reduce_time(Group g, double bytes, const Topology& t, double& sent, bool fused) {
  if (g.size <= 1) return 0;
  const double gi = static_cast<double>(g.intra), ge = static_cast<double>(g.size / g.intra);
  const double intra_bytes = 2 * (gi - 1) / gi * bytes,
               inter_bytes = 2 * (ge - 1) / ge * bytes / gi;
  sent += intra_bytes + inter_bytes;
  const double latency =
      fused ? 0 : 2 * (gi - 1) * t.intra_node.alpha + 2 * (ge - 1) * t.inter_node.alpha;
  return latency + intra_bytes * t.intra_node.beta + inter_bytes * t.inter_node.beta;
}

namespace {

// The device matrix is [replicas, dims...] with the last dim fastest, so a dim with stride s and
// split k puts min(k, devices_per_node / s) of its group members on one node.
Group group_of(const std::vector<int64_t>& k, const std::vector<char>& in_group, int64_t replicas,
               bool with_replicas, int dpn) {
  Group g;
  int64_t stride = 1;
  for (int d = static_cast<int>(k.size()) - 1; d >= 0; --d) {
    if (in_group[d] && k[d] > 1) {
      g.size *= k[d];
      g.intra *= std::min<int64_t>(k[d], std::max<int64_t>(1, dpn / stride));
    }
    stride *= k[d];
  }
  if (with_replicas && replicas > 1) {
    g.size *= replicas;
    g.intra *= std::min<int64_t>(replicas, std::max<int64_t>(1, dpn / stride));
  }
  return g;
}

std::vector<int64_t> axis_sizes(const OpSpec& op, const OpTensor& t) {
  std::vector<int64_t> s;
  for (const auto& axis : t.axes) {
    int64_t n = 1;
    for (int d : axis) n *= op.dims[d].size;
    s.push_back(n);
  }
  return s;
}

std::vector<int64_t> axis_splits(const OpTensor& t, const std::vector<int64_t>& k) {
  std::vector<int64_t> s;
  for (const auto& axis : t.axes) {
    int64_t n = 1;
    for (int d : axis) n *= k[d];
    s.push_back(n);
  }
  return s;
}

double slice_bytes(const std::vector<int64_t>& shape, const std::vector<int64_t>& split,
                   int bytes) {
  double n = bytes;
  for (size_t i = 0; i < shape.size(); ++i) n *= static_cast<double>(shape[i]) / split[i];
  return n;
}

// Every split vector (each split divides its dim and the device count) using `target` devices.
void enumerate(const OpSpec& op, size_t d, int64_t left, std::vector<int64_t>& k,
               std::vector<std::vector<int64_t>>& out, int64_t& best_used, int64_t total,
               const std::vector<int64_t>& divisors) {
  if (d == op.dims.size()) {
    const int64_t used = total / left;
    if (used > best_used) best_used = used, out.clear();
    if (used == best_used) out.push_back(k);
    return;
  }
  for (int64_t f : divisors) {
    if (f > left) break;
    if (left % f || (f > 1 && (!op.dims[d].split || op.dims[d].size % f))) continue;
    k[d] = f;
    enumerate(op, d + 1, left / f, k, out, best_used, total, divisors);
  }
  k[d] = 1;
}

std::string strategy_text(const OpSpec& op, const std::vector<int64_t>& k) {
  std::ostringstream s;
  s << "(";
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const auto sp = axis_splits(op.inputs[i], k);
    s << (i ? ", " : "") << "(";
    for (size_t a = 0; a < sp.size(); ++a) s << (a ? ", " : "") << sp[a];
    s << (sp.size() == 1 ? ",)" : ")");
  }
  s << (op.inputs.size() == 1 ? ",)" : ")");
  return s.str();
}

}  // namespace

OpStrategies enumerate_strategies(const OpSpec& op, const ModelSpec& model, const Topology& topo,
                                  int device_num) {
  OpStrategies r;
  std::vector<int64_t> k(op.dims.size(), 1);
  int64_t best_used = 0;
  std::vector<int64_t> divisors;  // of device_num, ascending
  for (int64_t f = 1; f <= device_num; ++f)
    if (device_num % f == 0) divisors.push_back(f);
  enumerate(op, 0, device_num, k, r.splits, best_used, device_num, divisors);
  const double passes = model.training ? 3.0 : 1.0;  // backward costs about twice the forward
  const std::vector<int64_t> out_shape = axis_sizes(op, op.output);
  std::vector<char> in_out(op.dims.size(), 0);
  for (const auto& axis : op.output.axes)
    for (int d : axis) in_out[d] = 1;
  for (const auto& split : r.splits) {
    StrategyCost c;
    int64_t used = 1;
    for (int64_t f : split) used *= f;
    const int64_t replicas = device_num / used;
    c.compute = op.flops / static_cast<double>(used) / topo.flops_per_second * passes;
    // Forward: split reduction dims leave partial sums to AllReduce.
    std::vector<char> reduce(op.dims.size());
    for (size_t d = 0; d < op.dims.size(); ++d) reduce[d] = !in_out[d];
    const double out_bytes =
        slice_bytes(out_shape, axis_splits(op.output, split), model.dtype_bytes);
    c.comm += all_reduce_time(group_of(split, reduce, replicas, false, topo.devices_per_node),
                              out_bytes, topo, c.comm_bytes);
    c.memory += model.training ? out_bytes : 0;  // activations saved for the backward pass
    for (const OpTensor& in : op.inputs) {
      const double bytes =
          slice_bytes(axis_sizes(op, in), axis_splits(in, split), model.dtype_bytes);
      if (in.parameter)
        c.memory += bytes * (model.training ? 2 + model.optimizer_slots : 1);
      else if (in.producer < 0)
        c.memory += bytes;
      if (!model.training || (!in.parameter && in.producer < 0)) continue;
      // Backward: the input's gradient sums over the split dims it lacks (and, for a weight,
      // over its replicas: the data-parallel gradient AllReduce).
      std::vector<char> missing(op.dims.size(), 1);
      for (const auto& axis : in.axes)
        for (int d : axis) missing[d] = 0;
      c.comm +=
          all_reduce_time(group_of(split, missing, replicas, in.parameter, topo.devices_per_node),
                          bytes, topo, c.comm_bytes, in.parameter);
    }
    r.costs.push_back(c);
  }
  return r;
}

Redistribution redistribution(const std::vector<int64_t>& shape, const std::vector<int64_t>& from,
                              const std::vector<int64_t>& to, int dtype_bytes,
                              const Topology& topo) {
  Redistribution r;
  double full = dtype_bytes, want = 1, overlap = 1;
  int64_t group = 1;
  for (size_t a = 0; a < shape.size(); ++a) {
    full *= static_cast<double>(shape[a]);
    want *= static_cast<double>(to[a]);
    overlap *= static_cast<double>(std::max(from[a], to[a]));
    group *= std::max(from[a], to[a]) / std::min(from[a], to[a]);
  }
  // What a device must receive: its new slice less the part its old slice already holds.
  r.bytes = full / want - full / overlap;
  if (r.bytes <= 0 || group <= 1) return r;
  const Link& link = group <= topo.devices_per_node ? topo.intra_node : topo.inter_node;
  r.time = static_cast<double>(group - 1) * link.alpha + r.bytes * link.beta;
  return r;
}

CostGraph build_cost_graph(const ModelSpec& model, const Topology& topo, int device_num,
                           std::vector<OpStrategies>& strategies) {
  MYCEL_CHECK(device_num >= 1, ValueError, "[auto_parallel] device_num must be >= 1, got ",
              device_num);
  CostGraph g;
  strategies.clear();
  for (const OpSpec& op : model.ops) {
    strategies.push_back(enumerate_strategies(op, model, topo, device_num));
    std::vector<Cost> costs;
    for (const StrategyCost& c : strategies.back().costs)
      costs.push_back({c.compute + c.comm, c.memory});
    g.add_node(op.name, std::move(costs));
  }
  for (size_t c = 0; c < model.ops.size(); ++c) {
    const OpSpec& op = model.ops[c];
    for (const OpTensor& in : op.inputs) {
      if (in.producer < 0) continue;
      const OpSpec& prod = model.ops[in.producer];
      const auto shape = axis_sizes(op, in);
      const auto& sp = strategies[in.producer].splits;
      const auto& sc = strategies[c].splits;
      std::vector<std::vector<int64_t>> from, to;
      for (const auto& k : sp) from.push_back(axis_splits(prod.output, k));
      for (const auto& k : sc) to.push_back(axis_splits(in, k));
      std::vector<double> m(sp.size() * sc.size());
      for (size_t i = 0; i < sp.size(); ++i)
        for (size_t j = 0; j < sc.size(); ++j) {
          // Forward the value moves to the consumer's layout; backward its gradient moves back.
          double t = redistribution(shape, from[i], to[j], model.dtype_bytes, topo).time;
          if (model.training)
            t += redistribution(shape, to[j], from[i], model.dtype_bytes, topo).time;
          m[i * sc.size() + j] = t;
        }
      g.add_edge(in.producer, static_cast<int>(c), std::move(m));
    }
  }
  return g;
}

SimReport simulate(const ModelSpec& model, const Topology& topo, int device_num,
                   const std::string& mode, double memory_limit) {
  MYCEL_CHECK(
      mode == "dynamic_programming" || mode == "recursive_programming" || mode == "data_parallel",
      ValueError,
      "[auto_parallel] search_mode must be "
      "'dynamic_programming', 'recursive_programming' or 'data_parallel', got '",
      mode, "'");
  SimReport r;
  r.mode = mode;
  r.device_num = device_num;
  r.memory_limit = memory_limit < 0 ? topo.memory_per_device : memory_limit;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<OpStrategies> strategies;
  const CostGraph g = build_cost_graph(model, topo, device_num, strategies);
  if (mode == "data_parallel") {
    // Split the batch dim as far as it goes, nothing else.
    r.solution.choice.resize(model.ops.size());
    for (size_t v = 0; v < model.ops.size(); ++v) {
      double best = -1;
      for (size_t s = 0; s < strategies[v].splits.size(); ++s) {
        const auto& k = strategies[v].splits[s];
        double batch = 1, other = 1;
        for (size_t d = 0; d < k.size(); ++d) (model.ops[v].dims[d].batch ? batch : other) *= k[d];
        const double score = batch / other;
        if (score > best) best = score, r.solution.choice[v] = static_cast<int>(s);
      }
    }
    const Cost c = g.evaluate(r.solution.choice);
    r.solution.time = c.time, r.solution.memory = c.memory;
  } else {
    r.solution = solve(g,
                       mode == "dynamic_programming" ? SearchMode::kDynamicProgramming
                                                     : SearchMode::kRecursiveProgramming,
                       r.memory_limit);
  }
  r.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Per-op predictions under the chosen strategies.
  for (size_t v = 0; v < model.ops.size(); ++v) {
    const OpSpec& op = model.ops[v];
    const int s = r.solution.choice[v];
    const StrategyCost& c = strategies[v].costs[s];
    OpReport o{op.name,      op.kind, strategy_text(op, strategies[v].splits[s]),
               c.compute,    c.comm,  0,
               c.comm_bytes, c.memory};
    for (const OpTensor& in : op.inputs) {
      if (in.producer < 0) continue;
      const auto shape = axis_sizes(op, in);
      const auto from = axis_splits(model.ops[in.producer].output,
                                    strategies[in.producer].splits[r.solution.choice[in.producer]]);
      const auto to = axis_splits(in, strategies[v].splits[s]);
      for (int pass = 0; pass < (model.training ? 2 : 1); ++pass) {
        const Redistribution d = pass ? redistribution(shape, to, from, model.dtype_bytes, topo)
                                      : redistribution(shape, from, to, model.dtype_bytes, topo);
        o.redistribution += d.time;
        o.comm_bytes += d.bytes;
      }
    }
    r.step_time += o.compute + o.comm + o.redistribution;
    r.comm_bytes += o.comm_bytes;
    r.memory += o.memory;
    r.ops.push_back(std::move(o));
  }
  r.fits = r.memory_limit <= 0 || r.memory <= r.memory_limit;
  return r;
}

}  // namespace mycel::parallel::search
