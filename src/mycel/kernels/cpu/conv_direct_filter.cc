// The weight gradient of a few-channel convolution as an AVX2/FMA loop (conv_direct.h):
// dw[o, c, i, j] = sum over images and output pixels of dy[o] times the input under tap (i, j).
// oneDNN's backward-weights kernels vectorize over channels, which LeNet5's 1 -> 6 and 6 -> 16
// convolutions barely fill; this loop vectorizes over 8 output columns instead and keeps the
// (channel, tap) sums of a kernel row in registers, summing lanes once per image group.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "mycel/core/cpu_features.h"
#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/conv_direct.h"

#if defined(__AVX2__) && defined(__FMA__)
#define MYCEL_FILTER_AVX2 1
#else
#define MYCEL_FILTER_AVX2 0
#endif

namespace mycel::cpu {
// What every block of one call shares, for either ISA's loop: Mask is its lane mask (a k-mask
// on AVX-512, a vector of all-ones lanes on AVX2).
template <class Mask, int64_t MaxTiles, int64_t MaxKw>
struct FilterArgs {
  const float* dy;
  const float* x;
  WindowGeom g;
  int64_t tiles;
  Mask dy_mask[MaxTiles];         // lanes whose output column exists
  Mask x_mask[MaxTiles * MaxKw];  // [t * kw + j]: and whose input column is in the row
};
}  // namespace mycel::cpu

#if MYCEL_AVX512_KERNELS && MYCEL_FILTER_AVX2
// The by-columns plan with 16-lane vectors, for AVX-512 CPUs (conv2d_direct_bwd_filter_fits): 32
// registers hold the sums of up to 4 output channels of a 5-wide kernel row with the row's 5
// input vectors, so each input vector feeds twice the FMAs of the AVX2 loop (LeNet5's conv1
// weight gradient, 6 channels: two blocks of 3 instead of three of 2).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
namespace mycel::cpu::filter512 {
namespace {

constexpr int64_t kLanes = 16;
constexpr int64_t kMaxKw = 7, kMaxTiles = 8;  // rows up to 128 columns
constexpr int kMaxOcb = 4;

template <class F, size_t... K>
inline void each(F&& f, std::index_sequence<K...>) {
  (f(std::integral_constant<size_t, K>{}), ...);
}

using Args = FilterArgs<__mmask16, kMaxTiles, kMaxKw>;

// Adds to out the sums of kernel row i, input channel c, output channels [o0, o0 + OCB) over
// images [n0, n1).
template <int KW, int OCB>
void block(const Args& a, int64_t n0, int64_t n1, int64_t c, int64_t i, int64_t o0, float* out) {
  const WindowGeom& g = a.g;
  constexpr auto kAcc = std::make_index_sequence<OCB * KW>{};
  __m512 acc[OCB * KW];
  each([&](auto k) { acc[k] = _mm512_setzero_ps(); }, kAcc);
  const int64_t plane = g.oh * g.ow;
  const int64_t oh0 = std::max<int64_t>(0, g.pt - i), oh1 = std::min(g.oh, g.h + g.pt - i);
  for (int64_t n = n0; n < n1; ++n) {
    const float* xp = a.x + (n * g.c + c) * g.h * g.w + (i - g.pt) * g.w - g.pl;
    const float* dp = a.dy + (n * g.oc + o0) * plane;
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      const float* xr = xp + oh * g.w;
      const float* dr = dp + oh * g.ow;
      for (int64_t t = 0; t < a.tiles; ++t) {
        __m512 v[KW];  // masked-off lanes (padding, past the row) read nothing and give 0
        each(
            [&](auto j) {
              v[j] = _mm512_maskz_loadu_ps(a.x_mask[t * KW + j], xr + t * kLanes + j);
            },
            std::make_index_sequence<KW>{});
        each(
            [&](auto o) {
              const __m512 d = _mm512_maskz_loadu_ps(a.dy_mask[t], dr + o * plane + t * kLanes);
              each([&](auto j) { acc[o * KW + j] = _mm512_fmadd_ps(d, v[j], acc[o * KW + j]); },
                   std::make_index_sequence<KW>{});
            },
            std::make_index_sequence<OCB>{});
      }
    }
  }
  each(
      [&](auto k) {
        out[((o0 + k / KW) * g.c + c) * g.kh * KW + i * KW + k % KW] +=
            _mm512_reduce_add_ps(acc[k]);
      },
      kAcc);
}

using BlockFn = void (*)(const Args&, int64_t, int64_t, int64_t, int64_t, int64_t, float*);
template <int KW, size_t... B>
constexpr std::array<BlockFn, kMaxOcb> blocks_of(std::index_sequence<B...>) {
  return {&block<KW, static_cast<int>(B) + 1>...};
}
template <size_t... K>
constexpr std::array<std::array<BlockFn, kMaxOcb>, kMaxKw> all_blocks(std::index_sequence<K...>) {
  return {blocks_of<static_cast<int>(K) + 1>(std::make_index_sequence<kMaxOcb>{})...};
}
constexpr auto kBlocks = all_blocks(std::make_index_sequence<kMaxKw>{});  // [KW - 1][OCB - 1]

}  // namespace

