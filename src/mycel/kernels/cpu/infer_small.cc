// Small-layer inference kernels (see infer_small.h). AVX2/FMA is the build's baseline
// (x86-64-v3); the scalar loops serve other -march settings.
#include "mycel/kernels/cpu/infer_small.h"

#include <algorithm>
#include <cstring>

#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/mean_hw.h"

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace mycel::cpu {
namespace {

inline float activate(float v, SmallAct act) {
  if (act == SmallAct::kNone) return v;
  v = v < 0.f ? 0.f : v;
  return act == SmallAct::kRelu6 && v > 6.f ? 6.f : v;
}

// Outputs [o0, o0 + 8 * NB) of one row from their panel (k, 8 * NB): NB accumulators of 8 lanes
// stay in registers over k.
template <int NB>
void dense_block(const float* xr, const float* panel, const float* bias, float* yr, int64_t k,
                 int64_t n, int64_t o0, SmallAct act) {
  alignas(32) float sum[NB * 8];
#ifdef __AVX2__
  __m256 acc[NB];
  for (int b = 0; b < NB; ++b) acc[b] = _mm256_setzero_ps();
  for (int64_t j = 0; j < k; ++j) {
    const __m256 xv = _mm256_set1_ps(xr[j]);
    const float* wj = panel + j * (NB * 8);
    for (int b = 0; b < NB; ++b) acc[b] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(wj + 8 * b), acc[b]);
  }
  for (int b = 0; b < NB; ++b) _mm256_store_ps(sum + 8 * b, acc[b]);
#else
  std::fill(sum, sum + NB * 8, 0.f);
  for (int64_t j = 0; j < k; ++j)
    for (int i = 0; i < NB * 8; ++i) sum[i] += xr[j] * panel[j * (NB * 8) + i];
#endif
  const int64_t end = std::min<int64_t>(NB * 8, n - o0);
  for (int64_t i = 0; i < end; ++i)
    yr[o0 + i] = activate(sum[i] + (bias ? bias[o0 + i] : 0.f), act);
}

using BlockFn = void (*)(const float*, const float*, const float*, float*, int64_t, int64_t,
                         int64_t, SmallAct);
constexpr BlockFn kBlocks[8] = {dense_block<1>, dense_block<2>, dense_block<3>, dense_block<4>,
                                dense_block<5>, dense_block<6>, dense_block<7>, dense_block<8>};
constexpr int64_t kPanel = 64;  // outputs per panel: 8 accumulators of 8 lanes

}  // namespace

Tensor pack_dense_rows(const Tensor& w) {
  const int64_t n = w.shape()[0], k = w.shape()[1], n8 = (n + 7) / 8 * 8;
  Tensor p = Tensor::empty({std::max<int64_t>(k * n8, 1)}, DType::float32);
  float* P = p.data<float>();
  const float* W = w.data<float>();
  for (int64_t o0 = 0; o0 < n8; o0 += kPanel) {  // panel o0 starts at o0 * k
    const int64_t width = std::min(kPanel, n8 - o0);
    float* panel = P + o0 * k;
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i < width; ++i)
        panel[j * width + i] = o0 + i < n ? W[(o0 + i) * k + j] : 0.f;
  }
  return p;
}

void dense_rows(const float* x, const float* packed, const float* bias, float* y, int64_t m,
                int64_t k, int64_t n, SmallAct act) {
  const int64_t n8 = (n + 7) / 8 * 8, panels = (n8 + kPanel - 1) / kPanel;
  // Threads take contiguous runs of panels: each streams its own share of the weights
  // (MobileNetV2's 1280 x 1000 classifier, 5 MB, is bound by how fast one core reads them). A node
  // the session keeps on one thread (SerialScope) runs the loop as one chunk.
  parallel_for(panels, k * kPanel * m, [&](int64_t p0, int64_t p1) {
    for (int64_t r = 0; r < m; ++r)
      for (int64_t o0 = p0 * kPanel; o0 < std::min(p1 * kPanel, n8); o0 += kPanel) {
        const int64_t nb = std::min(kPanel, n8 - o0) / 8;
        kBlocks[nb - 1](x + r * k, packed + o0 * k, bias, y + r * n, k, n, o0, act);
      }
  });
}

namespace {
template <class T>
void pool2x2(const T* x, T* y, int64_t n, int64_t cb, int64_t h, int64_t w, int64_t oh, int64_t ow,
             int64_t block) {
  const int64_t B = block;
  for (int64_t p = 0; p < n * cb; ++p) {
    const T* xp = x + p * h * w * B;
    T* yp = y + p * oh * ow * B;
    for (int64_t r = 0; r < oh; ++r) {
      const T* r0 = xp + 2 * r * w * B;
      const T* r1 = r0 + w * B;
      T* yr = yp + r * ow * B;
      for (int64_t c = 0; c < ow; ++c) {
        const T *a = r0 + 2 * c * B, *b = r1 + 2 * c * B;
        for (int64_t l = 0; l < B; ++l)
          yr[c * B + l] = std::max(std::max(a[l], a[B + l]), std::max(b[l], b[B + l]));
      }
    }
  }
}
}  // namespace

void max_pool2x2_blocked(const float* x, float* y, int64_t n, int64_t cb, int64_t h, int64_t w,
                         int64_t oh, int64_t ow, int64_t block) {
  pool2x2(x, y, n, cb, h, w, oh, ow, block);
}

void max_pool2x2_blocked(const uint8_t* x, uint8_t* y, int64_t n, int64_t cb, int64_t h, int64_t w,
                         int64_t oh, int64_t ow, int64_t block) {
  pool2x2(x, y, n, cb, h, w, oh, ow, block);
}

void unblock_to_nchw(const float* x, float* y, int64_t n, int64_t c, int64_t hw, int64_t block) {
  const int64_t cb = (c + block - 1) / block;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* src = x + ((i * cb + ch / block) * hw) * block + ch % block;
      float* dst = y + (i * c + ch) * hw;
      for (int64_t p = 0; p < hw; ++p) dst[p] = src[p * block];
    }
}

void mean_hw_blocked(const float* x, float* y, int64_t n, int64_t c, int64_t hw, int64_t block) {
  mean_hw_blocked_of(
      x, y, n, c, hw, block, [](float v) { return v; }, [](float v) { return v; });
}

void add_act(const float* a, const float* b, float* y, int64_t count, SmallAct act) {
  // One loop per activation, so each vectorizes without a branch inside.
  if (act == SmallAct::kNone) {
    for (int64_t i = 0; i < count; ++i) y[i] = a[i] + b[i];
  } else if (act == SmallAct::kRelu) {
    for (int64_t i = 0; i < count; ++i) y[i] = std::max(a[i] + b[i], 0.f);
  } else {
    for (int64_t i = 0; i < count; ++i) y[i] = std::min(std::max(a[i] + b[i], 0.f), 6.f);
  }
}

}  // namespace mycel::cpu
