#include "mycel/kernels/cpu/softmax_bf16.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>
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
#include "mycel/kernels/cpu/exp512_bf16.h"

namespace mycel::cpu {
namespace {

// The maskz forms throughout: GCC 12 warns (falsely) that the plain forms' pass-through operand
// is uninitialized (as avx512_math.h notes).
constexpr __mmask16 kAll = 0xFFFF;

using exp512::exp16_nonpositive_bf16;

// round_store16 of finite lanes (the weights of a row that passed its finiteness check): no NaN
// to quiet, two instructions fewer.
inline void round_store16_finite(uint16_t* p, __m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_maskz_srli_epi32(kAll, u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_maskz_srli_epi32(
      kAll, _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_maskz_cvtepi32_epi16(kAll, r));
}

// The lanes of a row's last, partial vector (n < 16 elements): -inf past the row, which takes no
// part in the maximum and whose exp, 0, none in the sum.
inline __m512 widen_tail(const uint16_t* x, int64_t n, __mmask16& m) {
  m = static_cast<__mmask16>((1u << n) - 1);
  const __m512 v = bf16_lanes512::widen16(_mm256_maskz_loadu_epi16(m, x));
  return _mm512_mask_mov_ps(_mm512_set1_ps(-std::numeric_limits<float>::infinity()), m, v);
}

// 32 bf16 at p as floats in two vectors, by interleaving each 128-bit quarter's words with zeros
// (one instruction a vector, where widen16 takes two): lo holds the quarters' first four
// elements, hi their last four. narrow32 undoes the order.
inline void widen32(const uint16_t* p, __m512& lo, __m512& hi) {
  const __m512i x = _mm512_loadu_si512(p), z = _mm512_setzero_si512();
  lo = _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, x));
  hi = _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, x));
}

// round_store16_finite's bits of v in each lane's low half (a function, not a lambda: GCC gives
// a lambda in a target region no AVX-512 ABI and warns).
inline __m512i finite_bits(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_maskz_srli_epi32(kAll, u, 16), _mm512_set1_epi32(1));
  return _mm512_maskz_srli_epi32(
      kAll, _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
}

// round_store16_finite's bits of widen32's two vectors, in the elements' order at p: packus puts
// each quarter's four words of lo, then of hi, back where unpacklo/unpackhi took them from.
inline void narrow32_finite(uint16_t* p, __m512 lo, __m512 hi) {
  _mm512_storeu_si512(p, _mm512_packus_epi32(finite_bits(lo), finite_bits(hi)));
}

// A row of 16 * NV elements (NV <= 16: the transformer's rows of 128 are 8) widened once into
// registers (by widen32 where NV is even): max, exp and sum, scale and round, no buffer between
// the passes. False where the row has a NaN or an infinite maximum (its sum is then NaN or inf):
// the caller's reference row.
template <int NV>
bool softmax_row_regs(const uint16_t* x, uint16_t* y) {
  constexpr bool pairs = NV % 2 == 0;
  __m512 v[NV];
  __m512 vmax = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  if constexpr (pairs) {
#pragma GCC unroll 8
    for (int i = 0; i < NV; i += 2) {
      widen32(x + 16 * i, v[i], v[i + 1]);
      vmax = _mm512_maskz_max_ps(kAll, vmax, _mm512_maskz_max_ps(kAll, v[i], v[i + 1]));
    }
  } else {
#pragma GCC unroll 16
    for (int i = 0; i < NV; ++i) {
      v[i] = bf16_lanes512::widen16(x + 16 * i);
      vmax = _mm512_maskz_max_ps(kAll, vmax, v[i]);
    }
  }
  const __m512 vm = _mm512_set1_ps(avx512::hmax(vmax));
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();  // two chains of adds
#pragma GCC unroll 16
  for (int i = 0; i < NV; ++i) {
    v[i] = exp16_nonpositive_bf16(_mm512_sub_ps(v[i], vm));
    if (i % 2)
      s1 = _mm512_add_ps(s1, v[i]);
    else
      s0 = _mm512_add_ps(s0, v[i]);
  }
  const float sum = avx512::hsum(_mm512_add_ps(s0, s1));
  if (!std::isfinite(sum)) return false;
  const __m512 vinv = _mm512_set1_ps(1.0f / sum);  // sum >= 1: the maximum's own exp(0)
  if constexpr (pairs) {
#pragma GCC unroll 8
    for (int i = 0; i < NV; i += 2)
      narrow32_finite(y + 16 * i, _mm512_mul_ps(v[i], vinv), _mm512_mul_ps(v[i + 1], vinv));
  } else {
#pragma GCC unroll 16
    for (int i = 0; i < NV; ++i) round_store16_finite(y + 16 * i, _mm512_mul_ps(v[i], vinv));
  }
  return true;
}