bool fits(const WindowGeom& g) { return g.ow <= kMaxTiles * kLanes && g.kw <= kMaxKw; }

// Images [n0, n1) into out (zeroed by the caller), in groups small enough for L1, the output
// channels in equal blocks of at most kMaxOcb (6 -> 3 + 3).
void images(const float* dy, const float* x, const WindowGeom& g, int64_t n0, int64_t n1,
            float* out) {
  Args a;
  a.dy = dy, a.x = x, a.g = g;
  a.tiles = (g.ow + kLanes - 1) / kLanes;
  for (int64_t t = 0; t < a.tiles; ++t) {
    __mmask16 d = 0;
    for (int l = 0; l < kLanes; ++l)
      if (t * kLanes + l < g.ow) d |= __mmask16(1u << l);
    a.dy_mask[t] = d;
    for (int64_t j = 0; j < g.kw; ++j) {
      __mmask16 m = 0;
      for (int l = 0; l < kLanes; ++l) {
        const int64_t ow = t * kLanes + l, col = ow + j - g.pl;
        if (ow < g.ow && col >= 0 && col < g.w) m |= __mmask16(1u << l);
      }
      a.x_mask[t * g.kw + j] = m;
    }
  }
  const int64_t bytes = (g.c * g.h * g.w + g.oc * g.oh * g.ow) * 4;
  const int64_t group = std::max<int64_t>(1, 24 * 1024 / std::max<int64_t>(bytes, 1));
  const int64_t nblocks = (g.oc + kMaxOcb - 1) / kMaxOcb, ocb = (g.oc + nblocks - 1) / nblocks;
  const auto& fns = kBlocks[g.kw - 1];
  for (int64_t s = n0; s < n1; s += group) {
    const int64_t e = std::min(n1, s + group);
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t o0 = 0; o0 < g.oc; o0 += ocb)
          fns[std::min(ocb, g.oc - o0) - 1](a, s, e, c, i, o0, out);
  }
}

}  // namespace mycel::cpu::filter512
#pragma GCC pop_options
#endif

