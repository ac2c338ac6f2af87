// Dense linear algebra on CPU through LAPACK (LAPACKE, row-major): one matrix of a batch
// (..., M, N) at a time, float32/float64/complex64/complex128. Kernels read their inputs, copy
// each matrix into its output and let LAPACK work in place there; shapes were checked by infer.
#pragma once
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// inverse: out = x^-1 (getrf + getri); a singular matrix throws ValueError naming the op.
void matrix_inverse_kernel(const KernelContext& ctx);
/// det: out (...) = det(x) from the LU factors (0 for a singular matrix).
void det_kernel(const KernelContext& ctx);
/// slogdet: outputs (sign, log|det|) from the LU factors; a singular matrix gives (0, -inf).
void slogdet_kernel(const KernelContext& ctx);
/// cholesky: L with x = L L^H (attribute `upper`: U with x = U^H U); not positive definite throws.
void cholesky_kernel(const KernelContext& ctx);
/// cholesky_solve(b, factor): X with A X = b, A = L L^H (or U^H U when `upper`), via potrs.
void cholesky_solve_kernel(const KernelContext& ctx);
/// matrix_solve(matrix, rhs): X with A X = rhs (A^H X = rhs when `adjoint`), via getrf + getrs.
void matrix_solve_kernel(const KernelContext& ctx);
/// eigh: ascending eigenvalues w (real) and, if `compute_eigenvectors`, the eigenvectors as
/// columns of v, of a symmetric/Hermitian x read from its `lower` (or upper) triangle
/// (syevd/heevd).
void eigh_kernel(const KernelContext& ctx);
/// svd: descending singular values s and, if `compute_uv`, u and v (x = u diag(s) v^H; v, not
/// v^H, as MindSpore returns it), reduced unless `full_matrices` (gesdd).
void svd_kernel(const KernelContext& ctx);
/// qr: q with orthonormal columns and upper-triangular r, x = q r (geqrf + orgqr/ungqr); reduced
/// (q: M x K, r: K x N, K = min(M, N)) unless `full_matrices` (q: M x M, r: M x N).
void qr_kernel(const KernelContext& ctx);
/// lstsq(a, b): the least-squares / minimum-norm solution X (N x K) of a X = b via gelsd.
void lstsq_kernel(const KernelContext& ctx);

/// lu_factor: (LU, pivots) with P A = L U packed as LAPACK's getrf leaves it (L unit lower below
/// the diagonal, U on and above it) and 1-based int32 row interchanges (row i was swapped with
/// pivots[i]); a singular matrix factors too (U has a zero on its diagonal).
void lu_factor_kernel(const KernelContext& ctx);
/// lu_unpack(LU, pivots): (P, L, U) with A = P L U; pivots out of [1, N] throw ValueError.
void lu_unpack_kernel(const KernelContext& ctx);
/// lu_solve(b, LU, pivots): X with A X = b for A = P L U (getrs); bad pivots throw ValueError.
void lu_solve_kernel(const KernelContext& ctx);

/// eig: the eigenvalues of general square matrices and, if `compute_v`, their right eigenvectors
/// (unit columns, as LAPACK's geev normalizes them), complex whatever the input.
void eig_kernel(const KernelContext& ctx);

/// matrix_exp: e**x of square matrices by Pade scaling and squaring (Higham 2005), computed in
/// double; a matrix with a non-finite entry gives all NaN (matrix_exp.cc).
void matrix_exp_kernel(const KernelContext& ctx);

}  // namespace mycel::cpu
