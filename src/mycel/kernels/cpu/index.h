// Indexing kernels: gathers and scatters by integer index tensors, and one-hot encoding. Every
// index is checked in a first pass that throws IndexError before anything is read or written.
#pragma once
#include <cstdint>
#include <vector>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// Reads `indices` (int32/int64) as rows of dims.size() coordinates into `dims` and returns each
/// row's row-major linear index; negative coordinates count from the end if allow_negative.
/// Throws IndexError naming `op` and the axis (first_axis + coordinate) on the first one out of
/// range.
std::vector<int64_t> linear_indices(const Tensor& indices, const Shape& dims, bool allow_negative,
                                    const char* op, int64_t first_axis = 0);

/// out[o, r, i] = src[o, rows[r], i]: src viewed as (outer, n, inner), out as (outer, rows, inner).
void gather_blocks(const Tensor& src, const std::vector<int64_t>& rows, int64_t outer,
                   int64_t inner, Tensor& out);
/// out = input; then out[rows[r] * inner + i] += updates[r * inner + i] (duplicates accumulate).
void scatter_add_blocks(const Tensor& input, const Tensor& updates,
                        const std::vector<int64_t>& rows, int64_t inner, Tensor& out);
/// Element gathers and scatters along one axis (gather_elements, tensor_scatter_elements): src or
/// out viewed as (outer, n, inner), idx (normalized, as from linear_indices), updates and the
/// gathered result as (outer, m, inner).
/// out[o, j, i] = src[o, idx[o, j, i], i].
void gather_along_axis(const Tensor& src, const std::vector<int64_t>& idx, int64_t outer, int64_t n,
                       int64_t m, int64_t inner, Tensor& out);
/// out = input; then out[o, idx[o, j, i], i] = updates[o, j, i], or += when `add` (in order).
void scatter_along_axis(const Tensor& input, const Tensor& updates, const std::vector<int64_t>& idx,
                        int64_t outer, int64_t n, int64_t m, int64_t inner, bool add, Tensor& out);
/// out viewed as (outer, depth, inner): on where indices[o, i] == d, off elsewhere.
void one_hot(const Tensor& indices, Tensor& out, int64_t outer, int64_t depth, int64_t inner,
             double on, double off);

}  // namespace mycel::cpu
