#include "mycel/kernels/cpu/pool_direct.h"

#include <algorithm>

#include "mycel/core/cpu_features.h"
#include "mycel/core/error.h"
#include "mycel/core/parallel.h"

#if MYCEL_AVX512_KERNELS
// Compiled for AVX-512 up to pop_options; taken only where max_pool_2x2_fits found the CPU has it.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
#include <immintrin.h>

#include "mycel/kernels/cpu/avx512_math.h"
#endif

#if MYCEL_AVX512_KERNELS
namespace mycel::cpu {
namespace {

constexpr int64_t kLanes = 16;  // pooled columns per step: 32 input columns

__mmask16 first_lanes(int64_t n) {
  return n >= kLanes ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// Calls fn(plane, pooled row) for every pooled row, in parallel. Rows advance without a division
// per row: with LeNet5's 5-column rows the 64-bit divisions cost as much as the pooling (its
// conv2 pooling gradient took 0.094 ms a batch on one Zen 4 core, 0.9 ns an element).
template <class Fn>
void for_rows(const WindowGeom& g, int64_t cost, Fn fn) {
  parallel_for(g.n * g.c * g.oh, cost, [&](int64_t s, int64_t e) {
    int64_t p = s / g.oh, i = s % g.oh;
    for (int64_t item = s; item < e; ++item) {
      fn(p, i);
      if (++i == g.oh) i = 0, ++p;
    }
  });
}

}  // namespace

void max_pool_2x2_avx512(const Tensor& x, Tensor& y, const WindowGeom& g) {
  const float* X = x.data<float>();
  float* Y = y.data<float>();
  for_rows(g, 4 * g.ow, [&](int64_t p, int64_t i) {
    const float* r0 = X + (p * g.h + 2 * i) * g.w;
    const float* r1 = r0 + g.w;
    float* out = Y + (p * g.oh + i) * g.ow;
    for (int64_t c = 0; c < g.ow; c += kLanes) {
      const int64_t in = 2 * std::min(kLanes, g.ow - c);  // input columns of this step
      const __mmask16 lo = first_lanes(in), hi = first_lanes(in - kLanes);
      const __m512 m = avx512::max_pool_2x2(
          _mm512_maskz_loadu_ps(lo, r0 + 2 * c), _mm512_maskz_loadu_ps(hi, r0 + 2 * c + kLanes),
          _mm512_maskz_loadu_ps(lo, r1 + 2 * c), _mm512_maskz_loadu_ps(hi, r1 + 2 * c + kLanes));
      _mm512_mask_storeu_ps(out + c, first_lanes(g.ow - c), m);
    }
  });
}

void max_pool_2x2_grad_avx512(const Tensor& x, const Tensor& dy, Tensor& dx, const WindowGeom& g) {
  const float* X = x.data<float>();
  const float* DY = dy.data<float>();
  float* DX = dx.data<float>();
  // Lanes 2j and 2j + 1 of the two halves come from lane j of (even, odd) values.
  const __m512i lo_idx = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi_idx =
      _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  auto nan = [](__m512 v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q); };
  if (g.oh == 0) {  // no window: nothing receives a gradient
    std::fill(DX, DX + dx.numel(), 0.f);
    return;
  }
  for_rows(g, 8 * g.ow, [&](int64_t p, int64_t i) {
    const float* r0 = X + (p * g.h + 2 * i) * g.w;
    const float* r1 = r0 + g.w;
    float* d0 = DX + (p * g.h + 2 * i) * g.w;
    float* d1 = d0 + g.w;
    const float* d = DY + (p * g.oh + i) * g.ow;
    for (int64_t c = 0; c < g.ow; c += kLanes) {
      const int64_t in = 2 * std::min(kLanes, g.ow - c);
      const __mmask16 lo = first_lanes(in), hi = first_lanes(in - kLanes);
      const __m512 x0l = _mm512_maskz_loadu_ps(lo, r0 + 2 * c);
      const __m512 x0h = _mm512_maskz_loadu_ps(hi, r0 + 2 * c + kLanes);
      const __m512 x1l = _mm512_maskz_loadu_ps(lo, r1 + 2 * c);
      const __m512 x1h = _mm512_maskz_loadu_ps(hi, r1 + 2 * c + kLanes);
      const __m512 win[4] = {avx512::even_lanes(x0l, x0h), avx512::odd_lanes(x0l, x0h),
                             avx512::even_lanes(x1l, x1h), avx512::odd_lanes(x1l, x1h)};
      // The scan of max_pool2d_grad_ref, per lane: a later element takes over when it is
      // larger or a NaN, until the running maximum is a NaN.
      __mmask16 sel[4] = {0xFFFF, 0, 0, 0};
      __m512 m = win[0];
      for (int k = 1; k < 4; ++k) {
        const __mmask16 take = (_mm512_cmp_ps_mask(win[k], m, _CMP_GT_OQ) | nan(win[k])) & ~nan(m);
        for (int j = 0; j < k; ++j) sel[j] &= ~take;
        sel[k] = take;
        m = _mm512_mask_mov_ps(m, take, win[k]);
      }
      const __m512 g_out = _mm512_maskz_loadu_ps(first_lanes(g.ow - c), d + c);
      __m512 v[4];
      for (int k = 0; k < 4; ++k) v[k] = _mm512_maskz_mov_ps(sel[k], g_out);
      _mm512_mask_storeu_ps(d0 + 2 * c, lo, _mm512_permutex2var_ps(v[0], lo_idx, v[1]));
      _mm512_mask_storeu_ps(d1 + 2 * c, lo, _mm512_permutex2var_ps(v[2], lo_idx, v[3]));
      if (hi) {  // rows of up to 16 columns (LeNet5's conv2: 10) have no second half
        _mm512_mask_storeu_ps(d0 + 2 * c + kLanes, hi, _mm512_permutex2var_ps(v[0], hi_idx, v[1]));
        _mm512_mask_storeu_ps(d1 + 2 * c + kLanes, hi, _mm512_permutex2var_ps(v[2], hi_idx, v[3]));
      }
    }
    if (g.w > 2 * g.ow) {  // a last odd column belongs to no window
      std::fill(d0 + 2 * g.ow, d0 + g.w, 0.f);
      std::fill(d1 + 2 * g.ow, d1 + g.w, 0.f);
    }
    if (i == g.oh - 1 && g.h > 2 * g.oh)  // as does a last odd row
      std::fill(d1 + g.w, DX + (p + 1) * g.h * g.w, 0.f);
  });
}

}  // namespace mycel::cpu
#pragma GCC pop_options
#endif

