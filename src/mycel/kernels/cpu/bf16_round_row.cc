#include "mycel/kernels/cpu/bf16_round_row.h"

#include <algorithm>

#include "mycel/kernels/cpu/fused_elementwise_outputs.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace mycel::cpu {

void bf16_round_row(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
#if defined(__AVX2__)
  const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff),
                quiet = _mm256_set1_epi32(0x40);
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    const __m256i u = _mm256_castps_si256(v);
    const __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, half), _mm256_and_si256(hi, one)), 16);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet),
                           _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    // packus works per 128-bit half: gather the halves' low quadwords into the low 128 bits.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_castsi256_si128(packed));
  }
#endif
  for (; i < n; ++i) dst[i] = bf16_round_bits(src[i]);
}

void bf16_sum_round_partials(const float* q, int T, int64_t numel, int64_t i0, int64_t i1,
                             uint16_t* dst) {
  constexpr int64_t kBlock = 512;
  alignas(64) float acc[kBlock];
  for (int64_t b = i0; b < i1; b += kBlock) {
    const int64_t n = std::min(kBlock, i1 - b);
    const float* q0 = q + b;
    for (int64_t j = 0; j < n; ++j) acc[j] = q0[j];
    for (int u = 1; u < T; ++u) {
      const float* qu = q + u * numel + b;
      for (int64_t j = 0; j < n; ++j) acc[j] += qu[j];
    }
    bf16_round_row(acc, dst + b, n);
  }
}

}  // namespace mycel::cpu
