// Reductions and scans on CPU. One loop family: the input is viewed as (outer, reduced, inner)
// (non-adjacent reduced axes are reduced group by group, carrying accumulators between stages),
// each op supplies a small accumulator (init / step / merge / finalize) and the loop handles
// pairwise blocking, vectorization and threading.
#pragma once
#include <cstdint>
#include <vector>

#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// One pass of a reduction: the current data seen as (outer, reduce, inner).
struct ReduceStage {
  int64_t outer = 1, reduce = 1, inner = 1;
};
/// Stages reducing normalized `axes` of `shape`: one per group of adjacent reduced axes (unit
/// dims ignored), innermost first; each stage's input is the previous stage's output.
std::vector<ReduceStage> plan_reduce(const Shape& shape, const std::vector<int64_t>& axes);

// Kernels; each reads its attributes (axis, keep_dims, ddof, ...) from the context. Input
// validation happened in the op's infer.
void sum_kernel(const KernelContext& ctx);
void mean_kernel(const KernelContext& ctx);
void prod_kernel(const KernelContext& ctx);
void max_kernel(const KernelContext& ctx);
void min_kernel(const KernelContext& ctx);
void all_kernel(const KernelContext& ctx);
void any_kernel(const KernelContext& ctx);
void logsumexp_kernel(const KernelContext& ctx);
void var_kernel(const KernelContext& ctx);
void std_kernel(const KernelContext& ctx);
void argmax_kernel(const KernelContext& ctx);
void argmin_kernel(const KernelContext& ctx);
void cumsum_kernel(const KernelContext& ctx);
void cumprod_kernel(const KernelContext& ctx);
/// dx of cumprod from (x, dy), exact where x holds zeros.
void cumprod_grad_kernel(const KernelContext& ctx);

}  // namespace mycel::cpu
