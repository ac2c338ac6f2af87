// Flash attention on bfloat16 inputs with AVX512-BF16: every product by vdpbf16ps (16 float32
// lanes, each adding two bf16 products: twice the rate of float32 FMA on Zen 4), operands packed
// as bf16 pairs along the product's inner dimension, sums and the softmax in float32. The
// probabilities and dS are rounded to bf16 for their products, as the composed bf16 attention
// stores them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "mycel/core/cpu_features.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/flash_attention_impl.h"

#if defined(__x86_64__)
#include <immintrin.h>  // here, at the baseline: each intrinsic carries its own target
#endif

#if MYCEL_AVX512_KERNELS
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
#include "mycel/kernels/cpu/avx512_math.h"  // inside the target region, as they ask
#include "mycel/kernels/cpu/bf16_lanes512.h"

namespace mycel::cpu::flash {
namespace {

constexpr __mmask16 kAll = 0xFFFF;
constexpr float kInf = std::numeric_limits<float>::infinity();

inline int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

inline uint32_t pair_at(const uint16_t* p) {  // two bf16 as one 32-bit lane
  uint32_t u;
  std::memcpy(&u, p, sizeof u);
  return u;
}
inline uint32_t make_pair(uint16_t lo, uint16_t hi) { return lo | (uint32_t(hi) << 16); }
inline uint16_t to_bf16(float f) {  // nearest even, as vcvtneps2bf16
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float from_bf16(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// C (MR x 16 NV) = or += A . B over KK pairs: A's pair (r, kk) at A + r * lda + kk * ldk (bf16
// units: ldk 2 for bf16 rows, lda 2 for rows of pairs), B's pairs (kk, 16 NV columns) at
// B + kk * ldb (32-bit units).
template <int MR, int NV>
inline void dp_tile(int64_t KK, const uint16_t* A, int64_t lda, int64_t ldk, const uint32_t* B,
                    int64_t ldb, float* C, int64_t ldc, bool acc) {
  __m512 c[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v)
      c[r][v] = acc ? _mm512_loadu_ps(C + r * ldc + v * 16) : _mm512_setzero_ps();
  for (int64_t kk = 0; kk < KK; ++kk) {
    __m512i b[NV];
    for (int v = 0; v < NV; ++v) b[v] = _mm512_loadu_si512(B + kk * ldb + v * 16);
    for (int r = 0; r < MR; ++r) {
      const __m512i a = _mm512_set1_epi32(static_cast<int>(pair_at(A + r * lda + kk * ldk)));
      for (int v = 0; v < NV; ++v) c[r][v] = _mm512_dpbf16_ps(c[r][v], (__m512bh)a, (__m512bh)b[v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(C + r * ldc + v * 16, c[r][v]);
}

template <int NV>
void dp_cols(int64_t M, int64_t KK, const uint16_t* A, int64_t lda, int64_t ldk, const uint32_t* B,
             int64_t ldb, float* C, int64_t ldc, bool acc) {
  int64_t i = 0;
  for (; i + 4 <= M; i += 4)
    dp_tile<4, NV>(KK, A + i * lda, lda, ldk, B, ldb, C + i * ldc, ldc, acc);
  const uint16_t* a = A + i * lda;
  float* c = C + i * ldc;
  switch (M - i) {
    case 3:
      dp_tile<3, NV>(KK, a, lda, ldk, B, ldb, c, ldc, acc);
      break;
    case 2:
      dp_tile<2, NV>(KK, a, lda, ldk, B, ldb, c, ldc, acc);
      break;
    case 1:
      dp_tile<1, NV>(KK, a, lda, ldk, B, ldb, c, ldc, acc);
      break;
    default:
      break;
  }
}

// C (M x N) = or += A (M x KK pairs) . B (KK pair rows x N); N a multiple of 16. A as bf16 rows
// (row stride lda, ldk 2) or as rows of pairs (lda 2, ldk the pair row's length in bf16).
void dp_gemm(int64_t M, int64_t N, int64_t KK, const uint16_t* A, int64_t lda, int64_t ldk,
             const uint32_t* B, int64_t ldb, float* C, int64_t ldc, bool acc) {
  int64_t j = 0;
  for (; j + 32 <= N; j += 32) dp_cols<2>(M, KK, A, lda, ldk, B + j, ldb, C + j, ldc, acc);
  if (j < N) dp_cols<1>(M, KK, A, lda, ldk, B + j, ldb, C + j, ldc, acc);
}

// exp(x) for x <= 0 (-inf and x < -87.3 give 0): Cephes' expf polynomial, 2^n by scalef.
inline __m512 exp16(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.3f);
  const __mmask16 keep = _mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ);
  x = _mm512_maskz_max_ps(kAll, x, lo);
  const __m512 n =
      _mm512_maskz_roundscale_ps(kAll, _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 y = _mm512_set1_ps(1.9875691500e-4f);
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_maskz_scalef_ps(keep, y, n);
}

inline __m512i widen16(__m256i bf16) { return _mm512_maskz_cvtepu16_epi32(kAll, bf16); }
inline void store_bf16x16(uint16_t* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), (__m256i)_mm512_cvtneps_pbh(v));
}
// Two rows' 16 values as 16 pairs (row a, row b): the operand of a product over rows.
inline __m512i pairs16(__m512 a, __m512 b) {
  const __m512i lo = widen16((__m256i)_mm512_cvtneps_pbh(a));
  const __m512i hi = widen16((__m256i)_mm512_cvtneps_pbh(b));
  return _mm512_or_si512(lo, _mm512_maskz_slli_epi32(kAll, hi, 16));
}

// The lanes j .. j + 15 of a score row that take part: below lk and not masked out.
inline __mmask16 live_lanes(int64_t j, int64_t lk, const uint8_t* mask) {
  const __mmask16 valid =
      j + 16 <= lk ? kAll : static_cast<__mmask16>(lk > j ? (1u << (lk - j)) - 1 : 0);
  if (!mask) return valid;
  const __m128i m = _mm_maskz_loadu_epi8(valid, mask + j);
  return valid & ~_mm_cmpneq_epi8_mask(m, _mm_setzero_si128());
}
// scale * row[j .. j + 15], -inf in the lanes that take no part.
inline __m512 scaled_scores(const float* row, int64_t j, __m512 scale, int64_t lk,
                            const uint8_t* mask) {
  return _mm512_mask_mul_ps(_mm512_set1_ps(-kInf), live_lanes(j, lk, mask),
                            _mm512_loadu_ps(row + j), scale);
}

// dst[0 .. n) = bf16(src * scale).
inline void store_row_bf16(uint16_t* dst, const float* src, int64_t n, float scale) {
  const __m512 sc = _mm512_set1_ps(scale);
  int64_t d = 0;
  for (; d + 16 <= n; d += 16) store_bf16x16(dst + d, _mm512_mul_ps(_mm512_loadu_ps(src + d), sc));
  for (; d < n; ++d) dst[d] = to_bf16(src[d] * scale);
}

// sum(a * b) over n bf16 values.
float dot_bf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t d = 0;
  for (; d + 16 <= n; d += 16)
    acc = _mm512_fmadd_ps(bf16_lanes512::widen16(a + d), bf16_lanes512::widen16(b + d), acc);
  float s = avx512::hsum(acc);
  for (; d < n; ++d) s += from_bf16(a[d]) * from_bf16(b[d]);
  return s;
}

// Per (batch, head): k (or v) as pairs along D, (D/2) x lk16 (for q k^T and dO v^T), and as
// pairs of rows, (lk16/2) x d16 (for P v and dS k). Padding stays 0 from the allocation.
void pack_along_d(const uint16_t* x, HeadView hv, int64_t lk, int64_t D, int64_t lk16,
                  uint32_t* dst) {
  for (int64_t j = 0; j < lk; ++j)
    for (int64_t dd = 0; dd < D / 2; ++dd)
      dst[dd * lk16 + j] = pair_at(x + hv.base + j * hv.row + 2 * dd);
}
void pack_row_pairs(const uint16_t* x, HeadView hv, int64_t lk, int64_t D, int64_t d16,
                    uint32_t* dst) {
  for (int64_t j = 0; j < lk; j += 2) {
    const uint16_t* a = x + hv.base + j * hv.row;
    const uint16_t* b = j + 1 < lk ? a + hv.row : nullptr;
    for (int64_t d = 0; d < D; ++d) dst[(j / 2) * d16 + d] = make_pair(a[d], b ? b[d] : 0);
  }
}

void forward(const uint16_t* Q, const uint16_t* K, const uint16_t* Vv, const Tensor* mask,
             const FlashGeometry& g, uint16_t* O, float* L) {
  const int64_t D = g.dim, Lq = g.lq, Lk = g.lk, lk16 = round16(Lk), d16 = round16(D);
  parallel_for(g.batch * g.heads, Lq * Lk * D, [&](int64_t begin, int64_t end) {
    std::vector<uint32_t> kq(D / 2 * lk16, 0), vp((lk16 / 2) * d16, 0);
    std::vector<float> s(kRows * lk16), ob(kRows * d16), inv(kRows);
    std::vector<uint16_t> pb(kRows * lk16);
    const __m512 sc = _mm512_set1_ps(g.scale);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / g.heads, h = bh % g.heads;
      const HeadView hq = head_view(g, b, h, Lq), hk = head_view(g, b, h, Lk);
      pack_along_d(K, hk, Lk, D, lk16, kq.data());
      pack_row_pairs(Vv, hk, Lk, D, d16, vp.data());
      const uint8_t* mb = head_mask(mask, g, b, h);
      for (int64_t i0 = 0; i0 < Lq; i0 += kRows) {
        const int64_t m = std::min(kRows, Lq - i0);
        // S = q k^T straight from q's rows; exp(scale S - max) rounded to bf16; O = that . v.
        dp_gemm(m, lk16, D / 2, Q + hq.base + i0 * hq.row, hq.row, 2, kq.data(), lk16, s.data(),
                lk16, false);
        for (int64_t r = 0; r < m; ++r) {
          float* row = s.data() + r * lk16;
          const uint8_t* mrow = mb ? mb + (i0 + r) * g.mask_rows : nullptr;
          __m512 mx = _mm512_set1_ps(-kInf);
          for (int64_t j = 0; j < lk16; j += 16) {
            const __m512 x = scaled_scores(row, j, sc, Lk, mrow);
            _mm512_storeu_ps(row + j, x);
            mx = _mm512_maskz_max_ps(kAll, mx, x);
          }
          const float mval = avx512::hmax(mx);
          float* lse = L + bh * Lq + i0 + r;
          if (mval == -kInf) {  // every key masked: 0
            std::fill(pb.begin() + r * lk16, pb.begin() + (r + 1) * lk16, uint16_t(0));
            inv[r] = 0.0f;
            *lse = kInf;
            continue;
          }
          const __m512 mv = _mm512_set1_ps(mval);
          __m512 sum = _mm512_setzero_ps();
          for (int64_t j = 0; j < lk16; j += 16) {
            const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + j), mv));
            sum = _mm512_add_ps(sum, e);
            store_bf16x16(pb.data() + r * lk16 + j, e);
          }
          const float total = avx512::hsum(sum);
          inv[r] = 1.0f / total;
          *lse = mval + std::log(total);
        }
        dp_gemm(m, d16, lk16 / 2, pb.data(), lk16, 2, vp.data(), d16, ob.data(), d16, false);
        for (int64_t r = 0; r < m; ++r)
          store_row_bf16(O + hq.base + (i0 + r) * hq.row, ob.data() + r * d16, D, inv[r]);
      }
    }
  });
}

