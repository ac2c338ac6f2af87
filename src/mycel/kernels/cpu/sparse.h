// Sparse-matrix kernels over CSR arrays (indptr (M + 1,), indices (nnz,) column of each value):
// SpMM and its transpose, SDDMM (the SpMM gradient with respect to the values), gathers of a
// dense matrix at the sparsity pattern and back, and the CSR <-> COO row conversions. Every
// kernel checks the index arrays first and throws ValueError before reading through them.
#pragma once
#include <cstdint>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// Throws ValueError naming `op` unless indptr starts at 0, never decreases, ends at nnz and
/// every column index lies in [0, cols).
void check_csr(const Tensor& indptr, const Tensor& indices, int64_t rows, int64_t cols,
               const char* op);

/// out (M, K) = A dense (dense (N, K)); with `transpose`, out (N, K) = A^T dense (dense (M, K)).
void csr_spmm(const Tensor& indptr, const Tensor& indices, const Tensor& values,
              const Tensor& dense, Tensor& out, bool transpose);
/// out[j] = dot(x[row j], y[col j]) for x (M, K), y (N, K): the values of (x y^T) at A's pattern.
void csr_sddmm(const Tensor& indptr, const Tensor& indices, const Tensor& x, const Tensor& y,
               Tensor& out);
/// out[j] = dense[row j, col j] for dense (M, N).
void csr_gather(const Tensor& indptr, const Tensor& indices, const Tensor& dense, Tensor& out);
/// out (M, N) = zeros with values[j] added at (row j, col j) (duplicates accumulate).
void csr_scatter(const Tensor& indptr, const Tensor& indices, const Tensor& values, Tensor& out);
/// out[j] = the row of value j (length = nnz = indptr[-1]).
void csr2coo(const Tensor& indptr, Tensor& out);
/// out (height + 1,) = the indptr of sorted row indices; ValueError if unsorted or out of range.
void coo2csr(const Tensor& rows, Tensor& out);

}  // namespace mycel::cpu
