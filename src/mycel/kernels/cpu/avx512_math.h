// AVX-512 forms of relu and of the running maximum with exactly the scalar kernels' semantics,
// so vectorized kernels (conv_direct.cc, pool_direct.cc) give bit-identical results to the loops
// they replace and to each other: relu as `x < 0 ? 0 : x` (NaN and -0 stay), and max pooling's
// "first maximum in scan order, a NaN wins" (nn_ref.cc's max_pool2d_ref).
// Include only inside an AVX-512 target region (see conv_direct.cc).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace mycel::cpu::avx512 {

/// VMAXPS(a, b): a where a > b, else b. The maskz form because GCC 12 warns (falsely) that
/// _mm512_max_ps's pass-through operand is uninitialized.
inline __m512 vmax(__m512 a, __m512 b) { return _mm512_maskz_max_ps(__mmask16(0xFFFF), a, b); }

/// x < 0 ? 0 : x per lane. VMAXPS(a, b) returns a when a > b, else b: so NaN and -0 pass.
inline __m512 relu(__m512 x) { return vmax(_mm512_setzero_ps(), x); }

/// The maximum of `first` and `second` (in scan order): on a tie the first, and a NaN wins,
/// the first NaN if both are.
inline __m512 max_first(__m512 first, __m512 second) {
  __m512 m = vmax(second, first);  // second if second > first, else first (incl. NaN first)
  m = _mm512_mask_mov_ps(m, _mm512_cmp_ps_mask(second, second, _CMP_UNORD_Q), second);
  return _mm512_mask_mov_ps(m, _mm512_cmp_ps_mask(first, first, _CMP_UNORD_Q), first);
}

/// Even and odd lanes of the 32 floats (lo, hi): columns 0, 2, ..., 30 and 1, 3, ..., 31.
inline __m512 even_lanes(__m512 lo, __m512 hi) {
  const __m512i idx = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  return _mm512_permutex2var_ps(lo, idx, hi);
}
inline __m512 odd_lanes(__m512 lo, __m512 hi) {
  const __m512i idx = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  return _mm512_permutex2var_ps(lo, idx, hi);
}

/// The 2x2 window maxima of two rows of 32 columns (r0 = row 0's lo/hi halves, r1 = row 1's), in
/// max_pool2d_ref's scan order (a00, a01, a10, a11): 16 pooled columns.
inline __m512 max_pool_2x2(__m512 r0_lo, __m512 r0_hi, __m512 r1_lo, __m512 r1_hi) {
  const __m512 top = max_first(even_lanes(r0_lo, r0_hi), odd_lanes(r0_lo, r0_hi));
  const __m512 bottom = max_first(even_lanes(r1_lo, r1_hi), odd_lanes(r1_lo, r1_hi));
  return max_first(top, bottom);
}

/// The sum and the maximum of the 16 lanes: halves, then quarters, then within 128 bits.
inline float hsum(__m512 v) {
  constexpr __mmask16 all = 0xFFFF;
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(all, v, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(all, v, v, 0xB1));
  __m128 s = _mm512_maskz_extractf32x4_ps(0xF, v, 0);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
inline float hmax(__m512 v) {
  constexpr __mmask16 all = 0xFFFF;
  v = _mm512_maskz_max_ps(all, v, _mm512_maskz_shuffle_f32x4(all, v, v, 0x4E));
  v = _mm512_maskz_max_ps(all, v, _mm512_maskz_shuffle_f32x4(all, v, v, 0xB1));
  __m128 s = _mm512_maskz_extractf32x4_ps(0xF, v, 0);
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}

}  // namespace mycel::cpu::avx512
