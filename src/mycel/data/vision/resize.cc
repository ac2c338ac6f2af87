// Resampling kernels: separable resize with precomputed tap tables, and inverse-mapped affine
// warps (rotation, shear, translation). Conventions follow OpenCV, which MindSpore uses:
//  - LINEAR/CUBIC: half-pixel centers, src = (dst + 0.5) * in/out - 0.5, no antialiasing;
//    LINEAR clamps src to [0, in-1]; CUBIC (a = -0.75) replicates the border.
//  - NEAREST: src = floor(dst * in/out) (OpenCV's INTER_NEAREST, not Pillow's centered one).
//  - AREA: box average over the covered source pixels when shrinking, LINEAR when enlarging.
// uint8 results are computed in float and rounded to nearest, then saturated.
#include <algorithm>
#include <cmath>
#include <cstring>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "mycel/data/vision/image.h"
#include "mycel/data/vision/pixel_chain.h"

namespace mycel::data::vision {
namespace {

// Taps of one axis: output i reads source idx[i*k + j] with weight wt[i*k + j].
struct Taps {
  int k = 0;
  std::vector<int32_t> idx;
  std::vector<float> wt;
};

float cubic_w(double x, int j) {  // weight of tap j (at offsets -1, 0, 1, 2) for fraction x
  const double a = -0.75;
  double w0 = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  double w1 = ((a + 2) * x - (a + 3)) * x * x + 1;
  double w2 = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  double w[4] = {w0, w1, w2, 1 - w0 - w1 - w2};
  return static_cast<float>(w[j]);
}

Taps make_taps(int64_t in, int64_t out, Interp interp) {
  Taps t;
  double scale = static_cast<double>(in) / out;
  if (interp == Interp::area && scale <= 1.0) interp = Interp::linear;
  auto clampi = [in](int64_t i) { return static_cast<int32_t>(std::clamp<int64_t>(i, 0, in - 1)); };
  if (interp == Interp::linear) {
    t.k = 2;
    for (int64_t o = 0; o < out; ++o) {
      double f = (o + 0.5) * scale - 0.5;
      int64_t s = static_cast<int64_t>(std::floor(f));
      f -= s;
      if (s < 0) s = 0, f = 0;
      if (s >= in - 1) s = in - 1, f = 0;
      t.idx.push_back(clampi(s));
      t.idx.push_back(clampi(s + 1));
      t.wt.push_back(static_cast<float>(1 - f));
      t.wt.push_back(static_cast<float>(f));
    }
  } else if (interp == Interp::cubic) {
    t.k = 4;
    for (int64_t o = 0; o < out; ++o) {
      double f = (o + 0.5) * scale - 0.5;
      int64_t s = static_cast<int64_t>(std::floor(f));
      f -= s;
      for (int j = 0; j < 4; ++j) {
        t.idx.push_back(clampi(s - 1 + j));
        t.wt.push_back(cubic_w(f, j));
      }
    }
  } else {  // area, shrinking: the box [o*scale, (o+1)*scale) weighted by coverage
    t.k = static_cast<int>(std::ceil(scale)) + 1;
    for (int64_t o = 0; o < out; ++o) {
      double b = o * scale, e = std::min<double>((o + 1) * scale, in);
      int64_t s = static_cast<int64_t>(std::floor(b));
      for (int j = 0; j < t.k; ++j) {
        double lo = std::max<double>(b, s + j), hi = std::min<double>(e, s + j + 1);
        t.idx.push_back(clampi(s + j));
        t.wt.push_back(hi > lo ? static_cast<float>((hi - lo) / (e - b)) : 0.f);
      }
    }
  }
  return t;
}

template <class T>
inline T store(float v) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    v = std::min(std::max(v, 0.f), 255.f);
    return static_cast<uint8_t>(v + 0.5f);
  } else {
    return static_cast<T>(v);
  }
}

