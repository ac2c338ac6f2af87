// vmap as a transform of specialized IR (DESIGN.md sections 3 and 9): a graph f over one item
// becomes a graph over a batch, each op call rewritten by its batching rule (ops/batch.h), so the
// result is one compiled program, composable with grad in either order (pipeline::compile_step
// applies a chain of transforms innermost first).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mycel/ir/func_graph.h"

namespace mycel::ad {

/// Where the batch is in a value (MindSpore's in_axes / out_axes): `mapped` and an axis for a whole
/// value (every tensor in it), or one entry per item of a tuple. Unmapped: None.
struct BatchAxes {
  bool leaf = true;
  bool mapped = false;
  int64_t axis = 0;               // may be negative until normalized
  std::vector<BatchAxes> items;   // when !leaf
  static BatchAxes none() { return {}; }
  static BatchAxes at(int64_t a) { return {true, true, a, {}}; }
  static BatchAxes tuple(std::vector<BatchAxes> items) { return {false, false, 0, std::move(items)}; }
  std::string repr() const;
};

/// One vmap level: in_axes (a leaf applies to every input; else one entry per input) and out_axes.
struct VmapSpec {
  BatchAxes in_axes = BatchAxes::at(0);
  BatchAxes out_axes = BatchAxes::at(0);
};

/// The inputs one item sees: `batched` (the abstracts of the call's inputs, weights excluded) with
/// the mapped axes removed. Sets `batch_size` and `expanded` (in_axes spelled out to the
/// structure of each input, axes normalized). Errors name the argument, the axis and the shape.
std::vector<ir::AbstractPtr> unbatched_inputs(const std::vector<ir::AbstractPtr>& batched, const VmapSpec& spec,
                                              int64_t& batch_size, std::vector<BatchAxes>& expanded);

/// The batched graph of a specialized top-level graph f without calls of other graphs (inlined):
/// parameters take `batched` abstracts (weights are never batched), each op call goes through its
/// batching rule (or runs once per item), and outputs move their batch to out_axes.
ir::FuncGraph* vmap_graph(ir::FuncGraph* f, const VmapSpec& spec, const std::vector<BatchAxes>& expanded,
                          const std::vector<ir::AbstractPtr>& batched, int64_t batch_size);

}  // namespace mycel::ad
