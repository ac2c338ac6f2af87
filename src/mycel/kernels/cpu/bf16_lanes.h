// bfloat16 <-> float in AVX2 lanes of 8, with the scalar bits (bf16_round_bits: nearest even,
// NaN quieted; bf16_widen: exact), for the bf16 kernels that widen, compute in float and round.
// Include only where __AVX2__ is defined (the build's x86-64-v3 baseline).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace mycel::cpu::bf16_lanes {

/// 8 bf16 values at p as floats.
inline __m256 widen8(const uint16_t* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(
      _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}

/// bf16_round_bits of each lane, the bits in the lane's low half.
inline __m256i round8(__m256 v) {
  const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff),
                quiet = _mm256_set1_epi32(0x40);
  const __m256i u = _mm256_castps_si256(v);
  const __m256i hi = _mm256_srli_epi32(u, 16);
  const __m256i r =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, half), _mm256_and_si256(hi, one)), 16);
  return _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet),
                            _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

/// round8's result as a float again (the value a bf16 store and reload gives).
inline __m256 through_bf16(__m256 v) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(round8(v), 16));
}

/// Stores round8's 8 results as bf16 at p.
inline void store8(uint16_t* p, __m256i r) {
  // packus works per 128-bit half: gather the halves' low quadwords into the low 128 bits.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}

}  // namespace mycel::cpu::bf16_lanes
