// Shape-inference helpers shared by op families. Each check throws an error that names the op,
// the argument, what was expected and what was given.
#pragma once
#include <string>
#include <vector>

#include "mycel/ops/registry.h"

namespace mycel {

/// Output = input 0 (same shape, same dtype).
std::vector<TensorMeta> infer_same_as_input(const InferContext& ctx);
/// Output shape = broadcast of all defined inputs; dtype = input 0's (inputs are promoted).
TensorMeta infer_broadcast(const InferContext& ctx, DType dtype);
/// The float dtype numpy computes a transcendental function of `t` in (int32 -> float64, ...).
DType float_result_dtype(DType t);
/// Throws ShapeError unless input i has rank in [lo, hi].
void check_rank(const InferContext& ctx, size_t i, int64_t lo, int64_t hi);
/// Throws TypeError unless input i's dtype is floating point.
void check_float(const InferContext& ctx, size_t i);
/// Throws TypeError unless inputs i and j share a dtype.
void check_same_dtype(const InferContext& ctx, size_t i, size_t j);
/// Name of input i for messages.
const std::string& input_name(const InferContext& ctx, size_t i);

}  // namespace mycel
