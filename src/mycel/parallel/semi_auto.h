// The semi-auto parallel pass (issue 13, DESIGN 9): after specialization and before AD, each op
// of a forward graph that carries a strategy (shard_hint nodes from Primitive.shard) is rewritten
// to run on this rank's slices; ops without one follow their inputs' layouts (forward
// propagation, cheapest strategy); redistributions and the ops' own collectives become ordinary
// IR nodes, so AD differentiates them through their bprops. The auto mode's search calls
// op_candidates() and apply_strategies() (AUTO_PARALLEL = search + this pass).
#pragma once
#include <unordered_map>
#include <vector>

#include "mycel/ir/func_graph.h"
#include "mycel/ops/registry.h"

namespace mycel::parallel {

/// The process's parallel settings, set from Python's set_auto_parallel_context (MindSpore's
/// ParallelContext): whether the pass runs, on how many devices, as which rank.
struct SemiAutoConfig {
  bool enabled = false;
  int64_t device_num = 1;
  int64_t rank = 0;
};
SemiAutoConfig& semi_auto_config();

/// One op node of a specialized graph with every strategy its rule lists for device_num, the
/// plan and the per-device cost of each (parallel vectors; [0] is the replicated strategy).
struct OpCandidates {
  ir::NodePtr node;
  const OpDef* op = nullptr;
  std::vector<shard::Strategy> strategies;
  std::vector<shard::ShardPlan> plans;
  std::vector<shard::OpCost> costs;
};

/// Every op node of g (in topological order) that has a sharding rule, with its candidates: the
/// search's view of a graph.
std::vector<OpCandidates> op_candidates(ir::FuncGraph* g, int64_t device_num);

using StrategyMap = std::unordered_map<const ir::Node*, shard::Strategy>;

/// Rewrites g for cfg.rank: the ops in `chosen` run with their strategy; with `propagate`, an op
/// not in `chosen` that reads a split value takes its cheapest strategy (redistribution bytes,
/// then its own collectives' bytes, then flops); the rest run whole. Values are redistributed
/// where a consumer needs another layout, and gathered whole wherever something other than a
/// sharded op uses them (the graph's output included). Returns whether g changed. Errors name
/// the op and its source line.
bool apply_strategies(ir::FuncGraph* g, const StrategyMap& chosen, const SemiAutoConfig& cfg, bool propagate);

/// The semi-auto pass over root and the graphs it reaches: graphs with shard_hint nodes get
/// their strategies applied (with propagation); others are left alone, so running it twice
/// changes nothing more. A no-op unless cfg.enabled.
bool shard_graph(ir::FuncGraph* root, const SemiAutoConfig& cfg);

}  // namespace mycel::parallel
