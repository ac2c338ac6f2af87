// bfloat16 softmax and its gradient over the last axis (amp O2's attention weights) in float
// lanes (AVX-512 where the CPU has it, else AVX2): each row widened once, exp, sum and the
// gradient's dot product in float, every result rounded once to bf16 (nearest even), the formulas
// of nn_ref.h's softmax_ref and softmax_grad_ref. oneDNN 2.6's bf16 softmax took 0.60 ms for 8192
// rows of 128 on one Zen 4 core, this 0.31 (a short exp, exp512_bf16.h, each row held in
// registers, and AVX512-BF16's rounding), the reference gradient 0.49 ms, this 0.13. Each returns
// false where it does not apply (the caller runs its usual kernel).
#pragma once
#include <cstdint>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// y = softmax(x) along the last axis of x viewed as (rows, len); x and y bfloat16.
bool softmax_bf16_last_axis(const Tensor& x, Tensor& y, int64_t rows, int64_t len);

/// dx = y * (dy - sum(dy * y)) along the last axis of (rows, len); y, dy and dx bfloat16.
bool softmax_grad_bf16_last_axis(const Tensor& y, const Tensor& dy, Tensor& dx, int64_t rows,
                                 int64_t len);

/// softmax of rows [r0, r1) of x (rows of len) into y, on the calling thread (y may be x): the
/// rows of a product block that backend/fuse_heads_softmax.cc applies it to while in cache.
void softmax_bf16_rows(const uint16_t* x, uint16_t* y, int64_t r0, int64_t r1, int64_t len);

/// softmax_grad_bf16_last_axis's rows [r0, r1) on the calling thread (dx may be dy).
void softmax_grad_bf16_rows(const uint16_t* y, const uint16_t* dy, uint16_t* dx, int64_t r0,
                            int64_t r1, int64_t len);

}  // namespace mycel::cpu
