// Softmax over short rows of a small float32 tensor (a classifier's logits: 128 x 10 in the MLP
// step) as a plain loop with the branch-free vm_exp / vm_log (vmath.h). oneDNN's jit softmax
// spends ~40 ns of set-up per row there (5.9 µs for 128 x 10, the loop ~1-2 µs).
#pragma once
#include <cstdint>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// y = softmax (log: log_softmax) of x over the middle dim of (outer, len, inner) when x is
/// float32, the axis is the last (inner == 1), len <= 64 and x small enough for one thread
/// (numel <= 4096); returns false (nothing written) otherwise. A row with a non-finite maximum
/// takes softmax_ref's formulas (std::exp), so inf / NaN propagate as there.
bool softmax_small_rows(const Tensor& x, Tensor& y, int64_t outer, int64_t len, int64_t inner,
                        bool log);

}  // namespace mycel::cpu
