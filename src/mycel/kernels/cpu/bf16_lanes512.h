// bf16_lanes.h's conversions in AVX-512 lanes of 16, with the same bits. Include only inside an
// AVX-512 target region (`#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")`, see
// binary_bf16.cc). The maskz forms: GCC 12 warns (falsely) that the plain forms' pass-through
// operand is uninitialized.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace mycel::cpu::bf16_lanes512 {

inline constexpr __mmask16 kAll = 0xFFFF;

/// 16 bf16 values (their bits in h) as floats: exact, each shifted into a lane's high half.
inline __m512 widen16(__m256i h) {
  return _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, h), 16));
}

/// 16 bf16 values at p as floats.
inline __m512 widen16(const uint16_t* p) {
  return widen16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

/// bf16_round_bits of v's 16 lanes (nearest even, NaN quieted), the bits in each lane's low half.
inline __m512i round16(__m512 v) {
  const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff),
                quiet = _mm512_set1_epi32(0x40);
  const __m512i u = _mm512_castps_si512(v), hi = _mm512_maskz_srli_epi32(kAll, u, 16);
  const __m512i r = _mm512_maskz_srli_epi32(
      kAll, _mm512_add_epi32(_mm512_add_epi32(u, half), _mm512_and_si512(hi, one)), 16);
  return _mm512_mask_or_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), hi, quiet);
}

/// round16's results as 16 bf16 values.
inline __m256i narrow16(__m512 v) { return _mm512_maskz_cvtepi32_epi16(kAll, round16(v)); }

/// round16's results stored as bf16 at p.
inline void round_store16(uint16_t* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow16(v));
}

}  // namespace mycel::cpu::bf16_lanes512
