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
/// C = A (M, N) B (N, K) for CSR A and B (Gustavson's row-by-row product): c_indptr (M + 1,)
/// comes defined; c_indices and c_values are allocated here (their length is the structural
/// nnz of C: every (i, c) some A[i, k] B[k, c] reaches, kept even where the sum is 0), each
/// row's columns ascending.
void csr_spgemm(const Tensor& a_ptr, const Tensor& a_ind, const Tensor& a_val, const Tensor& b_ptr,
                const Tensor& b_ind, const Tensor& b_val, int64_t m, int64_t n, int64_t k,
                Tensor& c_ptr, Tensor& c_ind, Tensor& c_val);
/// The gradients (dA values, dB values) of C = A B given dC's values on C's pattern (c_ptr,
/// c_ind): dA[i, k] = sum_c dC[i, c] B[k, c], dB[k, c] = sum_i A[i, k] dC[i, c].
void csr_spgemm_grad(const Tensor& a_ptr, const Tensor& a_ind, const Tensor& a_val,
                     const Tensor& b_ptr, const Tensor& b_ind, const Tensor& b_val,
                     const Tensor& c_ptr, const Tensor& c_ind, const Tensor& dc_val, int64_t m,
                     int64_t n, int64_t k, Tensor& da_val, Tensor& db_val);

}  // namespace mycel::cpu
