// An 8x8 transpose of 32-bit lanes in AVX registers: 8 channel rows of 8 pixels into 8 pixels of
// 8 channels (NCHW <-> nChw8c, conv_winograd_nchw.cc) and the weight reorders' index blocks
// (conv_weight_reorder.cc). Needs AVX (any Mycel build: x86-64-v3).
#pragma once
#include <immintrin.h>

namespace mycel::cpu {

/// 8 rows of 8 floats -> their columns: out[k] holds lane k of in[0], ..., in[7].
inline void transpose8x8(const __m256* in, __m256* out) {
  __m256 t[8], u[8];
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(in[2 * k], in[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(in[2 * k], in[2 * k + 1]);
  }
#pragma GCC unroll 2
  for (int k = 0; k < 2; ++k) {
    u[4 * k] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
    u[4 * k + 1] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
    u[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
    u[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    out[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
    out[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
  }
}

}  // namespace mycel::cpu
