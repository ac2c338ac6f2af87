// Placement of split collectives in a graph's schedule (OpDef::placement): a kEarly kernel (the
// start of a non-blocking allreduce) moves, with the ops that only feed it, to just after the
// last of the other nodes it needs; a kLate kernel (its wait) moves to just before its first
// user. Everything else keeps its order, so the backward's kernels run between start and wait.
// The order depends only on the graph, so every rank issues its collectives in one order.
#pragma once
#include <functional>
#include <vector>

#include "mycel/ir/func_graph.h"

namespace mycel::backend::detail {

/// `order`: the graph's applies in a valid dependency order; `deps`: a node's dependencies
/// among them (inputs, closures' free variables, effect edges). Returns the order placed.
std::vector<ir::NodePtr> place_split_collectives(
    const std::vector<ir::NodePtr>& order,
    const std::function<std::vector<ir::NodePtr>(const ir::NodePtr&)>& deps);

}  // namespace mycel::backend::detail
