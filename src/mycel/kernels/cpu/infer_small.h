// Kernels for small layers of batch-1 inference, where a oneDNN call's fixed cost (3-4 us per
// primitive on the 2-core EPYC) outweighs the work: LeNet5's dense layers, 2x2 max pooling and
// the reorder before its flatten took 24 of its 49 us in the lite runtime. The lite runtime
// picks them per node when it plans (lite/session.cc), so the choice is data, made once.
#pragma once
#include <cstdint>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// The activation a kernel applies before its one store.
enum class SmallAct { kNone, kRelu, kRelu6 };

/// Dense weights w (n, k) float32 repacked for dense_rows: transposed to (k, n8), n8 = n rounded
/// up to 8 with zero columns, so each input element feeds contiguous output vectors.
Tensor pack_dense_rows(const Tensor& w);

/// y (m, n) = act(x (m, k) @ w.T + bias) with w from pack_dense_rows; bias may be null. For a
/// few rows: the outputs' accumulators stay in registers while x streams once per row.
void dense_rows(const float* x, const float* packed, const float* bias, float* y, int64_t m,
                int64_t k, int64_t n, SmallAct act);

/// 2x2, stride 2, unpadded max pooling of a channel-blocked float32 tensor, x laid out
/// (n, cb, h, w, block) and y (n, cb, oh, ow, block) with oh <= h / 2, ow <= w / 2 (block: the
/// channels per block; a whole NHWC pixel when cb == 1). Zero padding channels stay zero.
void max_pool2x2_blocked(const float* x, float* y, int64_t n, int64_t cb, int64_t h, int64_t w,
                         int64_t oh, int64_t ow, int64_t block);

/// The same for uint8 data (NHWC: cb = 1, block = channels): int8 models' activations.
void max_pool2x2_blocked(const uint8_t* x, uint8_t* y, int64_t n, int64_t cb, int64_t h, int64_t w,
                         int64_t oh, int64_t ow, int64_t block);

/// y (n, c, hw) := x (n, cb, hw, block), cb = ceil(c / block): a blocked tensor back to NCHW.
void unblock_to_nchw(const float* x, float* y, int64_t n, int64_t c, int64_t hw, int64_t block);

}  // namespace mycel::cpu