#if defined(__AVX2__) && defined(__FMA__)
// AVX2 copies, in baseline code (-march=x86-64-v3): the plain gradient loop below strides by
// two and the compiler leaves it scalar (LeNet5's first pooling gradient took 1.4 ms per 64
// images on one core). Masked stores (VMASKMOVPS) are microcoded on AMD's cores: rows of 8 or
// more pooled columns end with a full step that overlaps the one before (the same values are
// written twice), and shorter rows store through the stack.
#include <immintrin.h>
namespace mycel::cpu {
namespace {

constexpr int64_t kLanes8 = 8;  // pooled columns per step: 16 input columns

__m256i first8(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(n, 0, 8))),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
__m256 load8(__m256i m, const float* p) { return _mm256_maskload_ps(p, m); }
// The first n lanes of v to p, through the stack (see above).
void store8(float* p, int64_t n, __m256 v) {
  alignas(32) float tmp[kLanes8];
  _mm256_store_ps(tmp, v);
  for (int64_t l = 0; l < n; ++l) p[l] = tmp[l];
}
__m256 isnan8(__m256 v) { return _mm256_cmp_ps(v, v, _CMP_UNORD_Q); }
// Columns 0, 2, ..., 14 and 1, 3, ..., 15 of the 16 floats (lo, hi).
__m256 even8(__m256 lo, __m256 hi) {
  const __m256 s = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}
__m256 odd8(__m256 lo, __m256 hi) {
  const __m256 s = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}

// The four window elements of 8 pooled columns, in max_pool2d_ref's scan order.
struct Windows {
  __m256 v[4];
  __m256i lo = _mm256_setzero_si256(), hi = lo;  // load masks of the input columns (partial steps)
};

Windows windows(const float* r0, const float* r1, int64_t c, int64_t ow) {
  Windows w;
  const int64_t in = 2 * std::min(kLanes8, ow - c);
  __m256 x0l, x0h, x1l, x1h;
  if (in == 2 * kLanes8) {
    x0l = _mm256_loadu_ps(r0 + 2 * c), x0h = _mm256_loadu_ps(r0 + 2 * c + kLanes8);
    x1l = _mm256_loadu_ps(r1 + 2 * c), x1h = _mm256_loadu_ps(r1 + 2 * c + kLanes8);
  } else {
    w.lo = first8(in), w.hi = first8(in - kLanes8);
    x0l = load8(w.lo, r0 + 2 * c), x0h = load8(w.hi, r0 + 2 * c + kLanes8);
    x1l = load8(w.lo, r1 + 2 * c), x1h = load8(w.hi, r1 + 2 * c + kLanes8);
  }
  w.v[0] = even8(x0l, x0h), w.v[1] = odd8(x0l, x0h);
  w.v[2] = even8(x1l, x1h), w.v[3] = odd8(x1l, x1h);
  return w;
}

// The scan per lane: sel[k] is all ones where element k is the window's (first) maximum.
__m256 scan(const Windows& w, __m256* sel) {
  __m256 m = w.v[0];
  sel[0] = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  for (int k = 1; k < 4; ++k) {
    const __m256 take = _mm256_andnot_ps(
        isnan8(m), _mm256_or_ps(_mm256_cmp_ps(w.v[k], m, _CMP_GT_OQ), isnan8(w.v[k])));
    for (int j = 0; j < k; ++j) sel[j] = _mm256_andnot_ps(take, sel[j]);
    sel[k] = take;
    m = _mm256_blendv_ps(m, w.v[k], take);
  }
  return m;
}

// Calls fn(plane, pooled row, spill) for every pooled row, in parallel. spill: the row's partial
// step may store a full 8 (16) lanes, the excess landing in the next row's output, which the
// same thread writes next: rows of 4 to 7 pooled columns (so the excess fits in that row) that
// are not their chunk's last.
template <class Fn>
void rows_of(const WindowGeom& g, int64_t cost, Fn fn) {
  const bool short_rows = g.ow >= 4 && g.ow < kLanes8;
  parallel_for(g.n * g.c * g.oh, cost, [&](int64_t s, int64_t e) {
    for (int64_t item = s; item < e; ++item)
      fn(item / g.oh, item % g.oh, short_rows && item + 1 < e);
  });
}

}  // namespace