namespace mycel::cpu {

#if MYCEL_FILTER_AVX2
namespace {

constexpr int kLanes = 8;
constexpr int64_t kMaxKw = 7, kMaxTiles = 16;  // kernels up to 7 wide, rows up to 128 columns

// Output channels summed together: OCB * KW accumulators, OCB dy rows and one input vector
// within the 16 registers.
template <int KW>
constexpr int kOcb = std::min(4, 15 / (KW + 1));

// Calls f(k) for k = 0..N-1 as compile-time constants (accumulators stay in registers; see
// conv_direct_impl.inc).
template <class F, size_t... K>
inline void each(F&& f, std::index_sequence<K...>) {
  (f(std::integral_constant<size_t, K>{}), ...);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// __v4di: __m256i without its may_alias attribute, which a template argument would drop.
using Args = FilterArgs<__v4di, kMaxTiles, kMaxKw>;

// Adds to out (one image group's dw) the sums of kernel row i, input channel c, output channels
// [o0, o0 + OCB) over images [n0, n1).
template <int KW, int OCB>
void block(const Args& a, int64_t n0, int64_t n1, int64_t c, int64_t i, int64_t o0, float* out) {
  const WindowGeom& g = a.g;
  constexpr auto kAcc = std::make_index_sequence<OCB * KW>{};
  __m256 acc[OCB * KW];
  each([&](auto k) { acc[k] = _mm256_setzero_ps(); }, kAcc);
  const int64_t plane = g.oh * g.ow;
  // Output rows whose input row oh - pt + i is inside x.
  const int64_t oh0 = std::max<int64_t>(0, g.pt - i), oh1 = std::min(g.oh, g.h + g.pt - i);
  for (int64_t n = n0; n < n1; ++n) {
    const float* xp = a.x + (n * g.c + c) * g.h * g.w + (i - g.pt) * g.w - g.pl;
    const float* dp = a.dy + (n * g.oc + o0) * plane;
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      const float* xr = xp + oh * g.w;
      const float* dr = dp + oh * g.ow;
      for (int64_t t = 0; t < a.tiles; ++t) {
        __m256 d[OCB];
        each([&](auto o) { d[o] = _mm256_maskload_ps(dr + o * plane + t * kLanes, a.dy_mask[t]); },
             std::make_index_sequence<OCB>{});
        const __m256i* m = a.x_mask + t * KW;
        each(
            [&](auto j) {
              // Masked-off lanes (padding, past the row) read nothing and give 0.
              const __m256 v = _mm256_maskload_ps(xr + t * kLanes + j, m[j]);
              each([&](auto o) { acc[o * KW + j] = _mm256_fmadd_ps(d[o], v, acc[o * KW + j]); },
                   std::make_index_sequence<OCB>{});
            },
            std::make_index_sequence<KW>{});
      }
    }
  }
  each(
      [&](auto k) { out[((o0 + k / KW) * g.c + c) * g.kh * KW + i * KW + k % KW] += hsum(acc[k]); },
      kAcc);
}

// The OCB < kOcb<KW> block for the last output channels.
template <int KW, int OCB = kOcb<KW> - 1>
void tail_block(int ocb, const Args& a, int64_t n0, int64_t n1, int64_t c, int64_t i, int64_t o0,
                float* out) {
  if constexpr (OCB >= 1) {
    if (ocb == OCB) return block<KW, OCB>(a, n0, n1, c, i, o0, out);
    tail_block<KW, OCB - 1>(ocb, a, n0, n1, c, i, o0, out);
  }
}

// Images [n0, n1) into out (zeroed by the caller), in groups of images small enough for L1.
template <int KW>
void images(const Args& a, int64_t n0, int64_t n1, float* out) {
  const WindowGeom& g = a.g;
  const int64_t bytes = (g.c * g.h * g.w + g.oc * g.oh * g.ow) * 4;
  const int64_t group = std::max<int64_t>(1, 24 * 1024 / std::max<int64_t>(bytes, 1));
  constexpr int B = kOcb<KW>;
  for (int64_t s = n0; s < n1; s += group) {
    const int64_t e = std::min(n1, s + group);
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t o0 = 0; o0 < g.oc; o0 += B) {
          if (g.oc - o0 >= B)
            block<KW, B>(a, s, e, c, i, o0, out);
          else
            tail_block<KW>(static_cast<int>(g.oc - o0), a, s, e, c, i, o0, out);
        }
  }
}

using ImagesFn = void (*)(const Args&, int64_t, int64_t, float*);
constexpr std::array<ImagesFn, kMaxKw> kImages = {&images<1>, &images<2>, &images<3>, &images<4>,
                                                  &images<5>, &images<6>, &images<7>};

// The other vectorization, for rows too short to fill 8-column tiles (LeNet5's conv2: 10
// columns, 16 channels): over output channels, OV vectors of 8, with each image's dy transposed
// to (pixel, channel) first. part holds the sums as (c, i, j, OV * 8 channels), then the
// transposed dy.
template <int KW, int OV>
void channel_images(const Args& a, int64_t n0, int64_t n1, float* part) {
  const WindowGeom& g = a.g;
  constexpr int64_t ocp = OV * kLanes;
  const int64_t pixels = g.oh * g.ow;
  float* dyt = part + g.c * g.kh * KW * ocp;
  float row[kMaxTiles * kLanes + kMaxKw];  // an input row with its padding columns as zeros
  const bool padded = g.pl > 0 || g.pr > 0;
  for (int64_t n = n0; n < n1; ++n) {
    const float* d = a.dy + n * g.oc * pixels;
    for (int64_t p = 0; p < pixels; ++p)  // padding channels stay 0 from the caller's zeroing
      for (int64_t o = 0; o < g.oc; ++o) dyt[p * ocp + o] = d[o * pixels + p];
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t i = 0; i < g.kh; ++i) {
        __m256 acc[KW * OV];
        each([&](auto k) { acc[k] = _mm256_setzero_ps(); }, std::make_index_sequence<KW * OV>{});
        const int64_t oh0 = std::max<int64_t>(0, g.pt - i), oh1 = std::min(g.oh, g.h + g.pt - i);
        for (int64_t oh = oh0; oh < oh1; ++oh) {
          const float* src = a.x + ((n * g.c + c) * g.h + oh + i - g.pt) * g.w;
          const float* xr = src;  // column ow + j of the padded row
          if (padded) {
            for (int64_t k = 0; k < g.ow + KW - 1; ++k) {
              const int64_t col = k - g.pl;
              row[k] = col >= 0 && col < g.w ? src[col] : 0.f;
            }
            xr = row;
          }
          const float* dr = dyt + oh * g.ow * ocp;
          for (int64_t ow = 0; ow < g.ow; ++ow) {
            __m256 dv[OV];
            each([&](auto v) { dv[v] = _mm256_loadu_ps(dr + ow * ocp + v * kLanes); },
                 std::make_index_sequence<OV>{});
            each(
                [&](auto j) {
                  const __m256 b = _mm256_broadcast_ss(xr + ow + j);
                  each(
                      [&](auto v) { acc[j * OV + v] = _mm256_fmadd_ps(b, dv[v], acc[j * OV + v]); },
                      std::make_index_sequence<OV>{});
                },
                std::make_index_sequence<KW>{});
          }
        }
        float* out = part + (c * g.kh + i) * KW * ocp;
        each(
            [&](auto k) {
              float* at = out + k * kLanes;  // (j, v) = (k / OV, k % OV): contiguous
              _mm256_storeu_ps(at, _mm256_add_ps(_mm256_loadu_ps(at), acc[k]));
            },
            std::make_index_sequence<KW * OV>{});
      }
  }
}

