#include "mycel/kernels/cpu/conv_batch_lanes.h"

#include <algorithm>
#include <array>
#include <utility>

#include "mycel/core/cpu_features.h"
#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/dnnl_util.h"

namespace mycel::cpu {
namespace {
constexpr int64_t kMaxKw = 7;
}  // namespace
}  // namespace mycel::cpu

#if MYCEL_AVX512_KERNELS
// Everything up to pop_options is compiled for AVX-512 and runs only where
// conv2d_bwd_data_batch_lanes_fits (baseline code, below) found the CPU has it.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
#include <immintrin.h>

namespace mycel::cpu {
namespace {

constexpr int64_t kLanes = 16;  // images per vector
constexpr int kXb = 7;          // dx columns per block: 14 accumulators with two image vectors
constexpr int kNv = 2;          // image vectors per block

// Calls f(k) for k = 0..N-1 as compile-time constants (the accumulators stay in registers).
template <class F, size_t... K>
inline void each(F&& f, std::index_sequence<K...>) {
  (f(std::integral_constant<size_t, K>{}), ...);
}

// r[k] := column k of the 16 x 16 block whose rows are r[0..15].
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]),
                  c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      t[8 * i + k] = _mm512_shuffle_f32x4(r[8 * i + k], r[8 * i + 4 + k], 0x88);
      t[8 * i + 4 + k] = _mm512_shuffle_f32x4(r[8 * i + k], r[8 * i + 4 + k], 0xdd);
    }
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xdd);
  }
}

__mmask16 first(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1); }

// dst[k * ld + n] := src[n * cols + k] for n < rows (ld >= rows, a multiple of 16; lanes from rows
// to ld are zero), in 16 x 16 blocks.
void to_lanes(const float* src, int64_t rows, int64_t cols, float* dst, int64_t ld) {
  const int64_t kb = (cols + kLanes - 1) / kLanes, nb = ld / kLanes;
  parallel_for(kb * nb, 4 * kLanes * kLanes, [&](int64_t s, int64_t e) {
    for (int64_t b = s; b < e; ++b) {
      const int64_t k0 = b / nb * kLanes, n0 = b % nb * kLanes, kc = std::min(kLanes, cols - k0);
      __m512 r[16];
      for (int64_t l = 0; l < kLanes; ++l)
        r[l] = n0 + l < rows ? _mm512_maskz_loadu_ps(first(kc), src + (n0 + l) * cols + k0)
                             : _mm512_setzero_ps();
      transpose16(r);
      for (int64_t k = 0; k < kc; ++k) _mm512_storeu_ps(dst + (k0 + k) * ld + n0, r[k]);
    }
  });
}

// The reverse: dst[n * cols + k] := src[k * ld + n] for n < rows.
void from_lanes(const float* src, int64_t ld, int64_t rows, int64_t cols, float* dst) {
  const int64_t kb = (cols + kLanes - 1) / kLanes, nb = ld / kLanes;
  parallel_for(kb * nb, 4 * kLanes * kLanes, [&](int64_t s, int64_t e) {
    for (int64_t b = s; b < e; ++b) {
      const int64_t k0 = b / nb * kLanes, n0 = b % nb * kLanes, kc = std::min(kLanes, cols - k0);
      __m512 r[16];
      for (int64_t k = 0; k < kLanes; ++k)
        r[k] = k < kc ? _mm512_loadu_ps(src + (k0 + k) * ld + n0) : _mm512_setzero_ps();
      transpose16(r);
      for (int64_t l = 0; l < kLanes && n0 + l < rows; ++l)
        _mm512_mask_storeu_ps(dst + (n0 + l) * cols + k0, first(kc), r[l]);
    }
  });
}

struct Args {
  const float* dyt;   // (oc, oh, ow, np)
  const float* w;     // (oc, c, kh, kw)
  float* dxt;         // (c, h, w, np)
  const float* bias;  // (c) or null: added to dx
  bool relu;          // dx := max(dx, 0) (before the store; a NaN stays)
  WindowGeom g;
  int64_t np;
};

