// c = a @ b over strided views (dnnl_strided_matmul.h) by blocks of the batch, each followed on
// the thread that computed it by a row epilogue while the block is in its cache: attention's
// scores and their softmax, or dP and softmax's gradient (backend/fuse_heads_softmax.cc), whose
// (heads, L, L) tensors would otherwise go out to L3 between the two launches.
#pragma once
#include <cstdint>
#include <memory>

#include "mycel/kernels/cpu/dnnl_strided_matmul.h"
#include "mycel/kernels/cpu/matmul_rows.h"

namespace mycel::cpu {

/// c = a @ b over `s` (c's view plain and contiguous: (A, C, M, N), A the first dim of all three
/// views) and then `after` on every row of c (as A * C * M rows of N) exactly once, on the thread
/// that wrote it. The batch is cut into blocks of whole first-dim entries, one a thread but at
/// most 1 MiB of c each (MYCEL_HEADS_BLOCK_KB overrides the bound, for measurements), dealt out
/// to the threads; each block is matmul_strided on its sub-views on one thread.
/// `slot`: the launch's prepared state (graph mode), or null.
void matmul_strided_then(const Tensor& a, const Tensor& b, Tensor& c, const StridedMatmul& s,
                         RowEpilogue after, void* ctx, std::unique_ptr<KernelPrepared>* slot);

}  // namespace mycel::cpu
