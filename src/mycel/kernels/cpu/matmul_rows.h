// c = a b by blocks of c's rows, one per thread, each followed by a row epilogue on the rows that
// thread has just written, while they are in its cache (backend/fuse_mask_product.cc: the relu
// mask of a bf16 FFN's dx applied to the dx matmul's output, not in a pass of its own).
#pragma once
#include <cstdint>
#include <memory>

#include "mycel/core/tensor.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// What runs on rows [r0, r1) of c (a's leading dims and M flattened) once they are written.
using RowEpilogue = void (*)(void* ctx, int64_t r0, int64_t r1);

/// c = a b then `after` on every row of c exactly once: a (..., M, K) and c (..., M, N) plain,
/// b (K, N) 2-d, one dtype (bfloat16 or float32), no transposes. With T threads and T dividing
/// the rows, each thread runs a one-thread oneDNN primitive on its rows and then `after` on them;
/// otherwise one primitive on all rows, then `after` by blocks of rows. `slot`: the launch's
/// prepared state (graph mode), or null.
void matmul_rows_then(const Tensor& a, const Tensor& b, Tensor& c, RowEpilogue after, void* ctx,
                      std::unique_ptr<KernelPrepared>* slot);

}  // namespace mycel::cpu
