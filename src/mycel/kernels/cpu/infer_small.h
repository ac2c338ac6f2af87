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

/// Dense weights w (n, k) float32 repacked for dense_rows: n rounded up to n8 (a multiple of 8)
/// with zero rows, cut into panels of 64 outputs (the last one narrower), each panel transposed
/// to (k, width) and stored whole: a panel's weights stream contiguously through its
/// accumulators (a (k, n8) transpose read 256 bytes per k with a row's stride between them, which
/// held MobileNetV2's 1280 x 1000 classifier at 11 GB/s).
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

/// y (n, c) := the mean over the hw positions of each channel of x laid out (n, cb, hw, block),
/// cb = ceil(c / block) (NHWC: cb = 1, block = c): global average pooling read straight from the
/// blocked layout, with no reorder to NCHW first.
void mean_hw_blocked(const float* x, float* y, int64_t n, int64_t c, int64_t hw, int64_t block);

/// y = act(a + b) over `count` float32 elements (a residual add and its relu in one pass; y may
/// alias a or b).
void add_act(const float* a, const float* b, float* y, int64_t count, SmallAct act);

}  // namespace mycel::cpu
