// Sharding rules and costs (issue 13): how an op runs split across devices. Ops level: shapes,
// attributes and split counts only, no IR. The semi-auto pass (src/mycel/parallel) and the
// strategy search read each op's rule from the registry (OpDef::shard, OpDef::cost); most rules are
// written as dim labels (einsum-like) by the helpers at the end of this file.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mycel/core/tensor.h"

namespace mycel {

class Attrs;
struct OpDef;

namespace shard {

/// Split counts of one tensor, one per dim (MindSpore's strategy tuple: (2, 1) splits dim 0 in 2).
using Dims = std::vector<int64_t>;
/// One Dims per tensor input, in input order (MindSpore's in_strategy). An absent optional input
/// gets an empty Dims.
using Strategy = std::vector<Dims>;

/// The device_num ranks arranged as a row-major array; rank r's coordinates are r's row-major
/// digits (the last axis varies fastest).
struct DeviceMatrix {
  std::vector<int64_t> dims;
  int64_t size() const;
  std::vector<int64_t> coords(int64_t rank) const;
  /// The ranks that share `rank`'s coordinates except on `axes` (the group of a collective over
  /// those axes), in increasing coordinate order (row-major over `axes`).
  std::vector<int64_t> group(int64_t rank, const std::vector<int>& axes) const;
  bool operator==(const DeviceMatrix& o) const { return dims == o.dims; }
};

/// Where the slices of one tensor live (MindSpore's TensorLayout). tensor_map[i] is the axis of
/// `device` that splits tensor dim i (axes count from the LEFT, 0 = outermost; MindSpore counts
/// from the right), or -1: dim i is not split. Axes no dim uses hold copies. `partial` lists axes
/// over which the value is a pending sum: the full tensor is the sum of the slices over them.
struct TensorLayout {
  DeviceMatrix device;
  std::vector<int> tensor_map;
  Shape shape;               // the full (global) shape
  std::vector<int> partial;  // axes of a pending sum (after a reduction-dim split), sorted

