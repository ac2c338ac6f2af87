// The N-d scatter reductions other than add (tensor_scatter_mul/div/max/min): out = input, then
// each index row's block combined with its update block, rows in order (duplicates compound).
#pragma once
#include <cstdint>
#include <vector>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

enum class ScatterReduce : uint8_t { kMul, kDiv, kMax, kMin };

/// out = input; then out[rows[r] * inner + i] = op(out[...], updates[r * inner + i]).
/// Integer division by zero gives 0 (as the other integer divisions here); max/min propagate NaN.
void scatter_reduce_blocks(const Tensor& input, const Tensor& updates,
                           const std::vector<int64_t>& rows, int64_t inner, ScatterReduce op,
                           Tensor& out);

}  // namespace mycel::cpu