// [OV - 1][KW - 1]; none where KW * OV accumulators would not leave registers for the rest.
template <int OV, size_t... K>
constexpr std::array<ImagesFn, kMaxKw> channel_fns(std::index_sequence<K...>) {
  return {(static_cast<int>(K + 1) * OV <= 12 ? &channel_images<static_cast<int>(K + 1), OV>
                                              : nullptr)...};
}
constexpr std::array<std::array<ImagesFn, kMaxKw>, 2> kChannelImages = {
    channel_fns<1>(std::make_index_sequence<kMaxKw>{}),
    channel_fns<2>(std::make_index_sequence<kMaxKw>{})};

// How one call runs: by columns (images) or by channels (channel_images), and the floats each
// batch slice needs in the scratch.
struct Plan {
  ImagesFn fn = nullptr;
  bool by_channel = false;
  int64_t part = 0;
};

Plan plan_of(const WindowGeom& g) {
  Plan p;
  const int64_t ov = (g.oc + kLanes - 1) / kLanes, tiles = (g.ow + kLanes - 1) / kLanes;
  // Filled lanes: oc / (8 ov) against ow / (8 tiles); channels when they fill more, fit the
  // registers, and the transposed dy stays small (64 KiB).
  const ImagesFn by_channel = ov <= 2 ? kChannelImages[ov - 1][g.kw - 1] : nullptr;
  if (by_channel && g.oc * tiles > g.ow * ov && g.oh * g.ow * ov * kLanes <= 16384) {
    p.fn = by_channel, p.by_channel = true;
    p.part = (g.c * g.kh * g.kw + g.oh * g.ow) * ov * kLanes;
  } else {
    p.fn = kImages[g.kw - 1];
    p.part = g.oc * g.c * g.kh * g.kw;
  }
  return p;
}

// Batch slices: one per thread.
int64_t filter_parts(const WindowGeom& g) {
  return std::max<int64_t>(1, std::min<int64_t>(num_threads(), g.n));
}

__m256i first(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(n, 0, 8))),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace
#endif