// Any other length: the exps kept in buf between the passes, the tail in masked lanes.
bool softmax_row16(const uint16_t* x, uint16_t* y, int64_t len, float* buf) {
  const int64_t vec = len / 16 * 16, rest = len - vec;
  __mmask16 tail = 0;
  const __m512 vt = rest ? widen_tail(x + vec, rest, tail)
                         : _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 vmax = vt;
  for (int64_t l = 0; l < vec; l += 16)
    vmax = _mm512_maskz_max_ps(kAll, vmax, bf16_lanes512::widen16(x + l));
  const __m512 vm = _mm512_set1_ps(avx512::hmax(vmax));
  __m512 vsum = _mm512_setzero_ps();
  for (int64_t l = 0; l < vec; l += 16) {
    const __m512 e = exp16_nonpositive_bf16(_mm512_sub_ps(bf16_lanes512::widen16(x + l), vm));
    _mm512_storeu_ps(buf + l, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  const __m512 et = exp16_nonpositive_bf16(_mm512_sub_ps(vt, vm));
  const float sum = avx512::hsum(_mm512_add_ps(vsum, et));
  if (!std::isfinite(sum)) return false;
  const __m512 vinv = _mm512_set1_ps(1.0f / sum);
  for (int64_t l = 0; l < vec; l += 16)
    round_store16_finite(y + l, _mm512_mul_ps(_mm512_loadu_ps(buf + l), vinv));
  if (rest) {
    uint16_t t[16];
    round_store16_finite(t, _mm512_mul_ps(et, vinv));
    _mm256_mask_storeu_epi16(y + vec, tail, _mm256_loadu_si256(reinterpret_cast<__m256i*>(t)));
  }
  return true;
}

using RowFn = bool (*)(const uint16_t*, uint16_t*);
template <int... NV>
constexpr std::array<RowFn, sizeof...(NV) + 1> row_fns(std::integer_sequence<int, NV...>) {
  return {nullptr, &softmax_row_regs<NV + 1>...};
}
// softmax_row_regs<len / 16> for len = 16, 32, ..., 256.
constexpr auto kRowFns = row_fns(std::make_integer_sequence<int, 16>());

}  // namespace
}  // namespace mycel::cpu
#pragma GCC pop_options

// Where the CPU has AVX512-BF16 (Zen 4, Sapphire Rapids): the weights rounded by VCVTNE2PS2BF16,
// 32 in one instruction where the integer rounding takes eleven (round to nearest even as
// bf16_round_bits, but a weight below 2^-126, float's normal range, becomes 0 rather than a bf16
// denormal, as in the AVX2 path whose exp flushes them). One core, 8192 rows of 128: the forward
// 0.40 -> 0.31 ms, the gradient 0.26 -> 0.13. MYCEL_SOFTMAX_BF16_CVT=0 keeps the integer
// rounding (A/B; read once a process).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
namespace mycel::cpu {
namespace {

// softmax_row_regs for 32 * NP elements, widen32's order undone by a permutation of quadwords.
template <int NP>
bool softmax_row_regs_cvt(const uint16_t* x, uint16_t* y) {
  __m512 lo[NP], hi[NP];
  __m512 vmax = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
#pragma GCC unroll 8
  for (int i = 0; i < NP; ++i) {
    widen32(x + 32 * i, lo[i], hi[i]);
    vmax = _mm512_maskz_max_ps(kAll, vmax, _mm512_maskz_max_ps(kAll, lo[i], hi[i]));
  }
  const __m512 vm = _mm512_set1_ps(avx512::hmax(vmax));
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int i = 0; i < NP; ++i) {
    lo[i] = exp16_nonpositive_bf16(_mm512_sub_ps(lo[i], vm));
    hi[i] = exp16_nonpositive_bf16(_mm512_sub_ps(hi[i], vm));
    s0 = _mm512_add_ps(s0, lo[i]);
    s1 = _mm512_add_ps(s1, hi[i]);
  }
  const float sum = avx512::hsum(_mm512_add_ps(s0, s1));
  if (!std::isfinite(sum)) return false;
  const __m512 vinv = _mm512_set1_ps(1.0f / sum);
  // cvtne2ps(hi, lo): words 0-15 lo's lanes (each quarter's first four elements), 16-31 hi's;
  // quadword q of the row is lo's q / 2 for even q, hi's (q - 1) / 2 + 4 for odd.
  const __m512i order = _mm512_set_epi64(7, 3, 6, 2, 5, 1, 4, 0);
#pragma GCC unroll 8
  for (int i = 0; i < NP; ++i) {
    const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_mul_ps(hi[i], vinv), _mm512_mul_ps(lo[i], vinv));
    _mm512_storeu_si512(y + 32 * i, _mm512_maskz_permutexvar_epi64(0xFF, order, (__m512i)b));
  }
  return true;
}

