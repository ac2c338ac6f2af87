// bf16 small-layer loops (see infer_small_bf16.h). AVX2 is the build's baseline (x86-64-v3): 8
// elements per step, bf16 widened by a shift and narrowed with the same rounding as the scalar
// float_to_bf16_bits; the scalar tails and other -march settings use that function itself.
#include "mycel/kernels/cpu/infer_small_bf16.h"

#include <algorithm>

#include "mycel/core/half.h"
#include "mycel/kernels/cpu/mean_hw.h"

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

namespace {

constexpr int64_t kPanel = 64;  // outputs per panel: 8 accumulators of 8 lanes

// Outputs [o0, o0 + 8 * NB) of one row from their bf16 panel (k, 8 * NB).
template <int NB>
void dense_block_bf16(const uint16_t* xr, const uint16_t* panel, const uint16_t* bias, uint16_t* yr,
                      int64_t k, int64_t n, int64_t o0, SmallAct act) {
  float sum[NB * 8];
#ifdef __AVX2__
  __m256 acc[NB];
  for (int b = 0; b < NB; ++b) acc[b] = _mm256_setzero_ps();
  for (int64_t j = 0; j < k; ++j) {
    const __m256 xv = _mm256_set1_ps(widen(xr[j]));
    const uint16_t* wj = panel + j * (NB * 8);
    for (int b = 0; b < NB; ++b) acc[b] = _mm256_fmadd_ps(xv, widen8(wj + 8 * b), acc[b]);
  }
  for (int b = 0; b < NB; ++b) _mm256_storeu_ps(sum + 8 * b, acc[b]);
#else
  std::fill(sum, sum + NB * 8, 0.f);
  for (int64_t j = 0; j < k; ++j)
    for (int i = 0; i < NB * 8; ++i) sum[i] += widen(xr[j]) * widen(panel[j * (NB * 8) + i]);
#endif
  const int64_t end = std::min<int64_t>(NB * 8, n - o0);
  for (int64_t i = 0; i < end; ++i)
    yr[o0 + i] = narrow(activate(sum[i] + (bias ? widen(bias[o0 + i]) : 0.f), act));
}

using BlockFn = void (*)(const uint16_t*, const uint16_t*, const uint16_t*, uint16_t*, int64_t,
                         int64_t, int64_t, SmallAct);
constexpr BlockFn kBlocks[8] = {dense_block_bf16<1>, dense_block_bf16<2>, dense_block_bf16<3>,
                                dense_block_bf16<4>, dense_block_bf16<5>, dense_block_bf16<6>,
                                dense_block_bf16<7>, dense_block_bf16<8>};

}  // namespace

Tensor pack_dense_rows_bf16(const Tensor& w) {
  const int64_t n = w.shape()[0], k = w.shape()[1], n8 = (n + 7) / 8 * 8;
  Tensor p = Tensor::empty({std::max<int64_t>(k * n8, 1)}, DType::bfloat16);
  uint16_t* P = static_cast<uint16_t*>(p.data());
  const uint16_t* W = static_cast<const uint16_t*>(w.data());
  for (int64_t o0 = 0; o0 < n8; o0 += kPanel) {  // panel o0 starts at o0 * k
    const int64_t width = std::min(kPanel, n8 - o0);
    uint16_t* panel = P + o0 * k;
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i < width; ++i)
        panel[j * width + i] = o0 + i < n ? W[(o0 + i) * k + j] : uint16_t{0};
  }
  return p;
}

void dense_rows_bf16(const uint16_t* x, const uint16_t* packed, const uint16_t* bias, uint16_t* y,
                     int64_t m, int64_t k, int64_t n, SmallAct act) {
  const int64_t n8 = (n + 7) / 8 * 8;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t o0 = 0; o0 < n8; o0 += kPanel) {
      const int64_t nb = std::min(kPanel, n8 - o0) / 8;
      kBlocks[nb - 1](x + r * k, packed + o0 * k, bias, y + r * n, k, n, o0, act);
    }
}

void mean_hw_bf16(const uint16_t* x, uint16_t* y, int64_t n, int64_t c, int64_t hw, int64_t block) {
  mean_hw_blocked_of(x, y, n, c, hw, block, widen, narrow);
}

}  // namespace mycel::cpu