#if defined(__AVX2__) && defined(__FMA__)
// Outputs ox .. ox + 7 of a row's two-tap horizontal pass, before any rounding: acc =
// fma(w0, r0, 0) then fma(w1, r1, acc), the scalar loop's chain (see horizontal2_c1 for perm).
inline __m256 taps8(const float* row, int64_t ow, int64_t ox, const int32_t* x0, const int32_t* x1,
                    const float* w0, const float* w1, const int32_t* perm) {
  __m256 r0, r1;
  if (perm) {
    r0 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(row + x0[ox]),
                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(perm + ox)));
    r1 = _mm256_permutevar8x32_ps(
        _mm256_loadu_ps(row + x1[ox]),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(perm + ow + ox)));
  } else {
    r0 = _mm256_i32gather_ps(row, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x0 + ox)), 4);
    r1 = _mm256_i32gather_ps(row, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x1 + ox)), 4);
  }
  const __m256 acc = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + ox), r0, _mm256_setzero_ps());
  return _mm256_fmadd_ps(_mm256_loadu_ps(w1 + ox), r1, acc);
}
#endif

// The horizontal pass of one row of a one-channel image with two taps (bilinear), 8 outputs
// per step: the same fma chain as the scalar loop (acc = fma(w0, r0, 0); acc = fma(w1, r1, acc)),
// so the same bits. x0/x1/w0/w1: the taps split by position. perm (or nullptr): each block of 8
// outputs reads 8 consecutive source values from its first tap on (x0 - x0[block], then the
// same for x1), so one load and a lane permute replace a gather (slow on AMD: most of a LeNet5
// image's resize). Returns the outputs it wrote.
template <class T>
int64_t horizontal2_c1(const float* row, T* d, int64_t ow, const int32_t* x0, const int32_t* x1,
                       const float* w0, const float* w1, const int32_t* perm) {
#if defined(__AVX2__) && defined(__FMA__)
  int64_t ox = 0;
  const __m256 zero = _mm256_setzero_ps();
  for (; ox + 8 <= ow; ox += 8) {
    const __m256 acc = taps8(row, ow, ox, x0, x1, w0, w1, perm);
    if constexpr (std::is_same_v<T, uint8_t>) {
      // store<uint8_t>: clamp to [0, 255], + 0.5, truncate (no NaN here: finite weights); the
      // packs cannot saturate what is already in [0, 255]
      __m256 v = _mm256_min_ps(_mm256_max_ps(acc, zero), _mm256_set1_ps(255.f));
      __m256i q = _mm256_cvttps_epi32(_mm256_add_ps(v, _mm256_set1_ps(0.5f)));
      __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(d + ox), _mm_packus_epi16(w16, w16));
    } else {
      _mm256_storeu_ps(d + ox, acc);
    }
  }
  return ox;
#else
  (void)perm;
  return 0;
#endif
}

// Vertical pass into a float row, then horizontal pass; K > 0 fixes the tap count at compile time.
// `row` holds iw*c floats, `xoff` the horizontal taps' offsets in elements (tx.idx * c); `h2`,
// for two taps, the taps split by position (x0, x1 offsets then w0, w1 weights, ow each). The
// multiply-adds are explicit fmas, so every path rounds alike.
template <class T, int K>
void resize_separable(const T* src, T* dst, int64_t ih, int64_t iw, int64_t c, int64_t oh,
                      int64_t ow, const Taps& ty, const Taps& tx, float* row, const int32_t* xoff,
                      const int32_t* h2x, const float* h2w, const int32_t* h2p) {
  const int ky = ty.k, kx = K > 0 ? K : tx.k;
  const int64_t n = iw * c;
  for (int64_t oy = 0; oy < oh; ++oy) {
    std::fill(row, row + n, 0.f);
    for (int j = 0; j < ky; ++j) {
      float w = ty.wt[oy * ky + j];
      if (w == 0.f) continue;
      const T* s = src + static_cast<int64_t>(ty.idx[oy * ky + j]) * n;
      for (int64_t i = 0; i < n; ++i) row[i] = std::fma(w, static_cast<float>(s[i]), row[i]);
    }
    T* d = dst + oy * ow * c;
    int64_t ox = 0;
    if constexpr (K == 2)
      if (c == 1) ox = horizontal2_c1<T>(row, d, ow, h2x, h2x + ow, h2w, h2w + ow, h2p);
    for (; ox < ow; ++ox) {
      const int32_t* xo = &xoff[ox * kx];
      const float* xw = &tx.wt[ox * kx];
      for (int64_t ch = 0; ch < c; ++ch) {
        float acc = 0.f;
        for (int j = 0; j < kx; ++j) acc = std::fma(xw[j], row[xo[j] + ch], acc);
        d[ox * c + ch] = store<T>(acc);
      }
    }
  }
}

