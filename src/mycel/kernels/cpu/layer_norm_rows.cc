#include "mycel/kernels/cpu/layer_norm_rows.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "mycel/core/cpu_features.h"
#include "mycel/core/parallel.h"

#if MYCEL_AVX512_KERNELS
// A row of the transformer's 128 is 8 registers: it is read three times from L1 (sum, squared
// deviations, output), every step in 16 float lanes; a row's tail takes masked loads and stores.
// On one core, 2048 x 128 bf16 rows took oneDNN's primitive 97 us, these rows 45 us (the generic
// vectorized loop of norm_fast.cc 197 us: its widening and rounding passes).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
#include <immintrin.h>

#include "mycel/kernels/cpu/avx512_math.h"  // inside the target region, as they ask
#include "mycel/kernels/cpu/bf16_lanes512.h"

namespace mycel::cpu {
namespace {

constexpr __mmask16 kAll = 0xFFFF;
constexpr int64_t kMaxBlock = 8;  // rows whose statistics overlap (rows() below)

// A row's 16 values at i as floats: plain loads and stores for whole registers (masked ones ran
// the bf16 rows 1.5x slower on Zen 4), masked for the row's tail (k not all ones).
template <bool kBf16>
inline __m512 load16(const void* p, int64_t i, __mmask16 k) {
  if constexpr (kBf16) {
    const uint16_t* q = static_cast<const uint16_t*>(p) + i;
    return bf16_lanes512::widen16(k == kAll
                                      ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q))
                                      : _mm256_maskz_loadu_epi16(k, q));
  } else {
    const float* q = static_cast<const float*>(p) + i;
    return k == kAll ? _mm512_loadu_ps(q) : _mm512_maskz_loadu_ps(k, q);
  }
}

inline __m512 load16(const float* p, __mmask16 k) {
  return k == kAll ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(k, p);
}

template <bool kBf16>
inline void store16(void* p, int64_t i, __mmask16 k, __m512 v) {
  if constexpr (kBf16) {
    uint16_t* q = static_cast<uint16_t*>(p) + i;
    if (k == kAll)
      bf16_lanes512::round_store16(q, v);
    else
      _mm256_mask_storeu_epi16(q, k, bf16_lanes512::narrow16(v));
  } else {
    float* q = static_cast<float*>(p) + i;
    if (k == kAll)
      _mm512_storeu_ps(q, v);
    else
      _mm512_mask_storeu_ps(q, k, v);
  }
}

inline __mmask16 lanes(int64_t i, int64_t inner) {
  const int64_t left = inner - i;
  return left >= 16 ? kAll : static_cast<__mmask16>((1u << left) - 1);
}

// The mean and rstd of one row; returns the row as floats: x's own for float32, else widened
// into w. Sums in two accumulators each.
template <bool kBf16>
inline const float* row_stats(const void* x, int64_t off, int64_t inner, double inv_n, double eps,
                              float* w, float* mean, float* rstd) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= inner; i += 32) {
    const __m512 a = load16<kBf16>(x, off + i, kAll), c = load16<kBf16>(x, off + i + 16, kAll);
    if constexpr (kBf16) {
      _mm512_storeu_ps(w + i, a);
      _mm512_storeu_ps(w + i + 16, c);
    }
    s0 = _mm512_add_ps(s0, a);
    s1 = _mm512_add_ps(s1, c);
  }
  for (; i < inner; i += 16) {
    const __m512 a = load16<kBf16>(x, off + i, lanes(i, inner));
    if constexpr (kBf16) _mm512_storeu_ps(w + i, a);
    s0 = _mm512_add_ps(s0, a);
  }
  const float* row = kBf16 ? w : static_cast<const float*>(x) + off;
  const float m = static_cast<float>(double(avx512::hsum(_mm512_add_ps(s0, s1))) * inv_n);
  const __m512 vm = _mm512_set1_ps(m);
  __m512 q0 = _mm512_setzero_ps(), q1 = _mm512_setzero_ps();
  for (i = 0; i + 32 <= inner; i += 32) {
    const __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(row + i), vm),
                 d1 = _mm512_sub_ps(_mm512_loadu_ps(row + i + 16), vm);
    q0 = _mm512_fmadd_ps(d0, d0, q0);
    q1 = _mm512_fmadd_ps(d1, d1, q1);
  }
  for (; i < inner; i += 16) {
    const __mmask16 k = lanes(i, inner);
    const __m512 d = _mm512_maskz_sub_ps(k, load16(row + i, k), vm);  // 0 off the row
    q0 = _mm512_fmadd_ps(d, d, q0);
  }
  *mean = m;
  *rstd = static_cast<float>(1.0 /
                             std::sqrt(double(avx512::hsum(_mm512_add_ps(q0, q1))) * inv_n + eps));
  return row;
}

