// Ops whose output size is known only after their kernel runs (unique, masked_select, nonzero):
// their infer gives kDataDependent (-1) for such a dim, and their kernel, handed an undefined
// output tensor, allocates it with the size it found. Eager dispatch, analysis (the dim becomes
// ir::kDynamic) and the graph backend (the value and what is computed from it are allocated and
// re-inferred at run time, backend/dynamic.cc) accept such dims; every other consumer of
// infer_checked (vmap, lite, the parallel planner) refuses them with an error naming the op.
#pragma once
#include <vector>

#include "mycel/ops/registry.h"

namespace mycel {

/// The dim an infer gives when the size depends on the input values (== ir::kDynamic).
inline constexpr int64_t kDataDependent = -1;

/// True if a dim of `m` is kDataDependent.
bool has_data_dependent_dim(const TensorMeta& m);

/// infer_checked that lets outputs have kDataDependent dims (all other checks kept).
std::vector<TensorMeta> infer_allowing_data_dependent(const OpDef& op, const InferContext& ctx);

}  // namespace mycel
