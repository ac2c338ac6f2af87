// add, sub and mul of two same-shape bfloat16 tensors in AVX2 lanes: widen, compute in float,
// round once, with the bits of binary_map's scalar loop (BFloat16(float(a) op float(b))), whose
// branchy rounding GCC does not vectorize (2048x128: 65 us against 23 for the float32 add).
#pragma once
#include "mycel/core/tensor.h"

namespace mycel::cpu {

enum class Bf16BinOp { kAdd, kSub, kMul };

/// out = a op b when a, b and out are bfloat16 with out's element count (no broadcasting) and
/// MYCEL_BF16_BINARY_LANES is not "0" (read per call, for A/B); false (nothing written) otherwise.
bool bf16_binary_same_shape(Bf16BinOp op, const Tensor& a, const Tensor& b, Tensor& out);

}  // namespace mycel::cpu
