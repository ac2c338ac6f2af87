// A bf16 weight gradient's share, c = a^T b over a range of K rows, in AVX512-BF16 dot products
// (vdpbf16ps) into float32: a is (K, M) and b (K, N), both bf16 row-major (dy and x of
// dW = dy^T x). dnnl_matmul.cc's split along K runs it on each thread's rows in place of a
// one-thread oneDNN primitive where it is faster (see matmul_bf16_atb.cc for the figures).
#pragma once
#include <cstdint>

namespace mycel::cpu {

/// True when the CPU has AVX512-BF16 (and AVX-512 is not capped by MYCEL_MAX_CPU_ISA) and
/// MYCEL_MATMUL_BF16_ATB is not 0 (then the split runs oneDNN's primitive, for A/B; read on
/// each call: a launch reads it when it is first prepared).
bool matmul_bf16_atb_available();

/// c[m, n] = sum over 0 <= k < K of a[k, m] * b[k, n] (float32, row stride ldc; c is written,
/// not added to), a with row stride lda, b with row stride ldb (elements). With `col_sums`
/// (M floats), col_sums[m] = the sum of a[k, m] over the same rows, in float: a dense layer's
/// bias gradient, read from the rows this call packs anyway. Call only where
/// matmul_bf16_atb_available(). Any K >= 1, M >= 1, N >= 1. `prefetch`: bring the next block of
/// rows towards L2 while a block computes (matmul_bf16_atb_prefetch()). `accumulate`: c and
/// col_sums are added to, not written (a sum over several calls on consecutive blocks of rows, in
/// the order one call over all of them would add: cpu::dense_grad_pair_bf16).
void matmul_bf16_atb(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, int64_t K,
                     int64_t M, int64_t N, float* c, int64_t ldc, float* col_sums,
                     bool prefetch = true, bool accumulate = false);

/// MYCEL_MATMUL_BF16_ATB_PREFETCH is not 0 (read on each call, as the switch above).
bool matmul_bf16_atb_prefetch();

}  // namespace mycel::cpu