// One thread's tap tables for the last geometry it resized, and its scratch rows: a pipeline
// resizes every image of a dataset to the same size, so the tables are built once per worker
// instead of once per image (and nothing is allocated per image).
struct ResizeCache {
  int64_t ih = -1, iw = -1, oh = -1, ow = -1, c = -1;
  Interp interp = Interp::nearest;
  Taps ty, tx;
  std::vector<int32_t> xoff, h2x;  // h2x/h2w: two taps split by position (x0..., x1...)
  std::vector<int32_t> h2p;        // horizontal2_c1's lane permutes, or empty (gathers)
  std::vector<float> row, h2w;
};

ResizeCache& cached_taps(const ImageShape& s, int64_t oh, int64_t ow, Interp interp) {
  thread_local ResizeCache cache;
  ResizeCache& r = cache;
  if (r.ih != s.h || r.iw != s.w || r.oh != oh || r.ow != ow || r.c != s.c || r.interp != interp) {
    r.ih = -1;  // stays invalid if a table throws (bad_alloc)
    r.ty = make_taps(s.h, oh, interp);
    r.tx = make_taps(s.w, ow, interp);
    r.xoff.resize(r.tx.idx.size());
    for (size_t i = 0; i < r.xoff.size(); ++i) r.xoff[i] = static_cast<int32_t>(r.tx.idx[i] * s.c);
    // 8 floats of slack: a permuted block loads 8 values from its first tap, which may be
    // among the last of the row
    r.row.assign(static_cast<size_t>(s.w * s.c + 8), 0.f);
    r.h2x.clear(), r.h2w.clear(), r.h2p.clear();
    if (r.tx.k == 2) {
      r.h2x.resize(2 * ow), r.h2w.resize(2 * ow);
      for (int64_t o = 0; o < ow; ++o)
        for (int j = 0; j < 2; ++j) {
          r.h2x[j * ow + o] = r.xoff[2 * o + j];
          r.h2w[j * ow + o] = r.tx.wt[2 * o + j];
        }
      // Permutes where every full block of 8 outputs reads within 8 values of its first tap
      // (taps never decrease along a row): an enlargement, or a mild reduction.
      r.h2p.resize(2 * ow);
      bool fits = true;
      for (int j = 0; j < 2 && fits; ++j)
        for (int64_t b = 0; b + 8 <= ow && fits; b += 8)
          for (int64_t k = 0; k < 8; ++k) {
            const int32_t off = r.h2x[j * ow + b + k] - r.h2x[j * ow + b];
            if (off < 0 || off > 7) fits = false;
            r.h2p[j * ow + b + k] = off;
          }
      if (!fits) r.h2p.clear();
    }
    r.ih = s.h, r.iw = s.w, r.oh = oh, r.ow = ow, r.c = s.c, r.interp = interp;
  }
  return r;
}

}  // namespace

template <class T>
void resize_into(const T* src, const ImageShape& s, int64_t oh, int64_t ow, Interp interp, T* dst) {
  ResizeCache& r = cached_taps(s, oh, ow, interp);
  float* row = r.row.data();
  const int32_t* h2x = r.h2x.data();
  const float* h2w = r.h2w.data();
  const int32_t* h2p = r.h2p.empty() ? nullptr : r.h2p.data();
  if (r.tx.k == 2)
    resize_separable<T, 2>(src, dst, s.h, s.w, s.c, oh, ow, r.ty, r.tx, row, r.xoff.data(), h2x,
                           h2w, h2p);
  else if (r.tx.k == 4)
    resize_separable<T, 4>(src, dst, s.h, s.w, s.c, oh, ow, r.ty, r.tx, row, r.xoff.data(), h2x,
                           h2w, h2p);
  else
    resize_separable<T, 0>(src, dst, s.h, s.w, s.c, oh, ow, r.ty, r.tx, row, r.xoff.data(), h2x,
                           h2w, h2p);
}
template void resize_into<uint8_t>(const uint8_t*, const ImageShape&, int64_t, int64_t, Interp,
                                   uint8_t*);
template void resize_into<float>(const float*, const ImageShape&, int64_t, int64_t, Interp, float*);

