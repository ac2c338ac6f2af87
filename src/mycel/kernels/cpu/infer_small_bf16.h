// bf16 forms of infer_small.h's loops for the lite runtime's bf16 graph (lite/precision.h), where
// the generic bf16 kernels cost more than the work: in ResNet-18 the residual add+relu took 5-32
// us each and the global average pooling 52 us (a reorder to NCHW, then a generic mean), in
// MobileNetV2 the input's cast to bf16 140 us. Values are computed in float32 and rounded to
// bf16 once, to nearest even (half.h's float_to_bf16_bits), as the generic kernels round.
#pragma once
#include <cstdint>

#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/infer_small.h"

namespace mycel::cpu {

/// y = act(a + b) over `count` bf16 elements (bits), in float32 then rounded (y may alias a or b).
void add_act_bf16(const uint16_t* a, const uint16_t* b, uint16_t* y, int64_t count, SmallAct act);

/// y = x rounded to bf16 (nearest even; NaN stays a quiet NaN), `count` elements.
void cast_f32_to_bf16(const float* x, uint16_t* y, int64_t count);

/// y (n, c) := the mean over the hw positions of each channel of bf16 x laid out
/// (n, cb, hw, block), cb = ceil(c / block) (NHWC: block = c): sums in float32 in position order,
/// divided by hw, rounded to bf16.
void mean_hw_bf16(const uint16_t* x, uint16_t* y, int64_t n, int64_t c, int64_t hw, int64_t block);

/// bf16 dense weights w (n, k) repacked as pack_dense_rows packs float32 ones (panels of 64
/// outputs, each transposed to (k, width)), still bf16: half the bytes to stream.
Tensor pack_dense_rows_bf16(const Tensor& w);

/// y (m, n) = act(x (m, k) @ w.T + bias), bf16 in and out, w from pack_dense_rows_bf16, bias
/// (bf16) may be null: float32 accumulators in registers over k, each weight widened as it
/// streams, one rounding at the end. For a few rows (MobileNetV2's classifier: oneDNN's bf16
/// matmul took 227-235 us).
void dense_rows_bf16(const uint16_t* x, const uint16_t* packed, const uint16_t* bias, uint16_t* y,
                     int64_t m, int64_t k, int64_t n, SmallAct act);

}  // namespace mycel::cpu
