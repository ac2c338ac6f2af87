// Sorting on CPU: sort, argsort and top_k share one row loop (gather a row's keys with their
// indices, order them, scatter values and indices). NaN sorts after every number, as in numpy.
#pragma once
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// Outputs (values, int64 indices) sorted along attribute `axis`; stable, `descending` optional.
void sort_kernel(const KernelContext& ctx);
/// Output: the int64 indices that stably sort x along `axis` (`descending` optional).
void argsort_kernel(const KernelContext& ctx);
/// Outputs (values, int64 indices) of the k largest entries along the last axis, largest first;
/// equal values keep index order.
void top_k_kernel(const KernelContext& ctx);

}  // namespace mycel::cpu
