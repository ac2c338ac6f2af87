// Reductions and scans on CPU. One loop family: the input is viewed as (outer, reduced, inner)
// (reduced axes that are not adjacent are first copied to the end), each op supplies a small
// accumulator (init / step / merge / finalize) and the loop handles pairwise blocking,
// vectorization and threading.
#pragma once
#include <cstdint>
#include <vector>

#include "mycel/ops/registry.h"

namespace mycel::cpu {

/// A reduction over normalized `axes` of `shape` seen as a 3-d (outer, reduce, inner) loop.
struct ReduceView {
  int64_t outer = 1, reduce = 1, inner = 1;
  std::vector<int64_t> perm;  // non-empty: transpose the input by perm first (then inner == 1)
};
ReduceView plan_reduce(const Shape& shape, const std::vector<int64_t>& axes);

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

}  // namespace mycel::cpu
