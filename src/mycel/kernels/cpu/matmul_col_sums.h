// A weight gradient dW = dy^T x with its bias gradient db = the column sums of dy in one launch
// (backend/fuse_bias_grad.cc): where the matmul splits along K (dnnl_matmul.cc), each thread sums
// the rows of dy that its part of the matmul has just read, into a float partial, and the
// partials are added and rounded once with the matmul's; db no longer reads dy from memory in a
// launch of its own.
#pragma once
#include <memory>

#include "mycel/core/tensor.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// c = a^T b and sums[j] = the sum over the rows i of a[i, j], summed in float and rounded once
/// to sums' dtype; a (K, M) and b (K, N) 2-d of one dtype (float32 or bfloat16), c (M, N) and
/// sums (M) of that dtype. `slot`: the launch's prepared state (graph mode), or null.
void matmul_col_sums(const Tensor& a, const Tensor& b, Tensor& c, Tensor& sums,
                     std::unique_ptr<KernelPrepared>* slot);

}  // namespace mycel::cpu
