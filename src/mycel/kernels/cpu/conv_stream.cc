#include "mycel/kernels/cpu/conv_stream.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "mycel/core/cpu_features.h"
#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/dnnl_layout.h"
#include "mycel/kernels/cpu/dnnl_util.h"

// The kernel needs AVX2 and FMA in the baseline (x86-64-v3, the default MYCEL_ARCH); other
// builds never choose it.
#if defined(__AVX2__) && defined(__FMA__)
#define MYCEL_STREAM_AVX2 1
#else
#define MYCEL_STREAM_AVX2 0
#endif

namespace mycel::cpu {
namespace {

constexpr int64_t kLanes = 8;  // floats per __m256, and channels per nChw8c block
// Output channels per work item: 4 blocks of 8. The micro-kernel holds J positions x NO blocks
// of accumulators: 3 x 4 (the last group of a layer: 4 x 3, 6 x 2, 6 x 1), at most 12 of AVX2's
// 16 registers, with NO weight registers and a broadcast; 4 x 3 loads 7 values per 12 FMAs.
constexpr int64_t kGroup = 4;
template <int NO>
constexpr int kTileOf = NO == 4   ? 3
                        : NO == 3 ? 4
                                  : 6;

// The rule (see conv_stream_fits): the largest output planes taken at stride 1 and at larger
// strides.
struct Settings {
  // Off by default on Zen 4 with AVX-512: oneDNN's brgconv there (dnnl_conv.cc, keep_native) ran
  // every layer this kernel takes faster on one thread, the reorders to NHWC included (ResNet-18
  // CIFAR b1: 512 channels at 4x4 0.97 -> 0.80 ms, stride 2 into 8x8/4x4 0.39/0.52 -> 0.34/0.42).
  bool on = !(cpu_has_avx512() && cpu_is_zen4());
  long plane_s1 = 16, plane_s2 = 256;
};

const Settings& settings() {
  static const Settings s = [] {
    Settings r;
    if (const char* v = std::getenv("MYCEL_CONV_STREAM"); v && *v) r.on = std::atoi(v) != 0;
    if (const char* v = std::getenv("MYCEL_CONV_STREAM_RULE"))
      std::sscanf(v, "%ld,%ld", &r.plane_s1, &r.plane_s2);
    return r;
  }();
  return s;
}

#if MYCEL_STREAM_AVX2

// Geometry of one call.
struct Plan {
  int64_t cb, ocb, taps, plane;  // input / output blocks, kh * kw, oh * ow
  int64_t hp, wp;                // the padded input plane
};

// acc[p][0..8*NO) += sum over the block's 8 input channels and the taps of x * w, for the J
// (at most 6) positions whose padded-input offsets are `pos` (floats): NO output blocks of 8.
template <int NO, int J>
void tile_kernel(const float* xb, const int64_t* pos, const int64_t* tap_off, int64_t taps,
                 const float* w, float* acc) {
  static_assert(J >= 1 && J * NO <= 12);
  // Fully unrolled (the pragmas): GCC otherwise keeps `a` addressable and stores it each step.
  __m256 a[J][NO];
#pragma GCC unroll 6
  for (int j = 0; j < J; ++j)
#pragma GCC unroll 4
    for (int o = 0; o < NO; ++o) a[j][o] = _mm256_loadu_ps(acc + (j * NO + o) * kLanes);
  const float* px[J];
#pragma GCC unroll 6
  for (int j = 0; j < J; ++j) px[j] = xb + pos[j];
  for (int64_t t = 0; t < taps; ++t) {
    const int64_t off = tap_off[t];
    const float* wt = w + t * kLanes * NO * kLanes;
#pragma GCC unroll 8
    for (int ic = 0; ic < kLanes; ++ic) {
      if constexpr (NO >= J) {  // J broadcasts held, one weight register: J * NO + J + 1 <= 16
        __m256 b[J];
#pragma GCC unroll 6
        for (int j = 0; j < J; ++j) b[j] = _mm256_broadcast_ss(px[j] + off + ic);
#pragma GCC unroll 4
        for (int o = 0; o < NO; ++o) {
          const __m256 wv = _mm256_loadu_ps(wt + (ic * NO + o) * kLanes);
#pragma GCC unroll 6
          for (int j = 0; j < J; ++j) a[j][o] = _mm256_fmadd_ps(b[j], wv, a[j][o]);
        }
      } else {  // NO weights held, one broadcast register: J * NO + NO + 1 <= 16
        __m256 wv[NO];
#pragma GCC unroll 4
        for (int o = 0; o < NO; ++o) wv[o] = _mm256_loadu_ps(wt + (ic * NO + o) * kLanes);
#pragma GCC unroll 6
        for (int j = 0; j < J; ++j) {
          const __m256 b = _mm256_broadcast_ss(px[j] + off + ic);
#pragma GCC unroll 4
          for (int o = 0; o < NO; ++o) a[j][o] = _mm256_fmadd_ps(b, wv[o], a[j][o]);
        }
      }
    }
  }
#pragma GCC unroll 6
  for (int j = 0; j < J; ++j)
#pragma GCC unroll 4
    for (int o = 0; o < NO; ++o) _mm256_storeu_ps(acc + (j * NO + o) * kLanes, a[j][o]);
}

template <int NO>
using TileFn = void (*)(const float*, const int64_t*, const int64_t*, int64_t, const float*,
                        float*);
template <int NO, size_t... J>
constexpr std::array<TileFn<NO>, sizeof...(J)> tile_fns(std::index_sequence<J...>) {
  return {tile_kernel<NO, static_cast<int>(J) + 1>...};
}
// tile_kernel<NO, J> for J = 1 .. kTileOf<NO> at index J - 1 (the plane's last, shorter tile).
template <int NO>
constexpr auto kTileFns = tile_fns<NO>(std::make_index_sequence<kTileOf<NO>>{});

// NO output blocks of 8 channels starting at block `ob8`: the partial sums of all q.plane
// positions in `acc`, each input block's weights read once.
template <int NO>
void out_block(const Plan& q, const float* xp, const int64_t* pos, const int64_t* tap_off,
               const float* u, const float* bias8, float* y, int64_t ob8, float* acc,
               WinogradAct act) {
  const int64_t width = NO * kLanes;
  for (int64_t p = 0; p < q.plane; ++p)
    std::memcpy(acc + p * width, bias8 + ob8 * kLanes, width * sizeof(float));
  const int64_t wblock = q.taps * kLanes * width;  // one input block's weights
  constexpr int kTile = kTileOf<NO>;
  const int64_t full = q.plane / kTile, rest = q.plane % kTile;
  for (int64_t ib = 0; ib < q.cb; ++ib) {
    const float* xb = xp + ib * q.hp * q.wp * kLanes;
    const float* w = u + ib * wblock;
    for (int64_t t = 0; t < full; ++t)
      tile_kernel<NO, kTile>(xb, pos + t * kTile, tap_off, q.taps, w, acc + t * kTile * width);
    if (rest)
      kTileFns<NO>[rest - 1](xb, pos + full * kTile, tap_off, q.taps, w,
                             acc + full * kTile * width);
  }
  const __m256 zero = _mm256_setzero_ps(), six = _mm256_set1_ps(6.f);
  for (int o = 0; o < NO; ++o) {
    float* yo = y + (ob8 + o) * q.plane * kLanes;
    for (int64_t p = 0; p < q.plane; ++p) {
      __m256 v = _mm256_loadu_ps(acc + p * width + o * kLanes);
      if (act != WinogradAct::kNone) v = _mm256_max_ps(v, zero);
      if (act == WinogradAct::kRelu6) v = _mm256_min_ps(v, six);
      _mm256_storeu_ps(yo + p * kLanes, v);
    }
  }
}

#endif  // MYCEL_STREAM_AVX2

}  // namespace

bool conv_stream_fits(DType dtype, const WindowGeom& g) {
#if MYCEL_STREAM_AVX2
  const Settings& s = settings();
  return s.on && dtype == DType::float32 && g.n == 1 && g.groups == 1 && g.c >= 16 && g.oc >= 16 &&
         g.kh * g.kw > 1 && g.oh > 0 && g.ow > 0 &&
         g.oh * g.ow <= (g.sh * g.sw > 1 ? s.plane_s2 : s.plane_s1) &&
         activation_tag() == dnnl::memory::format_tag::nChw8c;
#else
  (void)dtype, (void)g;
  return false;
#endif
}

bool conv_stream_for(DType dtype, const WindowGeom& g, const KernelParams* params, bool has_slot) {
  if (!has_slot || !params || !params->const_weights || !params->src_blocked ||
      !params->dst_blocked)
    return false;
  for (const PostOp& op : params->post_ops)
    if (op.kind != PostOp::Kind::kRelu && op.kind != PostOp::Kind::kRelu6) return false;
  return conv_stream_fits(dtype, g);
}

StreamWeights conv_stream_weights(const Tensor& w, const WindowGeom& g) {
  MYCEL_CHECK(w.dtype() == DType::float32 && w.ndim() == 4 && w.shape()[0] == g.oc &&
                  w.shape()[1] == g.c && w.shape()[2] == g.kh && w.shape()[3] == g.kw &&
                  g.groups == 1,
              ValueError, "[conv2d] streamed-conv weights must be float32 (", g.oc, ", ", g.c, ", ",
              g.kh, ", ", g.kw, "), got ", dtype_name(w.dtype()), shape_str(w.shape()));
  StreamWeights r;
  r.c8 = (g.c + kLanes - 1) / kLanes * kLanes;
  r.oc8 = (g.oc + kLanes - 1) / kLanes * kLanes;
  const int64_t taps = g.kh * g.kw;
  r.u = Tensor::zeros({r.oc8 * r.c8 * taps}, DType::float32);
  const float* src = w.data<float>();
  float* u = r.u.data<float>();
  for (int64_t o = 0; o < g.oc; ++o) {
    const int64_t grp = o / (kGroup * kLanes), first = grp * kGroup * kLanes;
    const int64_t width = std::min(kGroup * kLanes, r.oc8 - first);
    float* slab = u + first * r.c8 * taps;  // the group's [cb][taps][8][width]
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t t = 0; t < taps; ++t)
        slab[((c / kLanes * taps + t) * kLanes + c % kLanes) * width + o - first] =
            src[(o * g.c + c) * taps + t];
  }
  return r;
}

