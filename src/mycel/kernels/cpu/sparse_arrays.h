// Kernels of MindSpore's sparse primitives whose output sizes are read from the input values
// (ops/sparse_arrays.cc): a count of a value per batch (SparseCountSparseOutput), a segment mean
// with a given segment count, and the COO -> batched CSR conversion and the CSR transpose. Each
// checks the index values first (RuntimeError naming the op, as these are run-time values), then
// allocates its data-dependent outputs (they come in undefined) at the size it found.
#pragma once
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// (int64 (K, rank) [batch,] value indices, per-index weight sums or counts, int64 dense shape)
/// of values (N,) grouped by the batch in indices[:, 0] (rank 2) or in one batch (rank 1).
void sparse_count_sparse_output_kernel(const KernelContext& ctx);
/// (num_segments, x.shape[1:]): the mean of the rows x[indices[j]] with segment_ids[j] == s.
void sparse_segment_mean_with_num_segments_kernel(const KernelContext& ctx);
/// Shaped like x: dout[segment_ids[j]] / count(segment_ids[j]) added into row indices[j].
void sparse_segment_mean_grad_kernel(const KernelContext& ctx);
/// (dense_shape, batch_pointers (B + 1,), row_pointers (B * (rows + 1),), col_indices, values)
/// of a rank-2 or rank-3 COO tensor, entries sorted into row-major order.
void sparse_tensor_to_csr_sparse_matrix_kernel(const KernelContext& ctx);
/// Its gradient in x_values (x_indices, x_dense_shape, the values' sensitivity): the
/// sensitivity put back in the COO entries' order.
void sparse_tensor_to_csr_sparse_matrix_grad_kernel(const KernelContext& ctx);
/// The batched CSR matrix of each batch's transpose (values conjugated with `conjugate`).
void sparse_matrix_transpose_kernel(const KernelContext& ctx);
/// Its gradient in x_values (the input's structure, the values' sensitivity): the sensitivity
/// put back in the input's entry order (conjugated with `conjugate`).
void sparse_matrix_transpose_grad_kernel(const KernelContext& ctx);

}  // namespace mycel::cpu
