#include "mycel/kernels/cpu/layer_norm_grad_row_bf16.h"

#include <cstdlib>
#include <cstring>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace mycel::cpu {

#if defined(__AVX2__) && defined(__FMA__)
namespace {

__m256 widen8(const uint16_t* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(
      _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}

// bf16_round_bits in 32-bit lanes (nearest even, NaN quieted): the bits in each lane's low half.
__m256i round8(__m256 v) {
  const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff),
                quiet = _mm256_set1_epi32(0x40);
  const __m256i u = _mm256_castps_si256(v);
  const __m256i hi = _mm256_srli_epi32(u, 16);
  const __m256i r =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, half), _mm256_and_si256(hi, one)), 16);
  return _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet),
                            _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

void store8(uint16_t* p, __m256i r) {
  // packus works per 128-bit half: gather the halves' low quadwords into the low 128 bits.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}

// lane_sum's ending: the eight float lanes added in order in double.
double lanes_in_double(__m256 acc) {
  float a[8];
  _mm256_storeu_ps(a, acc);
  double s = 0;
  for (float v : a) s += v;
  return s;
}

}  // namespace
#endif

bool layer_norm_grad_row_bf16_ok(int64_t inner) {
#if defined(__AVX2__) && defined(__FMA__)
  const char* v = std::getenv("MYCEL_LN_GRAD_ROWS");
  return inner > 0 && inner % 8 == 0 && !(v && std::strcmp(v, "0") == 0);
#else
  return false;
#endif
}

void layer_norm_grad_row_bf16(const uint16_t* dy, const uint16_t* dy_b, const uint16_t* x,
                              const float* g, float mu, float rs, float dmu, float drs,
                              uint16_t* dx, float* fg, float* fb, float* xhat, float* dyf,
                              int64_t inner) {
#if defined(__AVX2__) && defined(__FMA__)
  const __m256 vmu = _mm256_set1_ps(mu), vrs = _mm256_set1_ps(rs);
  __m256 sa = _mm256_setzero_ps(), sb = _mm256_setzero_ps();
  for (int64_t i = 0; i < inner; i += 8) {
    const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(widen8(x + i), vmu), vrs);
    __m256 d = widen8(dy + i);
    if (dy_b)
      d = _mm256_castsi256_ps(_mm256_slli_epi32(round8(_mm256_add_ps(d, widen8(dy_b + i))), 16));
    const __m256 gv = _mm256_loadu_ps(g + i);
    sa = _mm256_fmadd_ps(d, gv, sa);                     // sum dy * g
    sb = _mm256_fmadd_ps(_mm256_mul_ps(d, gv), xh, sb);  // sum dy * g * xhat
    _mm256_storeu_ps(fg + i, _mm256_fmadd_ps(d, xh, _mm256_loadu_ps(fg + i)));
    _mm256_storeu_ps(fb + i, _mm256_add_ps(d, _mm256_loadu_ps(fb + i)));
    _mm256_storeu_ps(xhat + i, xh);
    _mm256_storeu_ps(dyf + i, d);
  }
  const double a = lanes_in_double(sa), b = lanes_in_double(sb), m = double(inner);
  const float k = static_cast<float>((double(dmu) - double(rs) * a) / m),
              bx = static_cast<float>(-(double(rs) * b + double(drs) * rs * rs) / m);
  const __m256 vk = _mm256_set1_ps(k), vbx = _mm256_set1_ps(bx);
  for (int64_t i = 0; i < inner; i += 8) {
    // (rs * dy * g + bx * xhat) + k, contracted as GCC contracts the generic loop's expression.
    const __m256 o =
        _mm256_fmadd_ps(_mm256_mul_ps(vrs, _mm256_loadu_ps(dyf + i)), _mm256_loadu_ps(g + i),
                        _mm256_mul_ps(vbx, _mm256_loadu_ps(xhat + i)));
    store8(dx + i, round8(_mm256_add_ps(o, vk)));
  }
#endif
}

}  // namespace mycel::cpu