// softmax_grad_row_regs for 32 * NP elements (NP <= 4): y and dy widened by widen32, dx rounded
// by VCVTNE2PS2BF16 (a NaN quieted as bf16_round_bits does; a result below 2^-126 becomes 0).
template <int NP>
void softmax_grad_row_regs_cvt(const uint16_t* y, const uint16_t* dy, uint16_t* dx) {
  __m512 a[2 * NP], b[2 * NP];
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int i = 0; i < NP; ++i) {
    widen32(y + 32 * i, a[2 * i], a[2 * i + 1]);
    widen32(dy + 32 * i, b[2 * i], b[2 * i + 1]);
    s0 = _mm512_fmadd_ps(a[2 * i], b[2 * i], s0);
    s1 = _mm512_fmadd_ps(a[2 * i + 1], b[2 * i + 1], s1);
  }
  const __m512 vs = _mm512_set1_ps(avx512::hsum(_mm512_add_ps(s0, s1)));
  const __m512i order = _mm512_set_epi64(7, 3, 6, 2, 5, 1, 4, 0);
#pragma GCC unroll 4
  for (int i = 0; i < NP; ++i) {
    const __m512 lo = _mm512_mul_ps(a[2 * i], _mm512_sub_ps(b[2 * i], vs));
    const __m512 hi = _mm512_mul_ps(a[2 * i + 1], _mm512_sub_ps(b[2 * i + 1], vs));
    const __m512bh r = _mm512_cvtne2ps_pbh(hi, lo);
    _mm512_storeu_si512(dx + 32 * i, _mm512_maskz_permutexvar_epi64(0xFF, order, (__m512i)r));
  }
}

using GradFnCvt = void (*)(const uint16_t*, const uint16_t*, uint16_t*);
template <int... NP>
constexpr std::array<GradFnCvt, sizeof...(NP) + 1> grad_fns_cvt(std::integer_sequence<int, NP...>) {
  return {nullptr, &softmax_grad_row_regs_cvt<NP + 1>...};
}
constexpr auto kGradFnsCvt = grad_fns_cvt(std::make_integer_sequence<int, 4>());

