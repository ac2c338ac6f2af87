// Data-movement kernels shared by the shape family: one "offset-table gather" covers transpose,
// broadcast, tile, slicing, padding and nearest resizing; block copies cover concat and split.
#pragma once
#include <cstdint>
#include <vector>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// Per output dimension d, the source element offset contributed by index i_d (or kPadOffset).
using OffsetTables = std::vector<std::vector<int64_t>>;
/// Marks an output position that lies in padding: it receives `fill` instead of a source element.
inline constexpr int64_t kPadOffset = -1;

/// out[i_0, ..., i_n] = src[base + sum_d tables[d][i_d]], or fill where any entry is kPadOffset.
void gather_offsets(const Tensor& src, Tensor& out, const OffsetTables& tables, int64_t base = 0,
                    double fill = 0.0);
/// The adjoint of gather_offsets (backward kernels): out = 0, then for every element i of src,
/// out[base + sum_d tables[d][i_d]] += src[i], skipping kPadOffset entries; tables index src's
/// dims. Repeated targets accumulate (reflect/edge padding, nearest upsampling).
void scatter_add_offsets(const Tensor& src, Tensor& out, const OffsetTables& tables,
                         int64_t base = 0);
/// Table for an output dim that walks a source dim: (start + i * step) * stride for i < n.
std::vector<int64_t> strided_table(int64_t n, int64_t start, int64_t step, int64_t stride);

/// Concatenates along `axis`: each input viewed as (outer, inputs[k].dim(axis) * inner).
void concat_blocks(const std::vector<Tensor>& inputs, Tensor& out, int64_t axis);
/// The inverse: splits `in` along `axis` into the preallocated outputs.
void split_blocks(const Tensor& in, std::vector<Tensor>& outputs, int64_t axis);
/// out = in, bit for bit (the copying kernel of view ops).
void copy_all(const Tensor& in, Tensor& out);
/// Fills out with v converted to its dtype.
void fill_value(Tensor& out, double v);
/// y = x with, in each matrix of the last two dims, only element (i, j) where j - i <= diagonal
/// (lower) or j - i >= diagonal (upper) kept and the rest zero: tril / triu.
void triangle(const Tensor& x, Tensor& y, int64_t diagonal, bool lower);

}  // namespace mycel::cpu
