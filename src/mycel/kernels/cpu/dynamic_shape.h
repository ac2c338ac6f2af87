// Kernels of the ops whose output size depends on the values (ops/data_dependent.h): each one
// counts first, then allocates its data-dependent outputs at the exact size (they come in
// undefined) and fills them.
#pragma once
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// Outputs (values, int64 inverse shaped like x, int64 counts) of the flattened x: sorted unique
/// values, or with attribute `consecutive` one value per run of equal neighbours. NaNs are equal.
void unique_with_counts_kernel(const KernelContext& ctx);
/// Output: the rows x[i] (i over mask's dims, x's leading dims) where mask is true, in order.
void masked_select_kernel(const KernelContext& ctx);
/// Output: int64 (count, x.ndim) indices of x's nonzero elements in row-major order.
void nonzero_kernel(const KernelContext& ctx);
/// Output: x with its rows where mask is true replaced, in order, by source's rows (flattened).
void masked_scatter_kernel(const KernelContext& ctx);
/// Output (shaped like source): dout's rows where mask is true, in order, then zeros.
void masked_scatter_grad_kernel(const KernelContext& ctx);

}  // namespace mycel::cpu