  Shape slice_shape() const;
  Dims split_counts() const;
  /// Start of rank's slice along each dim.
  std::vector<int64_t> slice_offset(int64_t rank) const;
  bool operator==(const TensorLayout& o) const;
  bool operator!=(const TensorLayout& o) const { return !(*this == o); }
  /// "dev[2,2] map[0,-1] shape(8, 4)" (+ " partial[1]") for messages and tests.
  std::string str() const;
  /// Throws ValueError (naming `what`) unless the map fits the shape and the device matrix and
  /// every split dim divides evenly.
  void check(const std::string& what) const;
};

/// The layout `dims` gives a tensor of `shape` on device_num ranks: device matrix
/// [device_num / prod(dims), dims...] (the first axis repeats the slices), dim i on axis i + 1.
/// Throws ValueError if prod(dims) does not divide device_num or a split does not divide its dim.
TensorLayout layout_from_dims(const Shape& shape, const Dims& dims, int64_t device_num);
/// A tensor held whole by every rank.
TensorLayout replicated(const Shape& shape, int64_t device_num);

/// One collective the op needs inside, applied to output `output` after the local op runs: a
/// registry collective ("all_reduce", "all_gather", "reduce_scatter", "all_to_all") over the
/// ranks that differ only on `axes` of the plan's device matrix. reduce_op is "sum", "max",
/// "min", "prod", or "mean": a sum divided by the group size (a mean over equal slices).
struct Comm {
  std::string op = "all_reduce";
  std::vector<int> axes;
  std::string reduce_op = "sum";
  int output = 0;
  int64_t bytes = 0;  // bytes each device sends (payload size of its slice)
};

/// What an op does under one strategy: the device matrix, the layout every input must have, the
/// outputs' layouts once `comms` ran, the collectives, and attribute values the local op needs
/// instead of the global ones (e.g. reshape's target shape becomes the slice's shape).
struct ShardPlan {
  DeviceMatrix device;
  std::vector<TensorLayout> inputs;  // absent optional inputs: an empty layout (no shape)
  std::vector<TensorLayout> outputs;
  std::vector<Comm> comms;
  std::vector<std::pair<std::string, std::vector<int64_t>>> local_int_attrs;
  std::string str() const;
};

/// Work per device for one strategy (the local op plus its comms' payloads).
struct OpCost {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
};

/// What a sharding rule sees: the op, its input metas (absent optional: nullptr), attributes,
/// the device count and the full output metas (as infer gives them).
struct ShardContext {
  const OpDef& op;
  const std::vector<const TensorMeta*>& inputs;
  const Attrs& attrs;
  const std::vector<TensorMeta>& outputs;
  int64_t device_num;
  const TensorMeta& in(size_t i) const { return *inputs.at(i); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
};

/// Strategy -> plan; throws ValueError naming the op, the input and the reason for a strategy the
/// op cannot run.
using ShardFn = std::function<ShardPlan(const ShardContext&, const Strategy&)>;
/// Every valid strategy for ctx.device_num (each one's product may be below device_num: the
/// remaining devices repeat the work). The first is the all-ones (replicated) strategy.
using StrategiesFn = std::function<std::vector<Strategy>(const ShardContext&)>;
/// Work per device of a plan made by the op's ShardFn.
using CostFn = std::function<OpCost(const ShardContext&, const ShardPlan&)>;

/// A sharding rule: plan and enumeration, stored in OpDef::shard.
struct ShardRule {
  ShardFn plan;
  StrategiesFn strategies;
  explicit operator bool() const { return static_cast<bool>(plan); }
};

// ---- Lookup (used by the pass and the search) ---------------------------------------------

/// The op's rule: OpDef::shard, else the elementwise rule for ops with the `elementwise` trait,
/// else an empty rule (the op runs replicated only).
ShardRule rule_of(const OpDef& op);
/// Plans `strategy` for the op; replicated-only ops accept only all-ones strategies.
ShardPlan plan(const ShardContext& c, const Strategy& strategy);
/// Valid strategies for the op (at least the replicated one).
std::vector<Strategy> strategies(const ShardContext& c);
/// Cost of a plan: OpDef::cost if set, else a generic estimate (one flop per output element of
/// the slice, slices' bytes read and written) plus the comms' bytes.
OpCost cost(const ShardContext& c, const ShardPlan& p);

// ---- Helpers for rules written as dim labels ---------------------------------------------

/// A label spec in einsum style: one label string per input ("" for a scalar or an absent input)
/// and per output, e.g. matmul {"ik", "kj"} -> {"ij"}. Input labels absent from every output
/// are reduction labels (a split one leaves a partial sum: the op ends with an AllReduce over its
/// axis). Labels in `fixed` may never be split (softmax's axis, conv's kernel window).
/// `reduce_op` is the reduction of partial results ("sum", or "max" for max-reductions).
/// Broadcast dims of size 1 are given the label '1' and are never split.
struct LabelSpec {
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::string fixed;
  std::string reduce_op = "sum";
  bool no_partial = false;  // splitting a reduction label is invalid (the op is not a sum)
};
/// Plan from labels: every input's split of a label must agree; an input whose dim is size 1
/// (broadcast) is labelled '1'. Device matrix = [repeat, one axis per split label in order of
/// first appearance].
ShardPlan plan_from_labels(const ShardContext& c, const Strategy& s, const LabelSpec& spec);
/// Every assignment of split counts (divisors of device_num, dividing the dims) to the splittable
/// labels whose product divides device_num, as a Strategy.
std::vector<Strategy> strategies_from_labels(const ShardContext& c, const LabelSpec& spec);
/// A rule built from a function that gives the spec for this call (it may read shapes and attrs).
ShardRule label_rule(std::function<LabelSpec(const ShardContext&)> spec_of);

/// The matching cost: a contraction (some label reduced) costs 2 flops per term over every
/// label's slice; otherwise one flop per output element of the slice; bytes are the slices'.
CostFn label_cost(std::function<LabelSpec(const ShardContext&)> spec_of);
/// The spec of an elementwise op with numpy broadcasting (the rule of the `elementwise` trait).
LabelSpec elementwise_spec(const ShardContext& c);

/// Labels for inputs that broadcast to `full` (numpy rules): output labels 'a', 'b', ...; each
/// input takes the trailing labels of its rank, '1' where it broadcasts. outputs = {full's labels}.
LabelSpec broadcast_spec(const ShardContext& c, const Shape& full);
/// Sets op.shard and op.cost from a spec function (how family files attach a label rule).
void set_label_rule(OpDef& op, std::function<LabelSpec(const ShardContext&)> spec_of);
/// n consecutive labels from `first`: labels(3, 'a') == "abc".
std::string labels(size_t n, char first = 'a');

/// Bytes of `n` elements of dtype t.
int64_t bytes_of(int64_t n, DType t);

}  // namespace shard
}  // namespace mycel
