#include "mycel/kernels/cpu/softmax_f32.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <immintrin.h>

#include "mycel/core/cpu_features.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/vmath.h"

namespace mycel::cpu {
namespace {

// softmax_ref's formulas for a row whose maximum m is not finite (double sum, std::exp).
void softmax_row_nonfinite(const float* x, float* y, int64_t len, float m, bool log) {
  double s = 0;
  for (int64_t j = 0; j < len; ++j) s += double(std::exp(x[j] - m));
  for (int64_t j = 0; j < len; ++j)
    y[j] = log ? x[j] - m - float(std::log(s)) : std::exp(x[j] - m) * float(1.0 / s);
}

}  // namespace
}  // namespace mycel::cpu

#if MYCEL_AVX512_KERNELS
// 16 lanes: the exp's polynomial is the rows' cost, and Intel's cores run two 512-bit FMAs a
// cycle (on Zen 4 a 512-bit op is two halves, but one instruction to decode).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,prefer-vector-width=512")
#include "mycel/kernels/cpu/avx512_math.h"  // inside the target region, as it asks
namespace mycel::cpu::softmax512 {

// The row's maximum: VMAXPS keeps its second operand where either is NaN, so a NaN may or may
// not survive; where it does not, its exp makes the row's sum NaN (softmax_row).
inline float row_max(const float* x, int64_t len) {
  __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 16 <= len; j += 16) m = avx512::vmax(m, _mm512_loadu_ps(x + j));
  float r = avx512::hmax(m);
  for (; j < len; ++j) r = std::max(r, x[j]);
  return r;
}

#include "mycel/kernels/cpu/softmax_f32_rows.inc"
}  // namespace mycel::cpu::softmax512
#pragma GCC pop_options
#endif

namespace mycel::cpu::softmax256 {

// softmax512's row_max in 8 lanes.
inline float row_max(const float* x, int64_t len) {
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 8 <= len; j += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + j));
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  float r = _mm_cvtss_f32(h);
  for (; j < len; ++j) r = std::max(r, x[j]);
  return r;
}

#include "mycel/kernels/cpu/softmax_f32_rows.inc"
}  // namespace mycel::cpu::softmax256

namespace mycel::cpu {
namespace {

bool use512() {
#if MYCEL_AVX512_KERNELS
  static const bool on = cpu_has_avx512();
  return on;
#else
  return false;
#endif
}

void forward_rows(const float* x, float* y, int64_t r0, int64_t r1, int64_t len, bool log) {
#if MYCEL_AVX512_KERNELS
  if (use512()) return softmax512::rows_forward(x, y, r0, r1, len, log);
#endif
  softmax256::rows_forward(x, y, r0, r1, len, log);
}

void grad_rows(const float* y, const float* dy, float* dx, int64_t r0, int64_t r1, int64_t len) {
#if MYCEL_AVX512_KERNELS
  if (use512()) return softmax512::rows_grad(y, dy, dx, r0, r1, len);
#endif
  softmax256::rows_grad(y, dy, dx, r0, r1, len);
}

}  // namespace

bool softmax_f32_last_axis(const Tensor& x, Tensor& y, int64_t rows, int64_t len, bool log) {
  if (x.dtype() != DType::float32 || y.dtype() != DType::float32) return false;
  const float* X = x.data<float>();
  float* Y = y.data<float>();
  parallel_for(rows, std::max<int64_t>(len * 16, 1),  // an exp per element: ~16 multiply-adds
               [&](int64_t r0, int64_t r1) { forward_rows(X, Y, r0, r1, len, log); });
  return true;
}

bool softmax_grad_f32_last_axis(const Tensor& y, const Tensor& dy, Tensor& dx, int64_t rows,
                                int64_t len) {
  if (y.dtype() != DType::float32 || dy.dtype() != DType::float32 || dx.dtype() != DType::float32)
    return false;
  const float* Y = y.data<float>();
  const float* D = dy.data<float>();
  float* X = dx.data<float>();
  parallel_for(rows, std::max<int64_t>(len * 2, 1),
               [&](int64_t r0, int64_t r1) { grad_rows(Y, D, X, r0, r1, len); });
  return true;
}

void softmax_f32_rows(const float* x, float* y, int64_t r0, int64_t r1, int64_t len) {
  forward_rows(x, y, r0, r1, len, false);
}

void softmax_grad_f32_rows(const float* y, const float* dy, float* dx, int64_t r0, int64_t r1,
                           int64_t len) {
  grad_rows(y, dy, dx, r0, r1, len);
}

}  // namespace mycel::cpu