void backward(const uint16_t* Q, const uint16_t* K, const uint16_t* Vv, const uint16_t* O,
              const uint16_t* dO, const float* L, const float* dL, const Tensor* mask,
              const FlashGeometry& g, uint16_t* dQ, uint16_t* dK, uint16_t* dV) {
  const int64_t D = g.dim, Lq = g.lq, Lk = g.lk, lk16 = round16(Lk), d16 = round16(D);
  const int64_t half = kRows / 2;
  parallel_for(g.batch * g.heads, 3 * Lq * Lk * D, [&](int64_t begin, int64_t end) {
    // One thread owns a (batch, head): dk and dv accumulate over its row blocks without races.
    std::vector<uint32_t> kq(D / 2 * lk16, 0), vq(D / 2 * lk16, 0), kp((lk16 / 2) * d16, 0),
        pi(half * lk16), dsi(half * lk16);
    std::vector<uint32_t> qp(half * d16, 0), dop(half * d16, 0);
    std::vector<uint16_t> dsb(kRows * lk16);
    std::vector<float> p(kRows * lk16), ds(kRows * lk16), dqb(kRows * d16), dkf(lk16 * d16),
        dvf(lk16 * d16), di(kRows);
    const __m512 sc = _mm512_set1_ps(g.scale);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / g.heads, h = bh % g.heads;
      const HeadView hq = head_view(g, b, h, Lq), hk = head_view(g, b, h, Lk);
      pack_along_d(K, hk, Lk, D, lk16, kq.data());
      pack_along_d(Vv, hk, Lk, D, lk16, vq.data());
      pack_row_pairs(K, hk, Lk, D, d16, kp.data());
      std::fill(dkf.begin(), dkf.end(), 0.0f);
      std::fill(dvf.begin(), dvf.end(), 0.0f);
      const uint8_t* mb = head_mask(mask, g, b, h);
      for (int64_t i0 = 0; i0 < Lq; i0 += kRows) {
        const int64_t m = std::min(kRows, Lq - i0), m2 = (m + 1) / 2;
        const uint16_t* qrows = Q + hq.base + i0 * hq.row;
        const uint16_t* dorows = dO + hq.base + i0 * hq.row;
        // q's and dO's rows in pairs (a zero row past m): the left operands of sums over rows.
        pack_row_pairs(Q, {hq.base + i0 * hq.row, hq.row}, m, D, d16, qp.data());
        pack_row_pairs(dO, {hq.base + i0 * hq.row, hq.row}, m, D, d16, dop.data());
        for (int64_t r = 0; r < m; ++r) {  // D_i = rowsum(dO * O) - dlse_i
          const uint16_t* o = O + hq.base + (i0 + r) * hq.row;
          di[r] = dot_bf16(dorows + r * hq.row, o, D) - dL[bh * Lq + i0 + r];
        }
        // S = q k^T, dP = dO v^T; P = exp(scale S - lse), dS = P (dP - D_i).
        dp_gemm(m, lk16, D / 2, qrows, hq.row, 2, kq.data(), lk16, p.data(), lk16, false);
        dp_gemm(m, lk16, D / 2, dorows, hq.row, 2, vq.data(), lk16, ds.data(), lk16, false);
        for (int64_t r = 0; r < m; ++r) {
          float* row = p.data() + r * lk16;
          float* drow = ds.data() + r * lk16;
          const uint8_t* mrow = mb ? mb + (i0 + r) * g.mask_rows : nullptr;
          const __m512 l = _mm512_set1_ps(L[bh * Lq + i0 + r]), dr = _mm512_set1_ps(di[r]);
          for (int64_t j = 0; j < lk16; j += 16) {
            // scale S - lse <= 0 up to rounding; a fully masked row (lse +inf) gives 0.
            const __m512 x = _mm512_maskz_min_ps(
                kAll, _mm512_sub_ps(scaled_scores(row, j, sc, Lk, mrow), l), _mm512_setzero_ps());
            const __m512 e = exp16(x);
            const __m512 dsv = _mm512_mul_ps(e, _mm512_sub_ps(_mm512_loadu_ps(drow + j), dr));
            _mm512_storeu_ps(row + j, e);
            _mm512_storeu_ps(drow + j, dsv);
            store_bf16x16(dsb.data() + r * lk16 + j, dsv);
          }
        }
        if (m % 2) {  // the odd row's partner: zeros
          std::fill(p.begin() + m * lk16, p.begin() + (m + 1) * lk16, 0.0f);
          std::fill(ds.begin() + m * lk16, ds.begin() + (m + 1) * lk16, 0.0f);
        }
        for (int64_t rr = 0; rr < m2; ++rr)
          for (int64_t j = 0; j < lk16; j += 16) {
            const float* a = p.data() + 2 * rr * lk16 + j;
            const float* c = ds.data() + 2 * rr * lk16 + j;
            _mm512_storeu_si512(pi.data() + rr * lk16 + j,
                                pairs16(_mm512_loadu_ps(a), _mm512_loadu_ps(a + lk16)));
            _mm512_storeu_si512(dsi.data() + rr * lk16 + j,
                                pairs16(_mm512_loadu_ps(c), _mm512_loadu_ps(c + lk16)));
          }
        // dQ = scale dS k; dV += P^T dO; dK += dS^T q (scaled when stored).
        dp_gemm(m, d16, lk16 / 2, dsb.data(), lk16, 2, kp.data(), d16, dqb.data(), d16, false);
        for (int64_t r = 0; r < m; ++r)
          store_row_bf16(dQ + hq.base + (i0 + r) * hq.row, dqb.data() + r * d16, D, g.scale);
        // P and dS as rows of pairs over the block's rows: the left operands, key by key.
        const auto* pir = reinterpret_cast<const uint16_t*>(pi.data());
        const auto* dsir = reinterpret_cast<const uint16_t*>(dsi.data());
        dp_gemm(Lk, d16, m2, pir, 2, 2 * lk16, dop.data(), d16, dvf.data(), d16, true);
        dp_gemm(Lk, d16, m2, dsir, 2, 2 * lk16, qp.data(), d16, dkf.data(), d16, true);
      }
      for (int64_t j = 0; j < Lk; ++j) {
        store_row_bf16(dK + hk.base + j * hk.row, dkf.data() + j * d16, D, g.scale);
        store_row_bf16(dV + hk.base + j * hk.row, dvf.data() + j * d16, D, 1.0f);
      }
    }
  });
}

}  // namespace
}  // namespace mycel::cpu::flash
#pragma GCC pop_options
#endif  // MYCEL_AVX512_KERNELS

