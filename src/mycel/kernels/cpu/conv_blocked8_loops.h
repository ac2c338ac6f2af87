// The plain loops that stand in for oneDNN's small reorders around a convolution kept on its
// native NHWC primitive between nChw8c tensors (dnnl_conv.cc, keep_native and loop_reorder): on
// the calling thread, no OpenMP region of their own. float32.
#pragma once
#include <cstdint>

#include "mycel/kernels/cpu/conv_winograd.h"

namespace mycel::cpu {

/// nChw8c -> NHWC (c channels, hw positions per image, n images).
void blocked8_to_nhwc(const float* x, float* y, int64_t n, int64_t c, int64_t hw);

/// NHWC -> nChw8c, the channels past c (the last block's padding) zero.
void nhwc_to_blocked8(const float* x, float* y, int64_t n, int64_t c, int64_t hw);

/// nhwc_to_blocked8 of a convolution's output, then y = act(y + residual) (residual in nChw8c,
/// y's layout, its padding zero): a ResNet block's residual add and relu (fuse_post_ops.cc) in
/// the convolution's launch, over y while it is still in this core's cache.
void nhwc_to_blocked8_residual(const float* x, const float* residual, float* y, int64_t n,
                               int64_t c, int64_t hw, WinogradAct act);

}  // namespace mycel::cpu
