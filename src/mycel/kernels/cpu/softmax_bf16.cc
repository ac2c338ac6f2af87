#include "mycel/kernels/cpu/softmax_bf16.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "mycel/core/cpu_features.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"

#if defined(__x86_64__)
#include <immintrin.h>  // here, at the baseline: each intrinsic carries its own target
#endif

#if MYCEL_AVX512_KERNELS
// The same rows in 16 float lanes: on Zen 4 a 512-bit op runs as two 256-bit halves, but it is
// one instruction to decode and schedule, and these loops are bound by their instruction count
// (one core, 8192 rows of 128: forward 0.59 ms against 0.70 in AVX2, backward 0.24 against 0.37).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
#include "mycel/kernels/cpu/avx512_math.h"  // inside the target region, as they ask
#include "mycel/kernels/cpu/bf16_lanes512.h"

namespace mycel::cpu {
namespace {

// The maskz forms throughout: GCC 12 warns (falsely) that the plain forms' pass-through operand
// is uninitialized (as avx512_math.h notes).
constexpr __mmask16 kAll = 0xFFFF;

// exp_nonpositive's polynomial in 16 lanes; 2^n by scalef, which rounds into float32's denormals
// as std::exp does and reaches 0 below -103.3 (the clamp at -120 keeps -inf's exp at 0).
inline __m512 exp16_nonpositive(__m512 x) {
  x = _mm512_maskz_max_ps(kAll, x, _mm512_set1_ps(-120.0f));
  const __m512 fx = _mm512_maskz_roundscale_ps(
      kAll, _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f)),
      _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), x);
  __m512 y = _mm512_set1_ps(1.9875691500e-4f);
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, _mm512_set1_ps(1.0f)));
  return _mm512_maskz_scalef_ps(kAll, y, fx);
}

// softmax_row in 16 lanes (false: a NaN or an infinite maximum, for the caller's reference row).
bool softmax_row16(const uint16_t* x, uint16_t* y, int64_t len, float* buf) {
  const int64_t vec = len / 16 * 16;
  __m512 vmax = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __mmask16 nan = 0;
  for (int64_t l = 0; l < vec; l += 16) {
    const __m512 v = bf16_lanes512::widen16(x + l);
    vmax = _mm512_maskz_max_ps(kAll, vmax, v);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  }
  float m = avx512::hmax(vmax);
  bool special = nan != 0;
  for (int64_t l = vec; l < len; ++l) {
    const float v = bf16_widen(x[l]);
    special |= std::isnan(v);
    m = std::max(m, v);
  }
  if (special || !std::isfinite(m)) return false;
  const __m512 vm = _mm512_set1_ps(m);
  __m512 vsum = _mm512_setzero_ps();
  for (int64_t l = 0; l < vec; l += 16) {
    const __m512 e = exp16_nonpositive(_mm512_sub_ps(bf16_lanes512::widen16(x + l), vm));
    _mm512_storeu_ps(buf + l, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  float sum = avx512::hsum(vsum);
  for (int64_t l = vec; l < len; ++l) {
    buf[l] = std::exp(bf16_widen(x[l]) - m);
    sum += buf[l];
  }
  const float inv = 1.0f / sum;  // sum >= 1: the maximum's own exp(0)
  const __m512 vinv = _mm512_set1_ps(inv);
  for (int64_t l = 0; l < vec; l += 16)
    bf16_lanes512::round_store16(y + l, _mm512_mul_ps(_mm512_loadu_ps(buf + l), vinv));
  for (int64_t l = vec; l < len; ++l) y[l] = bf16_round_bits(buf[l] * inv);
  return true;
}

void softmax_grad_row16(const uint16_t* y, const uint16_t* dy, uint16_t* dx, int64_t len) {
  const int64_t vec = len / 16 * 16;
  __m512 vsum = _mm512_setzero_ps();
  for (int64_t l = 0; l < vec; l += 16)
    vsum = _mm512_fmadd_ps(bf16_lanes512::widen16(y + l), bf16_lanes512::widen16(dy + l), vsum);
  float sum = avx512::hsum(vsum);
  for (int64_t l = vec; l < len; ++l) sum += bf16_widen(y[l]) * bf16_widen(dy[l]);
  const __m512 vs = _mm512_set1_ps(sum);
  for (int64_t l = 0; l < vec; l += 16)
    bf16_lanes512::round_store16(dx + l,
                                 _mm512_mul_ps(bf16_lanes512::widen16(y + l),
                                               _mm512_sub_ps(bf16_lanes512::widen16(dy + l), vs)));
  for (int64_t l = vec; l < len; ++l)
    dx[l] = bf16_round_bits(bf16_widen(y[l]) * (bf16_widen(dy[l]) - sum));
}

}  // namespace
}  // namespace mycel::cpu
#pragma GCC pop_options
#endif  // MYCEL_AVX512_KERNELS

