// A batched matmul whose operands and result are strided views of their buffers (oneDNN reads and
// writes any strides): what backend/fold_head_transposes.cc makes of an attention head split or
// merge (a transpose of (N, L, heads, d) to (N, heads, L, d)) next to a batched matmul.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "mycel/core/tensor.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// An operand as the matmul sees it: dims (batch..., rows, cols) and the strides (elements) of
/// each dim in its buffer; a is (batch, M, K), b (batch, K, N), c (batch, M, N).
struct StridedView {
  std::vector<int64_t> dims, strides;
};

struct StridedMatmul {
  StridedView a, b, c;
};

/// c = a @ b over the views (float32 or bfloat16, the three of one dtype); for bf16 views that
/// suit it our own per-head kernel (matmul_heads_bf16.h), else oneDNN's matmul, or
/// where it has none (bfloat16 without AVX-512) the views copied to float32, multiplied and
/// rounded once into c.
void matmul_strided(const Tensor& a, const Tensor& b, Tensor& c, const StridedMatmul& s,
                    std::unique_ptr<KernelPrepared>* slot);

}  // namespace mycel::cpu