// dx columns [x0, x0 + XB) of row y, channel c, image vectors [v0, v0 + NV): dx[y][x] sums
// w[o][c][i][j] * dy[o][y + pt - i][x + pl - j] over the taps that land inside dy.
template <int KW, int XB, int NV>
void block(const Args& a, int64_t c, int64_t y, int64_t x0, int64_t v0) {
  const WindowGeom& g = a.g;
  const int64_t np = a.np;
  __m512 acc[XB * NV];
  const __m512 b0 = _mm512_set1_ps(a.bias ? a.bias[c] : 0.f);
  each([&](auto k) { acc[k] = b0; }, std::make_index_sequence<XB * NV>{});
  for (int64_t o = 0; o < g.oc; ++o)
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t yy = y + g.pt - i;
      if (yy < 0 || yy >= g.oh) continue;
      const float* wr = a.w + ((o * g.c + c) * g.kh + i) * KW;
      __m512 wv[KW];
      each([&](auto j) { wv[j] = _mm512_set1_ps(wr[j]); }, std::make_index_sequence<KW>{});
      const float* dr = a.dyt + (o * g.oh + yy) * g.ow * np + v0 * kLanes;
      // dy column x0 + pl + u reaches dx column x0 + xb through tap j = xb - u: each dy vector
      // is loaded once and feeds every (j, xb) of the block.
      each(
          [&](auto uu) {
            constexpr int u = static_cast<int>(decltype(uu)::value) - (KW - 1);
            const int64_t xx = x0 + g.pl + u;
            if (xx < 0 || xx >= g.ow) return;
            __m512 d[NV];
            each([&](auto v) { d[v] = _mm512_loadu_ps(dr + xx * np + v * kLanes); },
                 std::make_index_sequence<NV>{});
            each(
                [&](auto jj) {
                  constexpr int j = static_cast<int>(decltype(jj)::value), xb = u + j;
                  if constexpr (xb >= 0 && xb < XB)
                    each(
                        [&](auto v) {
                          acc[xb * NV + v] = _mm512_fmadd_ps(wv[j], d[v], acc[xb * NV + v]);
                        },
                        std::make_index_sequence<NV>{});
                },
                std::make_index_sequence<KW>{});
          },
          std::make_index_sequence<XB + KW - 1>{});
    }
  float* out = a.dxt + ((c * g.h + y) * g.w + x0) * np + v0 * kLanes;
  if (a.relu)  // max(0, v) keeps a NaN, as the scalar v < 0 ? 0 : v does
    each([&](auto k) { acc[k] = _mm512_max_ps(_mm512_setzero_ps(), acc[k]); },
         std::make_index_sequence<XB * NV>{});
  each([&](auto k) { _mm512_storeu_ps(out + k / NV * np + k % NV * kLanes, acc[k]); },
       std::make_index_sequence<XB * NV>{});
}

using BlockFn = void (*)(const Args&, int64_t, int64_t, int64_t, int64_t);

// [XB - 1][NV - 1] for one KW.
template <int KW, size_t... X>
constexpr std::array<std::array<BlockFn, kNv>, kXb> blocks_of(std::index_sequence<X...>) {
  return {std::array<BlockFn, kNv>{&block<KW, static_cast<int>(X) + 1, 1>,
                                   &block<KW, static_cast<int>(X) + 1, 2>}...};
}
template <size_t... K>
constexpr std::array<std::array<std::array<BlockFn, kNv>, kXb>, kMaxKw> all_blocks(
    std::index_sequence<K...>) {
  return {blocks_of<static_cast<int>(K) + 1>(std::make_index_sequence<kXb>{})...};
}
constexpr auto kBlocks =
    all_blocks(std::make_index_sequence<kMaxKw>{});  // [KW - 1][XB - 1][NV - 1]

}  // namespace

// dx = the data-gradient sum of dy (n, oc, oh, ow) and w (oc, c, kh, kw) for geometry g (+ bias,
// relu), all NCHW, through the transposed copies.
void lanes_avx512(const float* dy, const float* w, const float* bias, bool relu, float* dx,
                  const WindowGeom& g) {
  const int64_t np = (g.n + kLanes - 1) / kLanes * kLanes, nv = np / kLanes;
  const int64_t dy_cols = g.oc * g.oh * g.ow, dx_cols = g.c * g.h * g.w;
  auto* dyt = static_cast<float*>(dnnl_util::staging_data(0, sizeof(float) * dy_cols * np));
  auto* dxt = static_cast<float*>(dnnl_util::staging_data(1, sizeof(float) * dx_cols * np));
  to_lanes(dy, g.n, dy_cols, dyt, np);
  const Args a{dyt, w, dxt, bias, relu, g, np};
  const int64_t chunks = (nv + kNv - 1) / kNv;
  const auto& fns = kBlocks[g.kw - 1];
  parallel_for(g.c * g.h * chunks, g.oc * g.kh * g.kw * g.w * kNv * kLanes,
               [&](int64_t s, int64_t e) {
                 for (int64_t item = s; item < e; ++item) {
                   const int64_t cy = item / chunks, v0 = item % chunks * kNv;
                   const int64_t c = cy / g.h, y = cy % g.h, nvb = std::min<int64_t>(kNv, nv - v0);
                   for (int64_t x0 = 0; x0 < g.w; x0 += kXb)
                     fns[std::min<int64_t>(kXb, g.w - x0) - 1][nvb - 1](a, c, y, x0, v0);
                 }
               });
  from_lanes(dxt, np, g.n, dx_cols, dx);
}

}  // namespace mycel::cpu
#pragma GCC pop_options
#endif