namespace mycel::cpu {

#if defined(__AVX2__) && defined(__FMA__)
namespace {

// 8 bf16 -> 8 floats (exact).
inline __m256 load8(const uint16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

// 8 floats -> 8 bf16, bf16_round_bits lane by lane (nearest even, NaN quieted).
inline void store8(uint16_t* p, __m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  r = _mm256_blendv_epi8(r, q, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
  // Pack the 8 values (each < 2^16) into 16 bits: packus works per 128-bit half, so the halves'
  // low quadwords are gathered into the low 128 bits.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// exp(x) for x <= 0 (Cephes' expf: x = n ln2 + r, a degree-5 polynomial in r, times 2^n; about
// 1 ulp of float). Below -88.37 (and -inf) the result is 0; a float32 denormal is flushed, which
// no bf16 softmax weight distinguishes from 0 after the division by the row's sum (>= 1).
inline __m256 exp_nonpositive(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-88.3762626647949f));
  const __m256 fx = _mm256_floor_ps(
      _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  // 2^n by the exponent field; n = -127 (x at the clamp) gives a zero field: 0.
  const __m256i n = _mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127));
  return _mm256_mul_ps(y, _mm256_castsi256_ps(_mm256_slli_epi32(n, 23)));
}

// One row as softmax_ref computes it (float exp, double sum): rows with a NaN or an infinite
// maximum, whose special values the vector path does not follow.
void softmax_row_ref(const uint16_t* x, uint16_t* y, int64_t len) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t l = 0; l < len; ++l) m = std::max(m, bf16_widen(x[l]));
  double sum = 0;
  for (int64_t l = 0; l < len; ++l) sum += double(std::exp(bf16_widen(x[l]) - m));
  const float inv = float(1.0 / sum);
  for (int64_t l = 0; l < len; ++l) y[l] = bf16_round_bits(std::exp(bf16_widen(x[l]) - m) * inv);
}

