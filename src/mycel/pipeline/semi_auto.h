// The semi-auto parallel pass (issue 13, DESIGN 9): after specialization and before AD, each op
// of a forward graph that carries a strategy (shard_hint nodes from Primitive.shard) is rewritten
// to run on this rank's slices; ops without one follow their inputs' layouts (forward
// propagation, cheapest strategy); redistributions and the ops' own collectives become ordinary
// IR nodes, so AD differentiates them through their bprops. The auto mode's search calls
// op_candidates() and apply_strategies() (AUTO_PARALLEL = search + this pass).
#pragma once
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "mycel/ir/func_graph.h"
#include "mycel/ops/registry.h"
#include "mycel/parallel/search/topology.h"

namespace mycel::parallel {

/// The process's parallel settings, set from Python's set_auto_parallel_context (MindSpore's
/// ParallelContext): whether the pass runs, on how many devices, as which rank; under
/// AUTO_PARALLEL (`search`) how strategies are searched and on which cluster.
struct SemiAutoConfig {
  bool enabled = false;
  int64_t device_num = 1;
  int64_t rank = 0;
  /// The world rank of the pass's rank 0: the pass splits over world ranks rank_base ..
  /// rank_base + device_num - 1 (a pipeline stage's tensor-parallel ranks; 0: the world).
  int64_t rank_base = 0;
  bool search = false;  ///< AUTO_PARALLEL: differentiated forwards get searched strategies
  std::string search_mode =
      "dynamic_programming";  ///< or recursive_programming, sharding_propagation
  search::Topology topology;
  std::string topology_text;  ///< the JSON it was parsed from (part of the compile cache key)
  double memory_limit = -1;   ///< bytes per device; < 0: the topology's
  /// false (MindSpore's full_batch=False): each rank is fed its block of the global batch, so the
  /// graph's data inputs (non-weight tensor parameters) are split on dim 0 over every device.
  bool full_batch = true;
  /// strategy_ckpt_load_file: op strategies by key ("matmul-op0", see searched_strategies; a
  /// MindSpore-style scoped name matches on its last component) that the search keeps fixed,
  /// as it keeps shard() hints. loaded_text is their digest, part of the compile cache key.
  std::map<std::string, shard::Strategy> loaded;
  std::string loaded_text;
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
/// not in `chosen` that reads a split value takes its cheapest strategy (bytes moved by
/// redistribution and its own collectives, then redistribution steps, then flops); the rest run
/// whole. Values are redistributed
/// where a consumer needs another layout, and gathered whole wherever something other than a
/// sharded op uses them (the graph's output included). Returns whether g changed. Errors name
/// the op and its source line.
bool apply_strategies(ir::FuncGraph* g, const StrategyMap& chosen, const SemiAutoConfig& cfg,
                      bool propagate);

/// Backward propagation (consumer -> producer) for sharding_propagation: in reverse graph order,
/// an op without a strategy whose result a chosen op reads takes the strategy whose output is
/// already in the layout that consumer wants (no redistribution; the fewest flops), and so on up
/// the graph. Returns `chosen` with those added.
StrategyMap propagate_backward(ir::FuncGraph* g, StrategyMap chosen, const SemiAutoConfig& cfg);

/// The semi-auto pass over root and the graphs it reaches: graphs with shard_hint nodes get
/// their strategies applied (with propagation); others are left alone, so running it twice
/// changes nothing more. A no-op unless cfg.enabled.
///
/// With cfg.search (AUTO_PARALLEL) the differentiated forwards (the functions of the gradient
/// calls in the graphs root reaches, and root itself when `root_is_forward`) get the strategy
/// search's choice instead (the user's hints fixed in it), or, with search_mode
/// "sharding_propagation", their hints propagated; the graphs around them (the optimizer's
/// update) run whole. A gradient call is expanded right after the pass sees it, so each forward
/// is searched once.
bool shard_graph(ir::FuncGraph* root, const SemiAutoConfig& cfg, bool root_is_forward = false);

/// Weights stored as slices (set_auto_parallel_context(slice_parameters=True)) are read by the
/// network through sliced_weight nodes (ops/parallel_hint.cc): the pass replaces each by the
/// slice with its layout, and the search sees the whole weight's shape.
///
/// The layout the pass wanted for each whole weight it split (its first consumer's), since the
/// last call: what the weight's slice is once it is stored sliced.
std::vector<std::pair<Tensor, shard::TensorLayout>> take_planned_weights();

/// The JSON report (search::report_to_json) of the last strategy search the pass ran, "" if none.
const std::string& last_search_report();

/// (key, strategy) of every op the last AUTO_PARALLEL search placed, in search order: the key is
/// the op's registry name and its occurrence among the searched forwards' ops of that name
/// ("matmul-op0", "matmul-op1", ...), stable for the same network and inputs. It is what
/// strategy_ckpt_save_file writes as the file's operator strategies and what `loaded` matches.
const std::vector<std::pair<std::string, shard::Strategy>>& searched_strategies();

/// (op name, strategy) of every op the last apply_strategies call split or ran by a strategy,
/// in graph order (what propagation chose, for tests and docs).
const std::vector<std::pair<std::string, std::string>>& last_applied();

}  // namespace mycel::parallel
