// Tensor redistribution (issue 13): the steps that turn a tensor laid out as `from` into the same
// tensor laid out as `to` (ops/sharding.h layouts): local slices, AllGather, AlltoAll,
// ReduceScatter and AllReduce over groups of the device matrix. Above ops: the steps are registry
// ops, run eagerly here (redistribute) or inserted as IR nodes by the parallel pass.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "mycel/ops/registry.h"

namespace mycel::parallel {

/// One step: registry op `op` with `attrs`; collectives also get `group` (world ranks in group
/// order: the ranks that differ from this one on the step's device axes).
struct RedistStep {
  std::string op;
  std::map<std::string, AttrValue> attrs;
  std::vector<int64_t> group;  // empty: a local op
  int64_t bytes = 0;           // bytes this rank sends (0 for local steps)
  std::string str() const;
};

struct RedistPlan {
  std::vector<RedistStep> steps;
  int64_t comm_bytes = 0;  // sum of the steps' bytes
  /// "all_gather(dim 1, 2 ranks) -> slice(...)" for messages, tests and the search's output.
  std::string str() const;
};

/// The steps for rank `rank` (a rank of from.device). Greedy in the cheap direction: a pending
/// sum becomes a ReduceScatter when `to` splits a dim on its axis, else an AllReduce; a split
/// that moves to another dim is one AlltoAll; what `to` no longer splits is gathered; what it
/// newly splits is sliced locally (no communication). Layouts on device matrices with no common
/// refinement go through the whole tensor. Throws ValueError if the shapes or the device counts
/// differ, or `to` has a pending sum.
RedistPlan plan_redistribution(const shard::TensorLayout& from, const shard::TensorLayout& to,
                               int64_t rank, DType dtype = DType::float32);

/// The collective's group name for a list of world ranks ("autopar_0_2"), created on first use
/// (every member must reach it; non-members never ask for it).
std::string group_for(const std::vector<int64_t>& ranks);

/// Runs the plan eagerly on this process's slice x (world rank = device rank).
Tensor redistribute(const Tensor& x, const shard::TensorLayout& from,
                    const shard::TensorLayout& to);

/// Runs one step on x locally or through the Communicator.
Tensor run_step(const Tensor& x, const RedistStep& s);

}  // namespace mycel::parallel