namespace mycel::cpu::flash {

#if MYCEL_AVX512_KERNELS
namespace {
bool bf16_usable(const FlashGeometry& g) { return cpu_has_avx512_bf16() && g.dim % 2 == 0; }
const uint16_t* bits(const Tensor& t) { return static_cast<const uint16_t*>(t.data()); }
uint16_t* bits(Tensor& t) { return static_cast<uint16_t*>(t.data()); }
}  // namespace

bool bf16_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                  const FlashGeometry& g, Tensor& out, Tensor& lse) {
  if (!bf16_usable(g)) return false;
  forward(bits(q), bits(k), bits(v), mask, g, bits(out), lse.data<float>());
  return true;
}

bool bf16_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                   const Tensor& dout, const Tensor& lse, const Tensor& dlse, const Tensor* mask,
                   const FlashGeometry& g, Tensor& dq, Tensor& dk, Tensor& dv) {
  if (!bf16_usable(g)) return false;
  backward(bits(q), bits(k), bits(v), bits(out), bits(dout), lse.data<float>(), dlse.data<float>(),
           mask, g, bits(dq), bits(dk), bits(dv));
  return true;
}

#else
bool bf16_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor*, const FlashGeometry&,
                  Tensor&, Tensor&) {
  return false;
}
bool bf16_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                   const Tensor&, const Tensor&, const Tensor*, const FlashGeometry&, Tensor&,
                   Tensor&, Tensor&) {
  return false;
}
#endif

}  // namespace mycel::cpu::flash