bool conv2d_direct_bwd_filter_fits(DType dtype, const WindowGeom& g) {
  if (dtype != DType::float32 || g.groups != 1 || g.sh != 1 || g.sw != 1 || g.dh != 1 ||
      g.dw != 1 || g.kw < 1 || g.kw > 7 || g.ow < 8 || g.ow > 128 || g.c > 16 || g.oc > 16)
    return false;
#if MYCEL_AVX512_KERNELS
  // Measured against oneDNN on AVX2, on Zen 4 (LeNet5's weight gradients, one thread: 0.47 ->
  // 0.28 ms and 0.49 -> 0.32) and on Ice Lake (0.71 -> 0.27, 0.53 -> 0.44); MYCEL_CONV_DIRECT=0
  // keeps oneDNN's.
  if (cpu_has_avx512() && !cpu_prefers_direct_conv()) return false;
#endif
  return MYCEL_FILTER_AVX2 != 0;
}

int64_t conv2d_direct_bwd_filter_scratch(const WindowGeom& g) {
#if MYCEL_FILTER_AVX2
  return filter_parts(g) * plan_of(g).part;
#else
  (void)g;
  return 0;
#endif
}

void conv2d_direct_backprop_filter(const Tensor& dy, const Tensor& x, Tensor& dw,
                                   const WindowGeom& g, float* scratch) {
  MYCEL_CHECK(conv2d_direct_bwd_filter_fits(dw.dtype(), g), RuntimeError,
              "[conv2d_backprop_filter] direct kernel called outside its geometry (backend bug)");
#if MYCEL_FILTER_AVX2
  Args a;
  a.dy = dy.data<float>(), a.x = x.data<float>(), a.g = g;
  a.tiles = (g.ow + kLanes - 1) / kLanes;
  for (int64_t t = 0; t < a.tiles; ++t) {
    a.dy_mask[t] = first(g.ow - t * kLanes);
    for (int64_t j = 0; j < g.kw; ++j) {
      alignas(32) int32_t on[kLanes];
      for (int l = 0; l < kLanes; ++l) {
        const int64_t ow = t * kLanes + l, col = ow + j - g.pl;
        on[l] = ow < g.ow && col >= 0 && col < g.w ? -1 : 0;
      }
      a.x_mask[t * g.kw + j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(on));
    }
  }
  // One slice of the batch per thread, each into its own partial sums; then they are added.
  const Plan plan = plan_of(g);
  const int64_t parts = filter_parts(g), size = dw.numel();
  std::memset(scratch, 0, sizeof(float) * plan.part * parts);
  const int64_t per_image = g.oc * g.oh * g.ow * g.c * g.kh * g.kw;
#if MYCEL_AVX512_KERNELS
  const bool wide = !plan.by_channel && cpu_has_avx512() && filter512::fits(g);
#else
  const bool wide = false;
#endif
  (void)wide;
  parallel_for(parts, per_image * ((g.n + parts - 1) / parts), [&](int64_t s, int64_t e) {
    for (int64_t p = s; p < e; ++p) {
      const int64_t n0 = p * g.n / parts, n1 = (p + 1) * g.n / parts;
#if MYCEL_AVX512_KERNELS
      if (wide) {
        filter512::images(a.dy, a.x, g, n0, n1, scratch + p * plan.part);
        continue;
      }
#endif
      plan.fn(a, n0, n1, scratch + p * plan.part);
    }
  });
  float* out = dw.data<float>();
  if (plan.by_channel) {  // (c, i, j, channel) -> (channel, c, i, j)
    const int64_t taps = g.c * g.kh * g.kw, ocp = plan.part / (taps + g.oh * g.ow);
    for (int64_t o = 0; o < g.oc; ++o)
      for (int64_t k = 0; k < taps; ++k) {
        float sum = 0;
        for (int64_t p = 0; p < parts; ++p) sum += scratch[p * plan.part + k * ocp + o];
        out[o * taps + k] = sum;
      }
    return;
  }
  std::memcpy(out, scratch, sizeof(float) * size);
  for (int64_t p = 1; p < parts; ++p)
    for (int64_t k = 0; k < size; ++k) out[k] += scratch[p * plan.part + k];
#else
  (void)dy, (void)x, (void)dw, (void)scratch;
#endif
}

}  // namespace mycel::cpu
