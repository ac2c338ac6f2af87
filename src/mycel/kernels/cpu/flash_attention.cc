#include "mycel/kernels/cpu/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "mycel/core/dtype.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/flash_attention_impl.h"

namespace mycel::cpu {
namespace {

// Products in float32 lane groups of 8 (GCC vector extensions: one AVX2 register at the x86-64-v3
// baseline, which on Zen 4 reaches the FMA rate of AVX-512; plain loops elsewhere).
constexpr int kW = 8;
using V = float __attribute__((vector_size(kW * sizeof(float))));
constexpr float kInf = std::numeric_limits<float>::infinity();

inline V vload(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void vstore(float* p, V v) { std::memcpy(p, &v, sizeof v); }
inline int64_t round_up(int64_t n) { return (n + kW - 1) / kW * kW; }

// C (MR x NV*kW) = or += A (MR x K) . B (K x NV*kW, row stride ldb): MR * NV accumulators stay in
// registers over the whole K loop. A's element (r, k) is A[r * lda + k], or A[k * lda + r] with TA
// (A stored transposed: P^T dO and dS^T q read P and dS as they are).
template <int MR, int NV, bool TA>
inline void gemm_tile(int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                      int64_t ldc, bool acc) {
  V c[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) c[r][v] = acc ? vload(C + r * ldc + v * kW) : V{};
  for (int64_t k = 0; k < K; ++k) {
    V b[NV];
    for (int v = 0; v < NV; ++v) b[v] = vload(B + k * ldb + v * kW);
    for (int r = 0; r < MR; ++r) {
      const V a = V{} + (TA ? A[k * lda + r] : A[r * lda + k]);
      for (int v = 0; v < NV; ++v) c[r][v] += a * b[v];
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) vstore(C + r * ldc + v * kW, c[r][v]);
}

template <int NV, bool TA>
void gemm_cols(int64_t M, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
               float* C, int64_t ldc, bool acc) {
  const int64_t step = TA ? 1 : lda;  // from row i of A to row i + 1
  int64_t i = 0;
  for (; i + 4 <= M; i += 4)
    gemm_tile<4, NV, TA>(K, A + i * step, lda, B, ldb, C + i * ldc, ldc, acc);
  const float* a = A + i * step;
  float* c = C + i * ldc;
  switch (M - i) {
    case 3:
      gemm_tile<3, NV, TA>(K, a, lda, B, ldb, c, ldc, acc);
      break;
    case 2:
      gemm_tile<2, NV, TA>(K, a, lda, B, ldb, c, ldc, acc);
      break;
    case 1:
      gemm_tile<1, NV, TA>(K, a, lda, B, ldb, c, ldc, acc);
      break;
    default:
      break;
  }
}

// C (M x N) = or += A (M x K) . B (K x N), row-major with strides (A given transposed, K x M,
// with TA); N a multiple of kW.
template <bool TA = false>
void gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
          float* C, int64_t ldc, bool acc) {
  int64_t j = 0;
  for (; j + 2 * kW <= N; j += 2 * kW) gemm_cols<2, TA>(M, K, A, lda, B + j, ldb, C + j, ldc, acc);
  if (j < N) gemm_cols<1, TA>(M, K, A, lda, B + j, ldb, C + j, ldc, acc);
}

inline float hmax(V v) {
  float m = v[0];
  for (int i = 1; i < kW; ++i) m = std::max(m, v[i]);
  return m;
}
inline float hsum(V v) {
  float s = 0;
  for (int i = 0; i < kW; ++i) s += v[i];
  return s;
}

// -inf where the mask row says masked out (nonzero) and in the padding past lk.
void mask_row(float* row, int64_t lk, int64_t lkp, const uint8_t* mask) {
  if (mask)
    for (int64_t j = 0; j < lk; ++j) row[j] = mask[j] ? -kInf : row[j];
  for (int64_t j = lk; j < lkp; ++j) row[j] = -kInf;
}

// exp(x) for x <= 0 in lanes (-inf and x < -87.3 give 0, as the probabilities of masked keys
// must be): 2^n by the exponent bits, Cephes' expf polynomial on the remainder (about 2 ulp;
// vm_exp's subnormal care costs 4x here, where such a probability only feeds sums).
using VI = int32_t __attribute__((vector_size(kW * sizeof(float))));
inline V exp_nonpositive(V x) {
  const V lo = V{} - 87.3f;
  const auto under = x < lo;
  x = under ? lo : x;
  const V magic = V{} + 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const V n = (x * 1.44269504088896341f + magic) - magic;
  V r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  V y = V{} + 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * (r * r) + (r + 1.0f);
  const VI bits = (__builtin_convertvector(n, VI) + 127) << 23;
  y = y * (V)bits;  // a bit cast between vector types of one size
  return under ? V{} : y;
}

// The row's unnormalized softmax exp(x - max) in place (lkp entries, a multiple of kW); returns
// 1 / its sum and sets lse to its logsumexp (a row with every entry masked: all 0, lse +inf).
float softmax_row(float* row, int64_t lkp, float& lse) {
  V mx = V{} - kInf;
  for (int64_t j = 0; j < lkp; j += kW) {
    const V x = vload(row + j);
    mx = x > mx ? x : mx;
  }
  const float m = hmax(mx);
  if (m == -kInf) {
    std::fill(row, row + lkp, 0.0f);
    lse = kInf;
    return 0.0f;
  }
  V acc{};
  for (int64_t j = 0; j < lkp; j += kW) {
    const V e = exp_nonpositive(vload(row + j) - m);
    vstore(row + j, e);
    acc += e;
  }
  const float sum = hsum(acc);
  lse = m + std::log(sum);
  return 1.0f / sum;
}

using flash::head_mask;
using flash::head_view;
using flash::HeadView;
using flash::kRows;

// x's head rows (len x D) into dst, transposed (D x ld) or not (len x ld), as float32.
template <class T>
void load_head(const T* x, HeadView hv, int64_t len, int64_t D, bool transpose, float* dst,
               int64_t ld) {
  for (int64_t j = 0; j < len; ++j) {
    const T* src = x + hv.base + j * hv.row;
    if (transpose)
      for (int64_t d = 0; d < D; ++d) dst[d * ld + j] = static_cast<float>(src[d]);
    else
      for (int64_t d = 0; d < D; ++d) dst[j * ld + d] = static_cast<float>(src[d]);
  }
}

template <class T>
void store_rows(const float* src, int64_t ld, float scale, int64_t rows, int64_t D, T* x,
                HeadView hv, int64_t first) {
  for (int64_t r = 0; r < rows; ++r) {
    T* dst = x + hv.base + (first + r) * hv.row;
    for (int64_t d = 0; d < D; ++d) dst[d] = static_cast<T>(src[r * ld + d] * scale);
  }
}

template <class T>
void forward_t(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
               const FlashGeometry& g, Tensor& out, Tensor& lse) {
  const T *Q = q.data<T>(), *K = k.data<T>(), *Vv = v.data<T>();
  T* O = out.data<T>();
  float* L = lse.data<float>();
  const int64_t D = g.dim, Lq = g.lq, Lk = g.lk, Lkp = round_up(Lk), Dp = round_up(D);
  parallel_for(g.batch * g.heads, Lq * Lk * D, [&](int64_t begin, int64_t end) {
    // Padding columns of kt and rows/columns of vf are never written: they stay 0.
    std::vector<float> kt(D * Lkp, 0.0f), vf(Lkp * Dp, 0.0f), qb(kRows * D), s(kRows * Lkp),
        ob(kRows * Dp), inv(kRows);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / g.heads, h = bh % g.heads;
      const HeadView hq = head_view(g, b, h, Lq), hk = head_view(g, b, h, Lk);
      load_head(K, hk, Lk, D, true, kt.data(), Lkp);
      load_head(Vv, hk, Lk, D, false, vf.data(), Dp);
      const uint8_t* mb = head_mask(mask, g, b, h);
      for (int64_t i0 = 0; i0 < Lq; i0 += kRows) {
        const int64_t m = std::min(kRows, Lq - i0);
        // S = (scale q) k^T, then its softmax's numerators in place.
        for (int64_t r = 0; r < m; ++r)
          for (int64_t d = 0; d < D; ++d)
            qb[r * D + d] = g.scale * static_cast<float>(Q[hq.base + (i0 + r) * hq.row + d]);
        gemm(m, Lkp, D, qb.data(), D, kt.data(), Lkp, s.data(), Lkp, false);
        for (int64_t r = 0; r < m; ++r) {
          float* row = s.data() + r * Lkp;
          mask_row(row, Lk, Lkp, mb ? mb + (i0 + r) * g.mask_rows : nullptr);
          inv[r] = softmax_row(row, Lkp, L[bh * Lq + i0 + r]);
        }
        // O = exp(S - max) v, each row divided by its sum once (D values, not L_k).
        gemm(m, Dp, Lkp, s.data(), Lkp, vf.data(), Dp, ob.data(), Dp, false);
        for (int64_t r = 0; r < m; ++r)
          for (int64_t d = 0; d < D; ++d)
            O[hq.base + (i0 + r) * hq.row + d] = static_cast<T>(ob[r * Dp + d] * inv[r]);
      }
    }
  });
}

template <class T>
void backward_t(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                const Tensor& dout, const Tensor& lse, const Tensor& dlse, const Tensor* mask,
                const FlashGeometry& g, Tensor& dq, Tensor& dk, Tensor& dv) {
  const T *Q = q.data<T>(), *K = k.data<T>(), *Vv = v.data<T>(), *O = out.data<T>(),
          *dO = dout.data<T>();
  const float *L = lse.data<float>(), *dL = dlse.data<float>();
  T *dQ = dq.data<T>(), *dK = dk.data<T>(), *dV = dv.data<T>();
  const int64_t D = g.dim, Lq = g.lq, Lk = g.lk, Lkp = round_up(Lk), Dp = round_up(D);
  parallel_for(g.batch * g.heads, 3 * Lq * Lk * D, [&](int64_t begin, int64_t end) {
    // One thread owns a (batch, head): dk and dv accumulate over its row blocks without races.
    std::vector<float> kt(D * Lkp, 0.0f), vt(D * Lkp, 0.0f), kf(Lkp * Dp, 0.0f), dkf(Lkp * Dp),
        dvf(Lkp * Dp), qb(kRows * Dp, 0.0f), dob(kRows * Dp, 0.0f), p(kRows * Lkp), ds(kRows * Lkp),
        ofb(Dp), dqb(kRows * Dp), di(kRows);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / g.heads, h = bh % g.heads;
      const HeadView hq = head_view(g, b, h, Lq), hk = head_view(g, b, h, Lk);
      load_head(K, hk, Lk, D, true, kt.data(), Lkp);
      load_head(Vv, hk, Lk, D, true, vt.data(), Lkp);
      load_head(K, hk, Lk, D, false, kf.data(), Dp);
      std::fill(dkf.begin(), dkf.end(), 0.0f);
      std::fill(dvf.begin(), dvf.end(), 0.0f);
      const uint8_t* mb = head_mask(mask, g, b, h);
      for (int64_t i0 = 0; i0 < Lq; i0 += kRows) {
        const int64_t m = std::min(kRows, Lq - i0);
        for (int64_t r = 0; r < m; ++r) {
          const int64_t at = hq.base + (i0 + r) * hq.row;
          float* go = dob.data() + r * Dp;
          for (int64_t d = 0; d < D; ++d) {
            qb[r * Dp + d] = g.scale * static_cast<float>(Q[at + d]);
            go[d] = static_cast<float>(dO[at + d]);
            ofb[d] = static_cast<float>(O[at + d]);
          }
          // D_i = rowsum(dO * O), less lse's own sensitivity (d lse / d S = P); padding is 0.
          V dot{};
          for (int64_t d = 0; d < Dp; d += kW) dot += vload(go + d) * vload(ofb.data() + d);
          di[r] = hsum(dot) - dL[bh * Lq + i0 + r];
        }
        // P = exp(S - lse) recomputed; dP = dO v^T; dS = P (dP - D_i).
        gemm(m, Lkp, D, qb.data(), Dp, kt.data(), Lkp, p.data(), Lkp, false);
        gemm(m, Lkp, D, dob.data(), Dp, vt.data(), Lkp, ds.data(), Lkp, false);
        for (int64_t r = 0; r < m; ++r) {
          float* row = p.data() + r * Lkp;
          float* drow = ds.data() + r * Lkp;
          mask_row(row, Lk, Lkp, mb ? mb + (i0 + r) * g.mask_rows : nullptr);
          const float l = L[bh * Lq + i0 + r], dr = di[r];
          for (int64_t j = 0; j < Lkp; j += kW) {
            // S - lse <= 0 up to rounding; +inf lse (a fully masked row) gives 0.
            V x = vload(row + j) - l;
            x = x > V{} ? V{} : x;
            const V e = exp_nonpositive(x);
            vstore(row + j, e);
            vstore(drow + j, e * (vload(drow + j) - dr));
          }
        }
        // dQ = scale dS k; dV += P^T dO; dK += dS^T (scale q).
        gemm(m, Dp, Lkp, ds.data(), Lkp, kf.data(), Dp, dqb.data(), Dp, false);
        store_rows(dqb.data(), Dp, g.scale, m, D, dQ, hq, i0);
        gemm<true>(Lkp, Dp, m, p.data(), Lkp, dob.data(), Dp, dvf.data(), Dp, true);
        gemm<true>(Lkp, Dp, m, ds.data(), Lkp, qb.data(), Dp, dkf.data(), Dp, true);
      }
      store_rows(dkf.data(), Dp, 1.0f, Lk, D, dK, hk, 0);
      store_rows(dvf.data(), Dp, 1.0f, Lk, D, dV, hk, 0);
    }
  });
}

}  // namespace

void flash_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                             const FlashGeometry& g, Tensor& out, Tensor& lse) {
  visit_float_dtype(q.dtype(), "flash_attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>)
      MYCEL_THROW(TypeError, "[flash_attention] float64 is not supported");
    else if (!std::is_same_v<T, BFloat16> || !flash::bf16_forward(q, k, v, mask, g, out, lse))
      forward_t<T>(q, k, v, mask, g, out, lse);
  });
}

void flash_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                              const Tensor& dout, const Tensor& lse, const Tensor& dlse,
                              const Tensor* mask, const FlashGeometry& g, Tensor& dq, Tensor& dk,
                              Tensor& dv) {
  visit_float_dtype(q.dtype(), "flash_attention_grad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>)
      MYCEL_THROW(TypeError, "[flash_attention_grad] float64 is not supported");
    else if (!std::is_same_v<T, BFloat16> ||
             !flash::bf16_backward(q, k, v, out, dout, lse, dlse, mask, g, dq, dk, dv))
      backward_t<T>(q, k, v, out, dout, lse, dlse, mask, g, dq, dk, dv);
  });
}

}  // namespace mycel::cpu
