// The op-level cost model of the strategy search. Each op is described by its iteration space
// (named dims, einsum-style): a strategy splits some dims across devices; a tensor's layout is
// the split of each of its axes; dims an output lacks are reductions (a split one ends in an
// AllReduce), dims an input lacks need an AllReduce of that input's gradient in training.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mycel/parallel/search/cost_graph.h"
#include "mycel/parallel/search/topology.h"

namespace mycel::parallel::search {

/// One dim of an op's iteration space.
struct OpDim {
  std::string name;
  int64_t size = 1;
  bool split = true;   ///< may be split across devices
  bool batch = false;  ///< the dim data parallelism splits
};

/// A tensor an op reads or writes: each axis is the product of one or more of the op's dims.
struct OpTensor {
  std::vector<std::vector<int>> axes;
  int producer = -1;       ///< index of the op producing it; -1 for a graph input
  bool parameter = false;  ///< a trained weight (sliced, with gradient and optimizer state)
};

/// One op of a model description.
struct OpSpec {
  std::string name, kind;
  std::vector<OpDim> dims;
  std::vector<OpTensor> inputs;
  OpTensor output;
  double flops = 0;  ///< forward FLOPs of the whole (unsplit) op
};

/// A model description: ops in topological order and training settings.
struct ModelSpec {
  std::vector<OpSpec> ops;
  int dtype_bytes = 4;
  double optimizer_slots = 1;  ///< optimizer state per parameter (Momentum 1, Adam 2)
  bool training = true;
};

/// Parses a model description (JSON; format in docs/parallel.md) with every name checked.
ModelSpec parse_model(const std::string& json_text);

/// One strategy's cost parts for one op (per device).
struct StrategyCost {
  double compute = 0;     ///< seconds
  double comm = 0;        ///< seconds of the op's own collectives (forward and backward)
  double comm_bytes = 0;  ///< bytes each device sends in them
  double memory = 0;      ///< bytes: parameters, gradients, optimizer state, saved activations
};

/// An op's candidate strategies: the split of each dim, and the cost of each.
struct OpStrategies {
  std::vector<std::vector<int64_t>> splits;
  std::vector<StrategyCost> costs;
};

/// Enumerates the strategies that use all `device_num` devices (or as many as the dims allow)
/// and prices each.
OpStrategies enumerate_strategies(const OpSpec& op, const ModelSpec& model, const Topology& topo,
                                  int device_num);

/// Time and bytes received per device to turn layout `from` into `to` (splits per axis) for a
/// tensor of `shape`: free where `to` only refines `from`, else an AllGather / AlltoAll.
struct Redistribution {
  double time = 0;
  double bytes = 0;
};
Redistribution redistribution(const std::vector<int64_t>& shape, const std::vector<int64_t>& from,
                              const std::vector<int64_t>& to, int dtype_bytes,
                              const Topology& topo);

/// Per-op line of a simulation.
struct OpReport {
  std::string name, kind, strategy;
  double compute = 0, comm = 0, redistribution = 0, comm_bytes = 0, memory = 0;
};

/// The result of a simulation: the chosen strategy per op and the predictions.
struct SimReport {
  std::string mode;
  int device_num = 1;
  std::vector<OpReport> ops;
  double step_time = 0, comm_bytes = 0, memory = 0, memory_limit = 0;
  bool fits = true;
  double search_seconds = 0;
  Solution solution;
};

/// Builds the cost graph of a model for `device_num` devices (strategies kept in `strategies`).
CostGraph build_cost_graph(const ModelSpec& model, const Topology& topo, int device_num,
                           std::vector<OpStrategies>& strategies);

/// Searches (mode "dynamic_programming" or "recursive_programming") or prices data parallelism
/// (mode "data_parallel": the batch dim split everywhere) without starting any rank.
/// memory_limit < 0 takes the topology's.
SimReport simulate(const ModelSpec& model, const Topology& topo, int device_num,
                   const std::string& mode, double memory_limit = -1);

/// The report as JSON text (what Python reads).
std::string report_to_json(const SimReport& r);

}  // namespace mycel::parallel::search