namespace mycel::cpu {
namespace {

// The geometry the kernel takes (as a data gradient: dy is g's output, dx its input).
bool lanes_fit(const WindowGeom& g) {
  if (g.groups != 1 || g.sh != 1 || g.sw != 1 || g.dh != 1 || g.dw != 1) return false;
  if (g.n < 16 || g.c < 1 || g.c > 16 || g.oc < 1 || g.oc > 16 || g.kh < 1 || g.kw < 1 ||
      g.kw > kMaxKw || g.oh < 1 || g.ow < 1 || g.ow >= 16 || g.h < 1 || g.w < 1)
    return false;
  const int64_t np = (g.n + 15) / 16 * 16;
  if ((g.oc * g.oh * g.ow + g.c * g.h * g.w) * np * 4 > (int64_t{16} << 20)) return false;
#if MYCEL_AVX512_KERNELS
  return cpu_prefers_direct_conv();
#else
  return false;
#endif
}

// The forward convolution of g as a data gradient: x plays dy, y plays dx, the weights flipped
// in both spatial axes with their channel axes swapped, the padding kernel - 1 - padding (so
// only paddings up to kernel - 1).
bool forward_as_gradient(const WindowGeom& g, WindowGeom& t) {
  t = WindowGeom{};
  t.n = g.n, t.c = g.oc, t.h = g.oh, t.w = g.ow, t.oc = g.c, t.oh = g.h, t.ow = g.w;
  t.kh = g.kh, t.kw = g.kw;
  t.pt = g.kh - 1 - g.pt, t.pb = g.kh - 1 - g.pb, t.pl = g.kw - 1 - g.pl, t.pr = g.kw - 1 - g.pr;
  return g.groups == 1 && t.pt >= 0 && t.pb >= 0 && t.pl >= 0 && t.pr >= 0;
}

}  // namespace

bool conv2d_bwd_data_batch_lanes_fits(DType dtype, const WindowGeom& g) {
  return dtype == DType::float32 && lanes_fit(g);
}

void conv2d_backprop_input_batch_lanes(const Tensor& dy, const Tensor& w, Tensor& dx,
                                       const WindowGeom& g) {
  MYCEL_CHECK(
      conv2d_bwd_data_batch_lanes_fits(dx.dtype(), g), RuntimeError,
      "[conv2d_backprop_input] batch-lanes kernel called outside its geometry (backend bug)");
#if MYCEL_AVX512_KERNELS
  lanes_avx512(dy.data<float>(), w.data<float>(), nullptr, false, dx.data<float>(), g);
#else
  (void)dy, (void)w, (void)dx;
#endif
}

bool conv2d_batch_lanes_fits(DType dtype, const WindowGeom& g) {
  WindowGeom t;
  return dtype == DType::float32 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 &&
         forward_as_gradient(g, t) && lanes_fit(t);
}

void conv2d_batch_lanes(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                        const WindowGeom& g, bool relu) {
  MYCEL_CHECK(conv2d_batch_lanes_fits(y.dtype(), g), RuntimeError,
              "[conv2d] batch-lanes kernel called outside its geometry (backend bug)");
  WindowGeom t;
  forward_as_gradient(g, t);
  const float* W = w.data<float>();
  auto* flipped = static_cast<float*>(dnnl_util::staging_data(2, sizeof(float) * w.numel()));
  const int64_t taps = g.kh * g.kw;
  for (int64_t o = 0; o < g.oc; ++o)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t k = 0; k < taps; ++k)  // (i, j) -> (kh - 1 - i, kw - 1 - j) is k -> taps - 1 - k
        flipped[(c * g.oc + o) * taps + taps - 1 - k] = W[(o * g.c + c) * taps + k];
#if MYCEL_AVX512_KERNELS
  lanes_avx512(x.data<float>(), flipped, bias ? bias->data<float>() : nullptr, relu,
               y.data<float>(), t);
#else
  (void)x, (void)bias, (void)y, (void)relu;
#endif
}

}  // namespace mycel::cpu