namespace {

// The float stages, rescale_value (fma(v, a, b)) or normalize_value ((v - a) * b) in turn; N > 0
// fixes their count at compile time (the harness's chain has two).
template <int N>
inline float steps1(float v, const FloatStep* st, int n) {
  for (int i = 0; i < (N > 0 ? N : n); ++i)
    v = st[i].sub_mul ? normalize_value(v, st[i].a, st[i].b) : rescale_value(v, st[i].a, st[i].b);
  return v;
}

// Per-thread buffers of the one-pass kernel: the image in float, rows padded to a multiple of 8
// (the vertical pass then has no scalar tail), and the vertical pass's output for every output
// row, written in full before the horizontal pass reads it (reading a row just stored, at
// unaligned offsets, stalls on store forwarding).
struct RowPassScratch {
  std::vector<float> img, mid;
};

// The kernel for N stages (N = 0: any count, read at run time).
template <int N>
void row_pass(const uint8_t* src, const ImageShape& s, int64_t oh, int64_t ow, const ResizeCache& r,
              const FloatStep* steps, int nsteps, float* dst) {
  thread_local RowPassScratch sc;
  const int64_t ih = s.h, iw = s.w, stride = (iw + 7) / 8 * 8;
  // + 8: the horizontal pass loads 8 values from a block's first tap, which may be near the end
  if (sc.img.size() < static_cast<size_t>(ih * stride)) sc.img.resize(ih * stride);
  if (sc.mid.size() < static_cast<size_t>(oh * stride + 8)) sc.mid.assign(oh * stride + 8, 0.f);
  float* img = sc.img.data();
  float* mid = sc.mid.data();
  const int32_t* x0 = r.h2x.data();
  const int32_t* x1 = x0 + ow;
  const float* w0 = r.h2w.data();
  const float* w1 = w0 + ow;
  const int32_t* perm = r.h2p.empty() ? nullptr : r.h2p.data();
  // uint8 -> float (exact), zeros in the padding
  for (int64_t y = 0; y < ih; ++y) {
    const uint8_t* sr = src + y * iw;
    float* d = img + y * stride;
    int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
    for (; i + 8 <= iw; i += 8)
      _mm256_storeu_ps(d + i, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
                                  _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sr + i)))));
#endif
    for (; i < iw; ++i) d[i] = static_cast<float>(sr[i]);
    for (; i < stride; ++i) d[i] = 0.f;
  }
  // Vertical pass, as resize_separable's: 0, then fma(w, src, acc) for each tap whose weight is
  // not zero, in tap order (fma(w, v, 0) rounds w * v once, as the fma into the zeroed row does)
  for (int64_t oy = 0; oy < oh; ++oy) {
    const float wa = r.ty.wt[oy * 2], wb = r.ty.wt[oy * 2 + 1];
    const float* ra = img + static_cast<int64_t>(r.ty.idx[oy * 2]) * stride;
    const float* rb = img + static_cast<int64_t>(r.ty.idx[oy * 2 + 1]) * stride;
    float* m = mid + oy * stride;
    int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
    const __m256 va = _mm256_set1_ps(wa), vb = _mm256_set1_ps(wb), zero = _mm256_setzero_ps();
    for (; i < stride; i += 8) {
      __m256 acc = zero;
      if (wa != 0.f) acc = _mm256_fmadd_ps(va, _mm256_loadu_ps(ra + i), acc);
      if (wb != 0.f) acc = _mm256_fmadd_ps(vb, _mm256_loadu_ps(rb + i), acc);
      _mm256_storeu_ps(m + i, acc);
    }
#endif
    for (; i < stride; ++i) {
      float acc = 0.f;
      if (wa != 0.f) acc = std::fma(wa, ra[i], acc);
      if (wb != 0.f) acc = std::fma(wb, rb[i], acc);
      m[i] = acc;
    }
  }
  // Horizontal pass, the uint8 rounding (store<uint8_t>), the conversion back to float and the
  // float stages, without leaving the registers
#if defined(__AVX2__) && defined(__FMA__)
  __m256 sa[N > 0 ? N : 1], sb[N > 0 ? N : 1];
  if constexpr (N > 0)
    for (int i = 0; i < N; ++i)
      sa[i] = _mm256_set1_ps(steps[i].a), sb[i] = _mm256_set1_ps(steps[i].b);