void softmax_row(const uint16_t* x, uint16_t* y, int64_t len, float* buf) {
  const int64_t vec = len / 8 * 8;
  __m256 vmax = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 nan = _mm256_setzero_ps();
  for (int64_t l = 0; l < vec; l += 8) {
    const __m256 v = load8(x + l);
    _mm256_storeu_ps(buf + l, v);
    vmax = _mm256_max_ps(vmax, v);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  float m = hmax(vmax);
  bool special = _mm256_movemask_ps(nan) != 0;
  for (int64_t l = vec; l < len; ++l) {
    buf[l] = bf16_widen(x[l]);
    special |= std::isnan(buf[l]);
    m = std::max(m, buf[l]);
  }
  if (special || !std::isfinite(m)) return softmax_row_ref(x, y, len);
  const __m256 vm = _mm256_set1_ps(m);
  __m256 vsum = _mm256_setzero_ps();
  for (int64_t l = 0; l < vec; l += 8) {
    const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(buf + l), vm));
    _mm256_storeu_ps(buf + l, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  float sum = hsum(vsum);
  for (int64_t l = vec; l < len; ++l) {
    buf[l] = std::exp(buf[l] - m);
    sum += buf[l];
  }
  const float inv = 1.0f / sum;  // sum >= 1: the maximum's own exp(0)
  const __m256 vinv = _mm256_set1_ps(inv);
  for (int64_t l = 0; l < vec; l += 8) store8(y + l, _mm256_mul_ps(_mm256_loadu_ps(buf + l), vinv));
  for (int64_t l = vec; l < len; ++l) y[l] = bf16_round_bits(buf[l] * inv);
}

void softmax_grad_row(const uint16_t* y, const uint16_t* dy, uint16_t* dx, int64_t len) {
  const int64_t vec = len / 8 * 8;
  __m256 vsum = _mm256_setzero_ps();
  for (int64_t l = 0; l < vec; l += 8) vsum = _mm256_fmadd_ps(load8(y + l), load8(dy + l), vsum);
  float sum = hsum(vsum);
  for (int64_t l = vec; l < len; ++l) sum += bf16_widen(y[l]) * bf16_widen(dy[l]);
  const __m256 vs = _mm256_set1_ps(sum);
  for (int64_t l = 0; l < vec; l += 8)
    store8(dx + l, _mm256_mul_ps(load8(y + l), _mm256_sub_ps(load8(dy + l), vs)));
  for (int64_t l = vec; l < len; ++l)
    dx[l] = bf16_round_bits(bf16_widen(y[l]) * (bf16_widen(dy[l]) - sum));
}

}  // namespace

bool softmax_bf16_last_axis(const Tensor& x, Tensor& y, int64_t rows, int64_t len) {
  if (x.dtype() != DType::bfloat16 || y.dtype() != DType::bfloat16 || len <= 0) return false;
  const auto* X = static_cast<const uint16_t*>(x.data());
  auto* Y = static_cast<uint16_t*>(y.data());
  const bool avx512 = cpu_has_avx512();
  // ~16 operations per element (the exp's polynomial and the three passes).
  parallel_for(rows, len * 16, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> buf;  // the row's widened values, then its exps
    if (static_cast<int64_t>(buf.size()) < len) buf.resize(static_cast<size_t>(len));
    for (int64_t r = r0; r < r1; ++r) {
#if MYCEL_AVX512_KERNELS
      if (avx512) {
        if (!softmax_row16(X + r * len, Y + r * len, len, buf.data()))
          softmax_row_ref(X + r * len, Y + r * len, len);
        continue;
      }
#endif
      softmax_row(X + r * len, Y + r * len, len, buf.data());
    }
  });
  return true;
}

bool softmax_grad_bf16_last_axis(const Tensor& y, const Tensor& dy, Tensor& dx, int64_t rows,
                                 int64_t len) {
  if (y.dtype() != DType::bfloat16 || dy.dtype() != DType::bfloat16 ||
      dx.dtype() != DType::bfloat16 || len <= 0)
    return false;
  const auto* Y = static_cast<const uint16_t*>(y.data());
  const auto* D = static_cast<const uint16_t*>(dy.data());
  auto* X = static_cast<uint16_t*>(dx.data());
  const bool avx512 = cpu_has_avx512();
  parallel_for(rows, len * 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
#if MYCEL_AVX512_KERNELS
      if (avx512) {
        softmax_grad_row16(Y + r * len, D + r * len, X + r * len, len);
        continue;
      }
#endif
      softmax_grad_row(Y + r * len, D + r * len, X + r * len, len);
    }
  });
  return true;
}

#else  // no AVX2/FMA in this build: the callers' kernels

bool softmax_bf16_last_axis(const Tensor&, Tensor&, int64_t, int64_t) { return false; }
bool softmax_grad_bf16_last_axis(const Tensor&, const Tensor&, Tensor&, int64_t, int64_t) {
  return false;
}

#endif

}  // namespace mycel::cpu
