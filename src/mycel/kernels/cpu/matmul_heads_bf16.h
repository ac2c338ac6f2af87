// Attention's small per-head bf16 products (c = a @ b, 64 heads of 128x128 @ 128x32 in the
// transformer step) in AVX512-BF16 dot products (vdpbf16ps), each thread a range of heads:
// dnnl_strided_matmul.cc runs them in place of oneDNN's primitive where the views fit
// (see matmul_heads_bf16.cc for the figures).
#pragma once
#include <cstdint>

#include "mycel/kernels/cpu/dnnl_strided_matmul.h"

namespace mycel::cpu {

/// True when the CPU has AVX512-BF16 (and AVX-512 is not capped by MYCEL_MAX_CPU_ISA) and
/// MYCEL_MATMUL_HEADS_BF16 is not 0 (then oneDNN's primitive runs, for A/B; read on each call:
/// a launch reads it when it is first prepared).
bool matmul_heads_bf16_available();

/// Whether the views suit the kernel: c's rows contiguous (column stride 1), a's rows or columns
/// contiguous (a = P or a = P^T), b's rows or, where `b_cols_ok` or MYCEL_MATMUL_HEADS_BF16_BT=1,
/// its columns (b = K^T, V^T: as a launch of its own oneDNN's ran those faster), and each head
/// small (M, N, K at most 256: where this kernel measured ahead of oneDNN's).
bool matmul_heads_bf16_fits(const StridedMatmul& s, bool b_cols_ok = false);

/// c = a @ b over the views (all bf16 bits), float32 sums rounded once to bf16. Call only where
/// matmul_heads_bf16_available() and matmul_heads_bf16_fits(s); K >= 1.
void matmul_heads_bf16(const uint16_t* a, const uint16_t* b, uint16_t* c, const StridedMatmul& s);

/// One head's operand: its first element and the stride between its rows (`rows`: each row
/// contiguous) or between its columns (each column contiguous: a transposed operand).
struct HeadOperand {
  const uint16_t* p = nullptr;
  int64_t ld = 0;
  bool rows = true;
};

/// c (M, N, row stride ldc) = a (M, K) @ b (K, N) for one head on the calling thread: the
/// arithmetic matmul_heads_bf16 runs on each head (the same bits). Call only where
/// matmul_heads_bf16_available(); M, N, K at most 256, K >= 1.
void matmul_head_bf16(const HeadOperand& a, const HeadOperand& b, uint16_t* c, int64_t ldc,
                      int64_t M, int64_t N, int64_t K);

}  // namespace mycel::cpu