#endif
  for (int64_t oy = 0; oy < oh; ++oy) {
    const float* row = mid + oy * stride;
    float* d = dst + oy * ow;
    int64_t ox = 0;
#if defined(__AVX2__) && defined(__FMA__)
    const __m256 zero = _mm256_setzero_ps();
    for (; ox + 8 <= ow; ox += 8) {
      const __m256 acc = taps8(row, ow, ox, x0, x1, w0, w1, perm);
      __m256 v = _mm256_min_ps(_mm256_max_ps(acc, zero), _mm256_set1_ps(255.f));
      v = _mm256_cvtepi32_ps(_mm256_cvttps_epi32(_mm256_add_ps(v, _mm256_set1_ps(0.5f))));
      for (int i = 0; i < (N > 0 ? N : nsteps); ++i) {
        const __m256 a = N > 0 ? sa[i] : _mm256_set1_ps(steps[i].a);
        const __m256 b = N > 0 ? sb[i] : _mm256_set1_ps(steps[i].b);
        v = steps[i].sub_mul ? _mm256_mul_ps(_mm256_sub_ps(v, a), b) : _mm256_fmadd_ps(v, a, b);
      }
      _mm256_storeu_ps(d + ox, v);
    }
#endif
    for (; ox < ow; ++ox) {
      float acc = std::fma(w0[ox], row[x0[ox]], 0.f);
      acc = std::fma(w1[ox], row[x1[ox]], acc);
      d[ox] = steps1<N>(static_cast<float>(store<uint8_t>(acc)), steps, nsteps);
    }
  }
}

}  // namespace

bool resize_u8c1_float(const uint8_t* src, const ImageShape& s, int64_t oh, int64_t ow,
                       Interp interp, const FloatStep* steps, int nsteps, float* dst) {
  if (s.c != 1) return false;
  const ResizeCache& r = cached_taps(s, oh, ow, interp);
  if (r.tx.k != 2 || r.ty.k != 2) return false;  // bilinear (or AREA enlarging, which is bilinear)
  switch (nsteps) {
    case 1:
      row_pass<1>(src, s, oh, ow, r, steps, nsteps, dst);
      break;
    case 2:
      row_pass<2>(src, s, oh, ow, r, steps, nsteps, dst);
      break;
    default:
      row_pass<0>(src, s, oh, ow, r, steps, nsteps, dst);
  }
  return true;
}

Tensor resize(const Tensor& img, int64_t oh, int64_t ow, Interp interp, const std::string& op) {
  ImageShape s = image_shape(img, op);
  if (oh <= 0 || ow <= 0)
    MYCEL_THROW(ValueError, "[", op, "] output size must be positive, got (", oh, ", ", ow, ")");
  Tensor out = new_image(s, oh, ow, img.dtype());
  if (interp == Interp::nearest) {  // pure index copy: any dtype
    size_t px = s.c * itemsize(img.dtype());
    std::vector<int64_t> xs(ow);
    for (int64_t x = 0; x < ow; ++x)
      xs[x] = std::min<int64_t>(static_cast<int64_t>(std::floor(x * double(s.w) / ow)), s.w - 1);
    const char* src = static_cast<const char*>(img.data());
    char* dst = static_cast<char*>(out.data());
    for (int64_t y = 0; y < oh; ++y) {
      int64_t sy =
          std::min<int64_t>(static_cast<int64_t>(std::floor(y * double(s.h) / oh)), s.h - 1);
      const char* srow = src + sy * s.w * px;
      char* drow = dst + y * ow * px;
      if (px == 1) {
        for (int64_t x = 0; x < ow; ++x) drow[x] = srow[xs[x]];
      } else {
        for (int64_t x = 0; x < ow; ++x) std::memcpy(drow + x * px, srow + xs[x] * px, px);
      }
    }
    return out;
  }
  check_pixel_dtype(img, op);
  if (img.dtype() == DType::uint8)
    resize_into<uint8_t>(img.data<uint8_t>(), s, oh, ow, interp, out.data<uint8_t>());
  else
    resize_into<float>(img.data<float>(), s, oh, ow, interp, out.data<float>());
  return out;
}

