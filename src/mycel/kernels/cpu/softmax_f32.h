// float32 softmax, log_softmax and softmax's gradient over the last axis, as row loops in AVX-512
// lanes where the CPU has them (else AVX2): one thread's share of the rows each, every row's max,
// exp and sum in one pass over it while it is in L1. For the transformer step's 8192 rows of 128
// on two Ice Lake cores (launch minima): oneDNN 2.6's jit softmax 629-685 us, these 566-600;
// the gradient 411-449 us as nn_ref.cc's loop, 422-496 here. Alone they are bound by the 8-12
// MiB each moves through L3; fuse_heads_softmax.cc runs them on a product's rows in L2 (scores
// and softmax 771-826 us against 486-499 + 566-629 as two launches). exp and log are vmath.h's
// (about 1 ulp).
#pragma once
#include <cstdint>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// y = softmax (log: log_softmax) of x over the last axis, x and y float32 viewed as (rows, len).
/// Returns false (nothing written) where x or y is not float32.
bool softmax_f32_last_axis(const Tensor& x, Tensor& y, int64_t rows, int64_t len, bool log);

/// dx = y * (dy - sum(y * dy)) over the last axis of (rows, len), all float32; false otherwise.
bool softmax_grad_f32_last_axis(const Tensor& y, const Tensor& dy, Tensor& dx, int64_t rows,
                                int64_t len);

/// softmax of rows [r0, r1) of x into y (y may be x) on the calling thread: the rows of a product
/// block that backend/fuse_heads_softmax.cc applies it to while they are in cache.
void softmax_f32_rows(const float* x, float* y, int64_t r0, int64_t r1, int64_t len);

/// softmax_grad_f32_last_axis's rows [r0, r1) on the calling thread (dx may be dy).
void softmax_grad_f32_rows(const float* y, const float* dy, float* dx, int64_t r0, int64_t r1,
                           int64_t len);

}  // namespace mycel::cpu