void max_pool_2x2_avx2(const Tensor& x, Tensor& y, const WindowGeom& g) {
  const float* X = x.data<float>();
  float* Y = y.data<float>();
  rows_of(g, 4 * g.ow, [&](int64_t p, int64_t i, bool spill) {
    const float* r0 = X + (p * g.h + 2 * i) * g.w;
    float* out = Y + (p * g.oh + i) * g.ow;
    for (int64_t c = 0; c < g.ow; c += kLanes8) {
      __m256 sel[4];
      if (g.ow < kLanes8) {
        const __m256 m = scan(windows(r0, r0 + g.w, c, g.ow), sel);
        spill ? _mm256_storeu_ps(out + c, m) : store8(out + c, g.ow - c, m);
        continue;
      }
      c = std::min(c, g.ow - kLanes8);  // the last step overlaps the one before
      _mm256_storeu_ps(out + c, scan(windows(r0, r0 + g.w, c, g.ow), sel));
    }
  });
}

void max_pool_2x2_grad_avx2(const Tensor& x, const Tensor& dy, Tensor& dx, const WindowGeom& g) {
  const float* X = x.data<float>();
  const float* DY = dy.data<float>();
  float* DX = dx.data<float>();
  if (g.oh == 0) {  // no window: nothing receives a gradient
    std::fill(DX, DX + dx.numel(), 0.f);
    return;
  }
  rows_of(g, 8 * g.ow, [&](int64_t p, int64_t i, bool spill) {
    const float* r0 = X + (p * g.h + 2 * i) * g.w;
    float* d0 = DX + (p * g.h + 2 * i) * g.w;
    float* d1 = d0 + g.w;
    const float* d = DY + (p * g.oh + i) * g.ow;
    for (int64_t c = 0; c < g.ow; c += kLanes8) {
      const bool full = g.ow >= kLanes8;
      if (full) c = std::min(c, g.ow - kLanes8);  // the last step overlaps the one before
      const Windows w = windows(r0, r0 + g.w, c, g.ow);
      __m256 sel[4];
      scan(w, sel);
      const __m256 grad = full ? _mm256_loadu_ps(d + c) : load8(first8(g.ow - c), d + c);
      __m256 v[4];
      for (int k = 0; k < 4; ++k) v[k] = _mm256_and_ps(sel[k], grad);
      // Interleave (even, odd) back into 16 columns per row.
      for (int r = 0; r < 2; ++r) {
        const __m256 a = _mm256_unpacklo_ps(v[2 * r], v[2 * r + 1]),
                     b = _mm256_unpackhi_ps(v[2 * r], v[2 * r + 1]);
        float* dst = (r ? d1 : d0) + 2 * c;
        const __m256 lo = _mm256_permute2f128_ps(a, b, 0x20),
                     hi = _mm256_permute2f128_ps(a, b, 0x31);
        if (full || spill) {  // spill: rows 0 and 1 are stored in order, then the next pair
          _mm256_storeu_ps(dst, lo);
          _mm256_storeu_ps(dst + kLanes8, hi);
        } else {
          const int64_t in = 2 * (g.ow - c);  // input columns of this step, < 16
          store8(dst, std::min(in, kLanes8), lo);
          store8(dst + kLanes8, in - kLanes8, hi);
        }
      }
    }
    if (g.w > 2 * g.ow) {  // a last odd column belongs to no window
      std::fill(d0 + 2 * g.ow, d0 + g.w, 0.f);
      std::fill(d1 + 2 * g.ow, d1 + g.w, 0.f);
    }
    if (i == g.oh - 1 && g.h > 2 * g.oh)  // as does a last odd row
      std::fill(d1 + g.w, DX + (p + 1) * g.h * g.w, 0.f);
  });
}

}  // namespace mycel::cpu
#define MYCEL_POOL_AVX2 1
#else
#define MYCEL_POOL_AVX2 0
#endif

