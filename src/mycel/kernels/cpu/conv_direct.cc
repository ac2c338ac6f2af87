#include "mycel/kernels/cpu/conv_direct.h"

#include <immintrin.h>  // here, at the baseline: each intrinsic carries its own target

#include <algorithm>
#include <array>
#include <utility>

#include "mycel/core/cpu_features.h"
#include "mycel/core/error.h"
#include "mycel/core/parallel.h"

// The AVX2 copy needs the baseline to have AVX2 and FMA (x86-64-v3, the default MYCEL_ARCH).
#if defined(__AVX2__) && defined(__FMA__)
#define MYCEL_DIRECT_AVX2 1
#else
#define MYCEL_DIRECT_AVX2 0
#endif

#if MYCEL_AVX512_KERNELS
// Everything up to pop_options is compiled for AVX-512 and runs only where conv2d_direct_fits
// (below, baseline code) found the CPU has it; headers included above stay baseline.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
#include "mycel/kernels/cpu/avx512_math.h"

namespace mycel::cpu::direct512 {
namespace {

struct Vec {
  using V = __m512;
  using M = __mmask16;
  static constexpr int kLanes = 16;
  static constexpr int kMaxOcBlock = 8;   // x 2 tiles: 16 of 32 registers
  static constexpr int kMaxOcPooled = 6;  // x 2 tiles x 2 rows: 24
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V load(M m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static void store_n(float* p, int64_t n, V v) { _mm512_mask_storeu_ps(p, first(n), v); }
  static void store_aligned(float* p, V v) { _mm512_store_ps(p, v); }
  static M first(int64_t n) { return static_cast<M>((1u << n) - 1); }
  static M mask_of(const bool* on) {
    M m = 0;
    for (int l = 0; l < kLanes; ++l)
      if (on[l]) m |= static_cast<M>(1u << l);
    return m;
  }
  static V relu(V v) { return avx512::relu(v); }
  static V max_pool_2x2(V a, V b, V c, V d) { return avx512::max_pool_2x2(a, b, c, d); }
};

#include "mycel/kernels/cpu/conv_direct_impl.inc"

}  // namespace

bool fits_avx512(const WindowGeom& g) { return fits(g); }
void conv_avx512(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                 const WindowGeom& g, bool relu, int64_t block) {
  conv(x, w, bias, y, g, relu, block);
}
void conv_max_pool_avx512(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                          const WindowGeom& g, bool relu, int64_t block) {
  conv_max_pool(x, w, bias, y, g, relu, block);
}
bool fits_transposed_avx512(const WindowGeom& t) { return fits(t, 16 * 25); }
void conv_plain_avx512(const float* x, const float* w, float* y, const WindowGeom& g) {
  conv(x, w, nullptr, y, g, false, 0);
}

}  // namespace mycel::cpu::direct512
#pragma GCC pop_options
#endif

#if MYCEL_DIRECT_AVX2
// The same kernel for AVX2/FMA: the build's baseline (-march=x86-64-v3), so no target region.
namespace mycel::cpu::direct256 {
namespace {

struct Vec {
  using V = __m256;
  using M = __m256i;
  static constexpr int kLanes = 8;
  static constexpr int kMaxOcBlock = 6;   // x 2 tiles: 12 of 16 registers
  static constexpr int kMaxOcPooled = 3;  // x 2 tiles x 2 rows: 12
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  // VMASKMOVPS: masked-off lanes read nothing (no fault past a row's end) and give 0.
  static V load(M m, const float* p) { return _mm256_maskload_ps(p, m); }
  // VMASKMOVPS stores are microcoded and slow on AMD's cores: a full row tile is a plain store,
  // a partial one goes through the stack.
  static void store_n(float* p, int64_t n, V v) {
    if (n == kLanes) return _mm256_storeu_ps(p, v);
    alignas(32) float tmp[kLanes];
    _mm256_store_ps(tmp, v);
    for (int64_t l = 0; l < n; ++l) p[l] = tmp[l];
  }
  static void store_aligned(float* p, V v) { _mm256_store_ps(p, v); }
  static M first(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static M mask_of(const bool* on) {
    alignas(32) int32_t m[kLanes];
    for (int l = 0; l < kLanes; ++l) m[l] = on[l] ? -1 : 0;
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(m));
  }
  // VMAXPS(a, b) is a > b ? a : b: so relu keeps NaN and -0, as the scalar x < 0 ? 0 : x does.
  static V relu(V v) { return _mm256_max_ps(_mm256_setzero_ps(), v); }
  static V nan_of(V v) { return _mm256_cmp_ps(v, v, _CMP_UNORD_Q); }
  // The maximum in scan order: on a tie the first, and a NaN wins (the first if both are).
  static V max_first(V first, V second) {
    V m = _mm256_max_ps(second, first);
    m = _mm256_blendv_ps(m, second, nan_of(second));
    return _mm256_blendv_ps(m, first, nan_of(first));
  }
  // Columns 0, 2, ..., 14 and 1, 3, ..., 15 of the 16 floats (lo, hi).
  static V even(V lo, V hi) {
    const V s = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  static V odd(V lo, V hi) {
    const V s = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  // The 2x2 window maxima of two rows of 16 columns, in max_pool2d_ref's scan order.
  static V max_pool_2x2(V r0_lo, V r0_hi, V r1_lo, V r1_hi) {
    const V top = max_first(even(r0_lo, r0_hi), odd(r0_lo, r0_hi));
    const V bottom = max_first(even(r1_lo, r1_hi), odd(r1_lo, r1_hi));
    return max_first(top, bottom);
  }
};

#include "mycel/kernels/cpu/conv_direct_impl.inc"

}  // namespace

bool fits_avx2(const WindowGeom& g) { return fits(g); }
void conv_avx2(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const WindowGeom& g,
               bool relu, int64_t block) {
  conv(x, w, bias, y, g, relu, block);
}
void conv_max_pool_avx2(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                        const WindowGeom& g, bool relu, int64_t block) {
  conv_max_pool(x, w, bias, y, g, relu, block);
}
// The data gradient's convolution (see conv2d_direct_backprop_input): up to 16 channels of
// 5x5 taps per output channel (LeNet5's conv2 has 16 x 25).
bool fits_transposed_avx2(const WindowGeom& t) { return fits(t, 16 * 25); }
void conv_plain_avx2(const float* x, const float* w, float* y, const WindowGeom& g) {
  conv(x, w, nullptr, y, g, false, 0);
}

}  // namespace mycel::cpu::direct256
#endif

namespace mycel::cpu {

// The copy for this CPU: AVX-512 where it has it, else AVX2 (the build's baseline).
bool conv2d_direct_fits(DType dtype, const WindowGeom& g) {
  if (dtype != DType::float32 || g.groups != 1 || g.sh != 1 || g.sw != 1 || g.dh != 1 || g.dw != 1)
    return false;
#if MYCEL_AVX512_KERNELS
  if (cpu_has_avx512()) return direct512::fits_avx512(g);
#endif
#if MYCEL_DIRECT_AVX2
  return direct256::fits_avx2(g);
#else
  return false;
#endif
}

void conv2d_direct(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                   const WindowGeom& g, bool relu, int64_t block) {
  MYCEL_CHECK(conv2d_direct_fits(y.dtype(), g) && block >= 0, RuntimeError,
              "[conv2d] direct kernel called outside its geometry (backend bug)");
#if MYCEL_AVX512_KERNELS
  if (cpu_has_avx512()) return direct512::conv_avx512(x, w, bias, y, g, relu, block);
#endif
#if MYCEL_DIRECT_AVX2
  direct256::conv_avx2(x, w, bias, y, g, relu, block);
#endif
}

namespace {

// dx = conv2d_backprop_input(dy, w) is the stride-1 convolution of dy with w flipped in both
// spatial axes and its channel axes swapped, padded by kernel - 1 - padding on each side (so
// the output has x's size); false when a padding exceeds kernel - 1.
bool transposed_geom(const WindowGeom& g, WindowGeom& t) {
  t = WindowGeom{};
  t.n = g.n, t.c = g.oc, t.h = g.oh, t.w = g.ow, t.oc = g.c, t.oh = g.h, t.ow = g.w;
  t.kh = g.kh, t.kw = g.kw;
  t.pt = g.kh - 1 - g.pt, t.pb = g.kh - 1 - g.pb, t.pl = g.kw - 1 - g.pl, t.pr = g.kw - 1 - g.pr;
  return t.pt >= 0 && t.pb >= 0 && t.pl >= 0 && t.pr >= 0 && t.h > 0 && t.w > 0;
}

}  // namespace

bool conv2d_direct_bwd_data_fits(DType dtype, const WindowGeom& g) {
  if (dtype != DType::float32 || g.groups != 1 || g.sh != 1 || g.sw != 1 || g.dh != 1 || g.dw != 1)
    return false;
  WindowGeom t;
  if (!transposed_geom(g, t)) return false;
#if MYCEL_AVX512_KERNELS
  // Measured against oneDNN on AVX2 and on Zen 4 (LeNet5's conv2 data gradient, one thread: 0.74
  // ms oneDNN, 0.51 here, 0.54 the AVX2 copy); MYCEL_CONV_DIRECT=0 keeps oneDNN's.
  if (cpu_has_avx512()) return cpu_prefers_direct_conv() && direct512::fits_transposed_avx512(t);
#endif
#if MYCEL_DIRECT_AVX2
  return direct256::fits_transposed_avx2(t);
#else
  return false;
#endif
}

void conv2d_direct_backprop_input(const Tensor& dy, const Tensor& w, Tensor& dx,
                                  const WindowGeom& g, float* scratch) {
  MYCEL_CHECK(conv2d_direct_bwd_data_fits(dx.dtype(), g), RuntimeError,
              "[conv2d_backprop_input] direct kernel called outside its geometry (backend bug)");
  WindowGeom t;
  transposed_geom(g, t);
  const float* W = w.data<float>();
  const int64_t taps = g.kh * g.kw;
  for (int64_t o = 0; o < g.oc; ++o)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t k = 0; k < taps; ++k)  // (i, j) -> (kh - 1 - i, kw - 1 - j) is k -> taps - 1 - k
        scratch[(c * g.oc + o) * taps + taps - 1 - k] = W[(o * g.c + c) * taps + k];
#if MYCEL_AVX512_KERNELS
  if (cpu_has_avx512())
    return direct512::conv_plain_avx512(dy.data<float>(), scratch, dx.data<float>(), t);
#endif
#if MYCEL_DIRECT_AVX2
  direct256::conv_plain_avx2(dy.data<float>(), scratch, dx.data<float>(), t);
#else
  (void)dy, (void)dx;
#endif
}

void conv2d_direct_max_pool(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                            const WindowGeom& g, bool relu, int64_t block) {
  MYCEL_CHECK(conv2d_direct_fits(y.dtype(), g) && block >= 0, RuntimeError,
              "[conv2d] direct kernel called outside its geometry (backend bug)");
  if (g.oh < 2 || g.ow < 2) return;  // no full window: the pooled output is empty
#if MYCEL_AVX512_KERNELS
  if (cpu_has_avx512()) return direct512::conv_max_pool_avx512(x, w, bias, y, g, relu, block);
#endif
#if MYCEL_DIRECT_AVX2
  direct256::conv_max_pool_avx2(x, w, bias, y, g, relu, block);
#endif
}

}  // namespace mycel::cpu