void conv2d_stream(const float* x, const StreamWeights& u, const float* bias, float* y,
                   const WindowGeom& g, WinogradAct act) {
#if MYCEL_STREAM_AVX2
  MYCEL_CHECK(u.c8 == (g.c + 7) / 8 * 8 && u.oc8 == (g.oc + 7) / 8 * 8 && g.groups == 1 &&
                  u.u.numel() == u.oc8 * u.c8 * g.kh * g.kw && g.oh > 0 && g.ow > 0,
              RuntimeError,
              "[conv2d] streamed-conv weights or geometry do not fit this convolution");
  Plan q{};
  q.cb = u.c8 / kLanes, q.ocb = u.oc8 / kLanes, q.taps = g.kh * g.kw, q.plane = g.oh * g.ow;
  // The padded plane covers every tap of every output position.
  q.hp = std::max(g.h + g.pt, (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1);
  q.wp = std::max(g.w + g.pl, (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1);
  // Calling thread's staging: [0] the padded input of one image, [2] bias, position and tap
  // offsets (ints after the floats).
  const int64_t xp_floats = q.cb * q.hp * q.wp * kLanes;
  float* xp = static_cast<float*>(dnnl_util::staging_data(0, xp_floats * sizeof(float)));
  const int64_t npos = q.plane;
  char* aux = static_cast<char*>(
      dnnl_util::staging_data(2, u.oc8 * sizeof(float) + (npos + q.taps) * sizeof(int64_t)));
  float* bias8 = reinterpret_cast<float*>(aux);
  std::memset(bias8, 0, u.oc8 * sizeof(float));
  if (bias) std::memcpy(bias8, bias, g.oc * sizeof(float));
  int64_t* pos = reinterpret_cast<int64_t*>(aux + (u.oc8 * sizeof(float) + 7) / 8 * 8);
  int64_t* tap_off = pos + npos;
  for (int64_t p = 0; p < npos; ++p)
    pos[p] = ((p / g.ow) * g.sh * q.wp + (p % g.ow) * g.sw) * kLanes;
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j)
      tap_off[i * g.kw + j] = (i * g.dh * q.wp + j * g.dw) * kLanes;
  // Work items: groups of kGroup output blocks (the last maybe fewer).
  const int64_t groups = (q.ocb + kGroup - 1) / kGroup;
  const float* uw = u.u.data<float>();
  const int64_t in_plane = g.h * g.w * kLanes;
  for (int64_t img = 0; img < g.n; ++img) {
    // Zero borders, then the image's rows copied inside them.
    const float* xi = x + img * q.cb * in_plane;
    std::memset(xp, 0, xp_floats * sizeof(float));
    for (int64_t b = 0; b < q.cb; ++b)
      for (int64_t r = 0; r < g.h; ++r)
        std::memcpy(xp + ((b * q.hp + r + g.pt) * q.wp + g.pl) * kLanes,
                    xi + b * in_plane + r * g.w * kLanes, g.w * kLanes * sizeof(float));
    float* yi = y + img * q.ocb * q.plane * kLanes;
    parallel_for(groups, npos * q.taps * u.c8 * kGroup * kLanes, [&](int64_t b, int64_t e) {
      float* acc =
          static_cast<float*>(dnnl_util::staging_data(1, npos * kGroup * kLanes * sizeof(float)));
      for (int64_t gi = b; gi < e; ++gi) {
        const int64_t ob8 = gi * kGroup;
        const float* up = uw + ob8 * kLanes * u.c8 * q.taps;
        switch (std::min(kGroup, q.ocb - ob8)) {
          case 4:
            out_block<4>(q, xp, pos, tap_off, up, bias8, yi, ob8, acc, act);
            break;
          case 3:
            out_block<3>(q, xp, pos, tap_off, up, bias8, yi, ob8, acc, act);
            break;
          case 2:
            out_block<2>(q, xp, pos, tap_off, up, bias8, yi, ob8, acc, act);
            break;
          default:
            out_block<1>(q, xp, pos, tap_off, up, bias8, yi, ob8, acc, act);
            break;
        }
      }
    });
  }
#else
  (void)x, (void)u, (void)bias, (void)y, (void)g, (void)act;
  MYCEL_THROW(RuntimeError, "[conv2d] the streamed convolution needs an AVX2 + FMA build");
#endif
}

}  // namespace mycel::cpu