namespace mycel::cpu {
namespace {

// Whether the scan of max_pool2d_ref moves from running maximum m to v: v is larger or a NaN,
// while m is not a NaN.
inline bool takes(float m, float v) { return (v > m || v != v) && m == m; }

// Calls fn(plane, pooled row) for every pooled row, in parallel.
template <class Fn>
void each_row(const WindowGeom& g, int64_t cost, Fn fn) {
  parallel_for(g.n * g.c * g.oh, cost, [&](int64_t s, int64_t e) {
    for (int64_t item = s; item < e; ++item) fn(item / g.oh, item % g.oh);
  });
}

// Plain loops for CPUs without AVX-512 (the compiler vectorizes them for the build's -march).
void max_pool_2x2_loops(const Tensor& x, Tensor& y, const WindowGeom& g) {
  const float* X = x.data<float>();
  float* Y = y.data<float>();
  each_row(g, 4 * g.ow, [&](int64_t p, int64_t i) {
    const float* r0 = X + (p * g.h + 2 * i) * g.w;
    const float* r1 = r0 + g.w;
    float* out = Y + (p * g.oh + i) * g.ow;
    for (int64_t j = 0; j < g.ow; ++j) {
      float m = r0[2 * j];
      m = takes(m, r0[2 * j + 1]) ? r0[2 * j + 1] : m;
      m = takes(m, r1[2 * j]) ? r1[2 * j] : m;
      m = takes(m, r1[2 * j + 1]) ? r1[2 * j + 1] : m;
      out[j] = m;
    }
  });
}

void max_pool_2x2_grad_loops(const Tensor& x, const Tensor& dy, Tensor& dx, const WindowGeom& g) {
  const float* X = x.data<float>();
  const float* DY = dy.data<float>();
  float* DX = dx.data<float>();
  if (g.oh == 0) {  // no window: nothing receives a gradient
    std::fill(DX, DX + dx.numel(), 0.f);
    return;
  }
  each_row(g, 8 * g.ow, [&](int64_t p, int64_t i) {
    const float* r0 = X + (p * g.h + 2 * i) * g.w;
    const float* r1 = r0 + g.w;
    float* d0 = DX + (p * g.h + 2 * i) * g.w;
    float* d1 = d0 + g.w;
    const float* d = DY + (p * g.oh + i) * g.ow;
    for (int64_t j = 0; j < g.ow; ++j) {
      const float v[4] = {r0[2 * j], r0[2 * j + 1], r1[2 * j], r1[2 * j + 1]};
      int s = 0;
      float m = v[0];
      for (int k = 1; k < 4; ++k)
        if (takes(m, v[k])) m = v[k], s = k;
      const float gv = d[j];
      d0[2 * j] = s == 0 ? gv : 0.f;
      d0[2 * j + 1] = s == 1 ? gv : 0.f;
      d1[2 * j] = s == 2 ? gv : 0.f;
      d1[2 * j + 1] = s == 3 ? gv : 0.f;
    }
    if (g.w > 2 * g.ow) {  // a last odd column belongs to no window
      std::fill(d0 + 2 * g.ow, d0 + g.w, 0.f);
      std::fill(d1 + 2 * g.ow, d1 + g.w, 0.f);
    }
    if (i == g.oh - 1 && g.h > 2 * g.oh)  // as does a last odd row
      std::fill(d1 + g.w, DX + (p + 1) * g.h * g.w, 0.f);
  });
}

}  // namespace

bool max_pool_2x2_fits(DType dtype, const WindowGeom& g) {
  return dtype == DType::float32 && g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.dh == 1 &&
         g.dw == 1 && g.pt == 0 && g.pb == 0 && g.pl == 0 && g.pr == 0;
}

void max_pool_2x2(const Tensor& x, Tensor& y, const WindowGeom& g) {
  MYCEL_CHECK(max_pool_2x2_fits(y.dtype(), g), RuntimeError,
              "[max_pool2d] 2x2 kernel called outside its geometry (backend bug)");
#if MYCEL_AVX512_KERNELS
  if (cpu_has_avx512()) return max_pool_2x2_avx512(x, y, g);
#endif
#if MYCEL_POOL_AVX2
  return max_pool_2x2_avx2(x, y, g);
#endif
  max_pool_2x2_loops(x, y, g);
}

void max_pool_2x2_grad(const Tensor& x, const Tensor& dy, Tensor& dx, const WindowGeom& g) {
  MYCEL_CHECK(max_pool_2x2_fits(dx.dtype(), g), RuntimeError,
              "[max_pool2d_grad] 2x2 kernel called outside its geometry (backend bug)");
#if MYCEL_AVX512_KERNELS
  if (cpu_has_avx512()) return max_pool_2x2_grad_avx512(x, dy, dx, g);
#endif
#if MYCEL_POOL_AVX2
  return max_pool_2x2_grad_avx2(x, dy, dx, g);
#endif
  max_pool_2x2_grad_loops(x, dy, dx, g);
}

}  // namespace mycel::cpu
