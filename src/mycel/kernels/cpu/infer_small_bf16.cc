// bf16 small-layer loops (see infer_small_bf16.h). AVX2 is the build's baseline (x86-64-v3): 8
// elements per step, bf16 widened by a shift and narrowed with the same rounding as the scalar
// float_to_bf16_bits; the scalar tails and other -march settings use that function itself.
#include "mycel/kernels/cpu/infer_small_bf16.h"

#include <algorithm>

#include "mycel/core/half.h"

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace mycel::cpu {
namespace {

inline float widen(uint16_t b) { return detail::bf16_bits_to_float(b); }
inline uint16_t narrow(float f) { return detail::float_to_bf16_bits(f); }

inline float activate(float v, SmallAct act) {
  if (act == SmallAct::kNone) return v;
  v = v < 0.f ? 0.f : v;
  return act == SmallAct::kRelu6 && v > 6.f ? 6.f : v;
}

#ifdef __AVX2__
inline __m256 widen8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// float_to_bf16_bits on 8 lanes: add 0x7fff plus the kept part's lowest bit (ties to even),
// NaNs made quiet instead.
inline void narrow8(__m256 v, uint16_t* p) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f800000));
  r = _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x400000)), nan);
  r = _mm256_srli_epi32(r, 16);  // each lane <= 0xffff: packus keeps it
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}

inline __m256 activate8(__m256 v, SmallAct act) {
  if (act == SmallAct::kNone) return v;
  v = _mm256_max_ps(v, _mm256_setzero_ps());
  return act == SmallAct::kRelu6 ? _mm256_min_ps(v, _mm256_set1_ps(6.f)) : v;
}
#endif

}  // namespace

void add_act_bf16(const uint16_t* a, const uint16_t* b, uint16_t* y, int64_t count, SmallAct act) {
  int64_t i = 0;
#ifdef __AVX2__
  for (; i + 8 <= count; i += 8)
    narrow8(activate8(_mm256_add_ps(widen8(a + i), widen8(b + i)), act), y + i);
#endif
  for (; i < count; ++i) y[i] = narrow(activate(widen(a[i]) + widen(b[i]), act));
}

void cast_f32_to_bf16(const float* x, uint16_t* y, int64_t count) {
  int64_t i = 0;
#ifdef __AVX2__
  for (; i + 8 <= count; i += 8) narrow8(_mm256_loadu_ps(x + i), y + i);
#endif
  for (; i < count; ++i) y[i] = narrow(x[i]);
}

void mean_hw_bf16(const uint16_t* x, uint16_t* y, int64_t n, int64_t c, int64_t hw, int64_t block) {
  const int64_t cb = (c + block - 1) / block;
  constexpr int64_t kLanes = 64;  // accumulators per pass over the positions
  for (int64_t i = 0; i < n; ++i)
    for (int64_t b = 0; b < cb; ++b) {
      const uint16_t* xb = x + (i * cb + b) * hw * block;
      for (int64_t l0 = 0; l0 < block; l0 += kLanes) {
        const int64_t lanes = std::min(kLanes, block - l0);
        float acc[kLanes] = {};
        for (int64_t p = 0; p < hw; ++p) {
          const uint16_t* xp = xb + p * block + l0;
          for (int64_t l = 0; l < lanes; ++l) acc[l] += widen(xp[l]);
        }
        for (int64_t l = 0; l < lanes; ++l) {
          const int64_t ch = b * block + l0 + l;
          if (ch < c) y[i * c + ch] = narrow(acc[l] / static_cast<float>(hw));
        }
      }
    }
}

}  // namespace mycel::cpu
