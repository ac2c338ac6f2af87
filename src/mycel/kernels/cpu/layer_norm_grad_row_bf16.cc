#include "mycel/kernels/cpu/layer_norm_grad_row_bf16.h"

#include <cstdlib>
#include <cstring>

#include "mycel/core/cpu_features.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "mycel/kernels/cpu/bf16_lanes.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
#include "mycel/kernels/cpu/bf16_lanes512.h"  // inside the target region, as it asks
#pragma GCC pop_options
#endif

namespace mycel::cpu {

#if defined(__AVX2__) && defined(__FMA__)
namespace {

using namespace bf16_lanes;

// lane_sum's ending: the eight float lanes added in order in double.
double lanes_in_double(__m256 acc) {
  float a[8];
  _mm256_storeu_ps(a, acc);
  double s = 0;
  for (float v : a) s += v;
  return s;
}

// The second pass in 16 lanes where the CPU has AVX-512 (elementwise: the same bits as the 8-lane
// loop below; the rounding and packing cost a third of the row at 8 lanes).
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) void dx_row16(
    const float* dyf, const float* xhat, const float* g, float rs, float bx, float k, uint16_t* dx,
    int64_t inner) {
  const __m512 vrs = _mm512_set1_ps(rs), vbx = _mm512_set1_ps(bx), vk = _mm512_set1_ps(k);
  for (int64_t i = 0; i < inner; i += 16) {
    const __m512 o =
        _mm512_fmadd_ps(_mm512_mul_ps(vrs, _mm512_loadu_ps(dyf + i)), _mm512_loadu_ps(g + i),
                        _mm512_mul_ps(vbx, _mm512_loadu_ps(xhat + i)));
    bf16_lanes512::round_store16(dx + i, _mm512_add_ps(o, vk));
  }
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
    if (dy_b) d = through_bf16(_mm256_add_ps(d, widen8(dy_b + i)));  // the add launch's bf16 value
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
  if (inner % 16 == 0 && cpu_has_avx512()) return dx_row16(dyf, xhat, g, rs, bx, k, dx, inner);
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
