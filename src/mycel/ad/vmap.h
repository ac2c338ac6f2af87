// vmap as a transform of specialized IR (DESIGN.md sections 3 and 9): a graph f over one item
// becomes a graph over a batch, each op call rewritten by its batching rule (ops/batch.h), so the
// result is one compiled program, composable with grad in either order: at the top level through
// pipeline::compile_transformed (a chain of transforms, innermost first), inside a graph through
// expand_vmap_calls (vmap functions made or called in parsed code).
#pragma once
#include <cstdint>
#include <vector>

#include "mycel/ir/func_graph.h"

namespace mycel::ad {

using ir::BatchAxes;

/// One vmap level: in_axes (a leaf applies to every input; else one entry per input) and out_axes.
struct VmapSpec {
  BatchAxes in_axes = BatchAxes::at(0);
  BatchAxes out_axes = BatchAxes::at(0);
};

/// The inputs one item sees (analysis::detail::unbatched_inputs): `batched` with the mapped axes
/// removed; sets `batch_size` and `expanded` (in_axes spelled out per input, axes normalized).
std::vector<ir::AbstractPtr> unbatched_inputs(const std::vector<ir::AbstractPtr>& batched,
                                              const VmapSpec& spec, int64_t& batch_size,
                                              std::vector<BatchAxes>& expanded);

/// The batched graph of a specialized top-level graph f without calls of other graphs (inlined):
/// parameters take `batched` abstracts (weights are never batched), each op call goes through its
/// batching rule (or runs once per item), and outputs move their batch to out_axes.
ir::FuncGraph* vmap_graph(ir::FuncGraph* f, const VmapSpec& spec,
                          const std::vector<BatchAxes>& expanded,
                          const std::vector<ir::AbstractPtr>& batched, int64_t batch_size);

/// The same for a graph f nested anywhere, made nested in `parent`: f's free variables (a Cell's
/// weights, values of enclosing functions) are shared by every item.
ir::FuncGraph* vmap_graph_in(ir::FuncGraph* parent, ir::FuncGraph* f, const VmapSpec& spec,
                             const std::vector<BatchAxes>& expanded,
                             const std::vector<ir::AbstractPtr>& batched, int64_t batch_size);

/// Replaces calls of vmap functions made inside the graph (`vmap_op(S)(x...)`, left by analysis)
/// whose S holds no pending gradient or vmap calls by calls of S's batched graph; a vmap or
/// gradient of a vmap gets its function made first. Returns false when it changed nothing.
bool expand_vmap_calls(ir::FuncGraph* top);
/// Whether calls of vmap functions are left in the graphs reachable from top.
bool has_vmap_calls(ir::FuncGraph* top);

}  // namespace mycel::ad