namespace {

template <class T>
void warp_typed(const T* src, T* dst, const ImageShape& s, const double m[6], int64_t oh,
                int64_t ow, Interp interp, const std::vector<float>& fill) {
  const int64_t c = s.c, W = s.w, H = s.h;
  // Pixel (x, y) channel ch, or the fill value outside the image (OpenCV's BORDER_CONSTANT).
  auto at = [&](int64_t x, int64_t y, int64_t ch) -> float {
    if (x < 0 || y < 0 || x >= W || y >= H) return fill[ch];
    return static_cast<float>(src[(y * W + x) * c + ch]);
  };
  for (int64_t y = 0; y < oh; ++y) {
    T* d = dst + y * ow * c;
    for (int64_t x = 0; x < ow; ++x) {
      double sx = m[0] * x + m[1] * y + m[2], sy = m[3] * x + m[4] * y + m[5];
      T* p = d + x * c;
      if (interp == Interp::nearest) {
        int64_t ix = static_cast<int64_t>(std::floor(sx + 0.5)),
                iy = static_cast<int64_t>(std::floor(sy + 0.5));
        for (int64_t ch = 0; ch < c; ++ch) p[ch] = store<T>(at(ix, iy, ch));
        continue;
      }
      int64_t x0 = static_cast<int64_t>(std::floor(sx)), y0 = static_cast<int64_t>(std::floor(sy));
      float fx = static_cast<float>(sx - x0), fy = static_cast<float>(sy - y0);
      if (x0 < -2 || y0 < -2 || x0 > W + 1 || y0 > H + 1) {  // all taps outside
        for (int64_t ch = 0; ch < c; ++ch) p[ch] = store<T>(fill[ch]);
        continue;
      }
      if (interp == Interp::cubic) {
        float wx[4], wy[4];
        for (int j = 0; j < 4; ++j) wx[j] = cubic_w(fx, j), wy[j] = cubic_w(fy, j);
        for (int64_t ch = 0; ch < c; ++ch) {
          float acc = 0.f;
          for (int a = 0; a < 4; ++a) {
            float r = 0.f;
            for (int b = 0; b < 4; ++b) r += wx[b] * at(x0 - 1 + b, y0 - 1 + a, ch);
            acc += wy[a] * r;
          }
          p[ch] = store<T>(acc);
        }
        continue;
      }
      for (int64_t ch = 0; ch < c; ++ch) {  // linear (and area, which has no warp form)
        float top = (1 - fx) * at(x0, y0, ch) + fx * at(x0 + 1, y0, ch);
        float bot = (1 - fx) * at(x0, y0 + 1, ch) + fx * at(x0 + 1, y0 + 1, ch);
        p[ch] = store<T>((1 - fy) * top + fy * bot);
      }
    }
  }
}

}  // namespace

Tensor warp_affine(const Tensor& img, const double m[6], int64_t oh, int64_t ow, Interp interp,
                   const std::vector<double>& fill, const std::string& op) {
  ImageShape s = image_shape(img, op);
  check_pixel_dtype(img, op);
  std::vector<double> f = fill_for(fill, s.c, op);
  std::vector<float> ff(f.begin(), f.end());
  Tensor out = new_image(s, oh, ow, img.dtype());
  if (img.dtype() == DType::uint8)
    warp_typed(img.data<uint8_t>(), out.data<uint8_t>(), s, m, oh, ow, interp, ff);
  else
    warp_typed(img.data<float>(), out.data<float>(), s, m, oh, ow, interp, ff);
  return out;
}

Tensor rotate(const Tensor& img, double degrees, Interp interp, bool expand,
              std::optional<std::pair<double, double>> center, const std::vector<double>& fill,
              const std::string& op) {
  ImageShape s = image_shape(img, op);
  double th = degrees * M_PI / 180.0, cs = std::cos(th), sn = std::sin(th);
  // Snap the exact multiples of 90 degrees so that they move pixels without resampling error.
  if (std::abs(cs) < 1e-12) cs = 0;
  if (std::abs(sn) < 1e-12) sn = 0;
  double cx = center ? center->first : (s.w - 1) / 2.0,
         cy = center ? center->second : (s.h - 1) / 2.0;
  int64_t oh = s.h, ow = s.w;
  double ocx = cx, ocy = cy;
  if (expand) {  // bounding box of the rotated image, centered in the output
    ow = static_cast<int64_t>(std::ceil(std::abs(s.w * cs) + std::abs(s.h * sn) - 1e-6));
    oh = static_cast<int64_t>(std::ceil(std::abs(s.w * sn) + std::abs(s.h * cs) - 1e-6));
    ocx = (ow - 1) / 2.0, ocy = (oh - 1) / 2.0;
  }
  // Inverse map: input = center + R(-theta) (output - output center), with y pointing down.
  double m[6] = {cs, -sn, cx - ocx * cs + ocy * sn, sn, cs, cy - ocx * sn - ocy * cs};
  return warp_affine(img, m, oh, ow, interp, fill, op);
}

}  // namespace mycel::data::vision
