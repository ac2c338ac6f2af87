// The strategy search on a real model: the cost graph of a specialized IR graph, built from each
// op's sharding rule and cost in the registry (ops/sharding.h) and the redistribution planner
// (parallel/redistribution.h), priced on a topology.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "mycel/ops/sharding.h"
#include "mycel/parallel/search/op_model.h"

namespace mycel::ir {
class FuncGraph;
class Apply;
}  // namespace mycel::ir

namespace mycel::parallel::search {

/// The search's answer for one graph: each op application with its chosen strategy (what the
/// parallel pass applies) and the report.
struct GraphSearch {
  std::vector<const ir::Apply*> ops;    ///< the op applications, in graph order
  std::vector<shard::Strategy> chosen;  ///< strategy per op (MindSpore's in_strategy)
  SimReport report;
};

/// Searches a strategy for every op application of `g` (a specialized graph: abstracts set) on
/// `device_num` simulated devices. Weights are the graph's bound parameters; in training the
/// backward pass is priced too (twice the forward compute, the inputs' gradient reductions).
/// mode: "dynamic_programming", "recursive_programming" or "data_parallel". `fixed`: ops whose
/// strategy is given (the user's shard() hints under AUTO_PARALLEL): the search keeps only that
/// one for them (an invalid one is a ValueError naming the op).
GraphSearch search_graph(const ir::FuncGraph& g, const Topology& topo, int device_num,
                         const std::string& mode, double memory_limit = -1, bool training = true,
                         double optimizer_slots = 1,
                         const std::map<const ir::Apply*, shard::Strategy>* fixed = nullptr);

}  // namespace mycel::parallel::search