// Rows [r0, r1) in blocks: first the statistics of each row of the block, then their outputs.
// A row's statistics are a chain of dependent steps (sums, their horizontal adds, a division, a
// square root); rows one after the other left the core waiting on it (230 cycles a row of 128,
// slower than oneDNN's primitive), while a block's rows are independent and overlap.
template <bool kBf16>
void rows(const void* x, const float* g, const float* b, void* y, float* mean, float* rstd,
          int64_t r0, int64_t r1, int64_t inner, double eps, float* w, int64_t block) {
  const int64_t stride = (inner + 15) / 16 * 16;
  const double inv_n = 1.0 / double(inner);
  for (int64_t rb = r0; rb < r1; rb += block) {
    const int64_t re = std::min(r1, rb + block);
    const float* row[kMaxBlock];
    for (int64_t r = rb; r < re; ++r)
      row[r - rb] = row_stats<kBf16>(x, r * inner, inner, inv_n, eps, w + (r - rb) * stride,
                                     mean + r, rstd + r);
    for (int64_t r = rb; r < re; ++r) {
      const float* wr = row[r - rb];
      const __m512 vm = _mm512_set1_ps(mean[r]), va = _mm512_set1_ps(rstd[r]);
      for (int64_t i = 0; i < inner; i += 16) {
        const __mmask16 k = lanes(i, inner);
        const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(load16(wr + i, k), vm), va);
        store16<kBf16>(y, r * inner + i, k,
                       _mm512_fmadd_ps(xh, load16(g + i, k), load16(b + i, k)));
      }
    }
  }
}

}  // namespace

bool layer_norm_rows(const void* x, bool bf16, const float* gamma, const float* beta, void* y,
                     float* mean, float* rstd, int64_t outer, int64_t inner, double eps) {
  if (!cpu_has_avx512()) return false;
  // Blocks of up to kMaxBlock rows whose floats stay within 16 KiB (half of L1).
  const int64_t stride = (inner + 15) / 16 * 16;
  const int64_t block = std::clamp<int64_t>(4096 / stride, 1, kMaxBlock);
  parallel_for(outer, std::max<int64_t>(inner * 4, 1), [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> buf;  // grow-only: a warm launch allocates nothing
    const size_t need = static_cast<size_t>(stride * block);
    if (buf.size() < need) buf.resize(need);
    if (bf16)
      rows<true>(x, gamma, beta, y, mean, rstd, r0, r1, inner, eps, buf.data(), block);
    else
      rows<false>(x, gamma, beta, y, mean, rstd, r0, r1, inner, eps, buf.data(), block);
  });
  return true;
}

}  // namespace mycel::cpu
#pragma GCC pop_options

#else  // no AVX-512 target regions with this compiler

namespace mycel::cpu {
bool layer_norm_rows(const void*, bool, const float*, const float*, void*, float*, float*, int64_t,
                     int64_t, double) {
  return false;
}
}  // namespace mycel::cpu

#endif