using RowFnCvt = bool (*)(const uint16_t*, uint16_t*);
template <int... NP>
constexpr std::array<RowFnCvt, sizeof...(NP) + 1> row_fns_cvt(std::integer_sequence<int, NP...>) {
  return {nullptr, &softmax_row_regs_cvt<NP + 1>...};
}
// softmax_row_regs_cvt<len / 32> for len = 32, 64, ..., 256.
constexpr auto kRowFnsCvt = row_fns_cvt(std::make_integer_sequence<int, 8>());

}  // namespace
}  // namespace mycel::cpu
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
namespace mycel::cpu {
namespace {

bool use_cvt() {
  static const bool on = [] {
    const char* v = std::getenv("MYCEL_SOFTMAX_BF16_CVT");
    return cpu_has_avx512_bf16() && !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

// The softmax of one row (false: the caller's reference row).
bool softmax_row_any(const uint16_t* x, uint16_t* y, int64_t len, float* buf) {
  if (len % 32 == 0 && len <= 256 && use_cvt()) return kRowFnsCvt[len / 32](x, y);
  if (len % 16 == 0 && len <= 256) return kRowFns[len / 16](x, y);
  return softmax_row16(x, y, len, buf);
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

// softmax_grad_row16 of a row of 16 * NV elements (NV <= 8) with y and dy widened once into
// registers: the same operations in the same order, the same bits.
template <int NV>
void softmax_grad_row_regs(const uint16_t* y, const uint16_t* dy, uint16_t* dx) {
  __m512 a[NV], b[NV];
  __m512 vsum = _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int i = 0; i < NV; ++i) {
    a[i] = bf16_lanes512::widen16(y + 16 * i);
    b[i] = bf16_lanes512::widen16(dy + 16 * i);
    vsum = _mm512_fmadd_ps(a[i], b[i], vsum);
  }
  const __m512 vs = _mm512_set1_ps(avx512::hsum(vsum));
#pragma GCC unroll 8
  for (int i = 0; i < NV; ++i)
    bf16_lanes512::round_store16(dx + 16 * i, _mm512_mul_ps(a[i], _mm512_sub_ps(b[i], vs)));
}

using GradFn = void (*)(const uint16_t*, const uint16_t*, uint16_t*);
template <int... NV>
constexpr std::array<GradFn, sizeof...(NV) + 1> grad_fns(std::integer_sequence<int, NV...>) {
  return {nullptr, &softmax_grad_row_regs<NV + 1>...};
}
constexpr auto kGradFns = grad_fns(std::make_integer_sequence<int, 8>());

void softmax_grad_row_any(const uint16_t* y, const uint16_t* dy, uint16_t* dx, int64_t len) {
  if (len % 32 == 0 && len <= 128 && use_cvt()) return kGradFnsCvt[len / 32](y, dy, dx);
  if (len % 16 == 0 && len <= 128) return kGradFns[len / 16](y, dy, dx);
  softmax_grad_row16(y, dy, dx, len);
}

}  // namespace
}  // namespace mycel::cpu
#pragma GCC pop_options
#endif  // MYCEL_AVX512_KERNELS

namespace mycel::cpu {
namespace {

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

// softmax_grad_ref's row, the gradient where this build has no vector lanes.
[[maybe_unused]] void softmax_grad_row_ref(const uint16_t* y, const uint16_t* dy, uint16_t* dx,
                                           int64_t len) {
  float sum = 0;
  for (int64_t l = 0; l < len; ++l) sum += bf16_widen(y[l]) * bf16_widen(dy[l]);
  for (int64_t l = 0; l < len; ++l)
    dx[l] = bf16_round_bits(bf16_widen(y[l]) * (bf16_widen(dy[l]) - sum));
}

}  // namespace

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

void softmax_bf16_rows(const uint16_t* x, uint16_t* y, int64_t r0, int64_t r1, int64_t len) {
  thread_local std::vector<float> buf;  // the row's widened values, then its exps
  if (static_cast<int64_t>(buf.size()) < len) buf.resize(static_cast<size_t>(len));
#if MYCEL_AVX512_KERNELS
  if (cpu_has_avx512()) {
    for (int64_t r = r0; r < r1; ++r)
      if (!softmax_row_any(x + r * len, y + r * len, len, buf.data()))
        softmax_row_ref(x + r * len, y + r * len, len);
    return;
  }
#endif
  for (int64_t r = r0; r < r1; ++r) softmax_row(x + r * len, y + r * len, len, buf.data());
}

void softmax_grad_bf16_rows(const uint16_t* y, const uint16_t* dy, uint16_t* dx, int64_t r0,
                            int64_t r1, int64_t len) {
#if MYCEL_AVX512_KERNELS
  if (cpu_has_avx512()) {
    for (int64_t r = r0; r < r1; ++r)
      softmax_grad_row_any(y + r * len, dy + r * len, dx + r * len, len);
    return;
  }
#endif
  for (int64_t r = r0; r < r1; ++r) softmax_grad_row(y + r * len, dy + r * len, dx + r * len, len);
}

#else  // no AVX2/FMA in this build: the reference rows

void softmax_bf16_rows(const uint16_t* x, uint16_t* y, int64_t r0, int64_t r1, int64_t len) {
  for (int64_t r = r0; r < r1; ++r) softmax_row_ref(x + r * len, y + r * len, len);
}

void softmax_grad_bf16_rows(const uint16_t* y, const uint16_t* dy, uint16_t* dx, int64_t r0,
                            int64_t r1, int64_t len) {
  for (int64_t r = r0; r < r1; ++r)
    softmax_grad_row_ref(y + r * len, dy + r * len, dx + r * len, len);
}

#endif

bool softmax_bf16_last_axis(const Tensor& x, Tensor& y, int64_t rows, int64_t len) {
#if !(defined(__AVX2__) && defined(__FMA__))
  return false;  // the callers' kernels
#endif
  if (x.dtype() != DType::bfloat16 || y.dtype() != DType::bfloat16 || len <= 0) return false;
  const auto* X = static_cast<const uint16_t*>(x.data());
  auto* Y = static_cast<uint16_t*>(y.data());
  // ~8 operations per element (the exp's polynomial and the three passes).
  parallel_for(rows, len * 8,
               [&](int64_t r0, int64_t r1) { softmax_bf16_rows(X, Y, r0, r1, len); });
  return true;
}

bool softmax_grad_bf16_last_axis(const Tensor& y, const Tensor& dy, Tensor& dx, int64_t rows,
                                 int64_t len) {
#if !(defined(__AVX2__) && defined(__FMA__))
  return false;
#endif
  if (y.dtype() != DType::bfloat16 || dy.dtype() != DType::bfloat16 ||
      dx.dtype() != DType::bfloat16 || len <= 0)
    return false;
  const auto* Y = static_cast<const uint16_t*>(y.data());
  const auto* D = static_cast<const uint16_t*>(dy.data());
  auto* X = static_cast<uint16_t*>(dx.data());
  parallel_for(rows, len * 4,
               [&](int64_t r0, int64_t r1) { softmax_grad_bf16_rows(Y, D, X, r0, r1, len); });
  return true;
}

}  // namespace mycel::cpu
