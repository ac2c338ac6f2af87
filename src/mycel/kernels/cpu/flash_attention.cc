#include "mycel/kernels/cpu/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "mycel/core/dtype.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/vmath.h"

namespace mycel::cpu {
namespace {

// Products in float32 lane groups of 8 (GCC vector extensions: one AVX2 register at the x86-64-v3
// baseline, which on Zen 4 reaches the FMA rate of AVX-512; plain loops elsewhere).
constexpr int kW = 8;
using V = float __attribute__((vector_size(kW * sizeof(float))));
constexpr int64_t kRows = 32;  // query rows per block: their scores stay in L1/L2
constexpr float kInf = std::numeric_limits<float>::infinity();

inline V vload(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void vstore(float* p, V v) { std::memcpy(p, &v, sizeof v); }
inline int64_t round_up(int64_t n) { return (n + kW - 1) / kW * kW; }

// C (MR x NV*kW) = or += A (MR x K, row stride lda) . B (K x NV*kW, row stride ldb): MR * NV
// accumulators stay in registers over the whole K loop.
template <int MR, int NV>
inline void gemm_tile(int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                      int64_t ldc, bool acc) {
  V c[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) c[r][v] = acc ? vload(C + r * ldc + v * kW) : V{};
  for (int64_t k = 0; k < K; ++k) {
    V b[NV];
    for (int v = 0; v < NV; ++v) b[v] = vload(B + k * ldb + v * kW);
    for (int r = 0; r < MR; ++r) {
      const V a = V{} + A[r * lda + k];
      for (int v = 0; v < NV; ++v) c[r][v] += a * b[v];
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) vstore(C + r * ldc + v * kW, c[r][v]);
}

template <int NV>
void gemm_cols(int64_t M, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
               float* C, int64_t ldc, bool acc) {
  int64_t i = 0;
  for (; i + 4 <= M; i += 4) gemm_tile<4, NV>(K, A + i * lda, lda, B, ldb, C + i * ldc, ldc, acc);
  const float* a = A + i * lda;
  float* c = C + i * ldc;
  switch (M - i) {
    case 3: gemm_tile<3, NV>(K, a, lda, B, ldb, c, ldc, acc); break;
    case 2: gemm_tile<2, NV>(K, a, lda, B, ldb, c, ldc, acc); break;
    case 1: gemm_tile<1, NV>(K, a, lda, B, ldb, c, ldc, acc); break;
    default: break;
  }
}

// C (M x N) = or += A (M x K) . B (K x N), row-major with strides; N a multiple of kW.
void gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool acc) {
  int64_t j = 0;
  for (; j + 2 * kW <= N; j += 2 * kW) gemm_cols<2>(M, K, A, lda, B + j, ldb, C + j, ldc, acc);
  if (j < N) gemm_cols<1>(M, K, A, lda, B + j, ldb, C + j, ldc, acc);
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

// The row's softmax in place (lkp entries, a multiple of kW); returns its logsumexp (+inf for a
// row with every entry masked, whose probabilities are then all 0).
float softmax_row(float* row, int64_t lkp) {
  V mx = V{} - kInf;
  for (int64_t j = 0; j < lkp; j += kW) {
    const V x = vload(row + j);
    mx = x > mx ? x : mx;
  }
  const float m = hmax(mx);
  if (m == -kInf) {
    std::fill(row, row + lkp, 0.0f);
    return kInf;
  }
  for (int64_t j = 0; j < lkp; ++j) row[j] = vm::vm_exp(row[j] - m);
  V acc{};
  for (int64_t j = 0; j < lkp; j += kW) acc += vload(row + j);
  const float sum = hsum(acc), inv = 1.0f / sum;
  for (int64_t j = 0; j < lkp; ++j) row[j] *= inv;
  return m + std::log(sum);
}

// Element offset of (b, h, row 0, 0) and the row stride of a (B, S, N * D) or (B, N, S, D) tensor.
struct HeadView {
  int64_t base, row;
};
HeadView head_view(const FlashGeometry& g, int64_t b, int64_t h, int64_t len) {
  if (g.bsh) return {b * len * g.heads * g.dim + h * g.dim, g.heads * g.dim};
  return {(b * g.heads + h) * len * g.dim, g.dim};
}

const uint8_t* head_mask(const Tensor* mask, const FlashGeometry& g, int64_t b, int64_t h) {
  if (!mask || g.mask_rows == 0) return nullptr;
  return static_cast<const uint8_t*>(mask->data()) + b * g.mask_b + h * g.mask_h;
}

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
        ob(kRows * Dp);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / g.heads, h = bh % g.heads;
      const HeadView hq = head_view(g, b, h, Lq), hk = head_view(g, b, h, Lk);
      load_head(K, hk, Lk, D, true, kt.data(), Lkp);
      load_head(Vv, hk, Lk, D, false, vf.data(), Dp);
      const uint8_t* mb = head_mask(mask, g, b, h);
      for (int64_t i0 = 0; i0 < Lq; i0 += kRows) {
        const int64_t m = std::min(kRows, Lq - i0);
        // S = (scale q) k^T, P = softmax(S) in place, O = P v.
        for (int64_t r = 0; r < m; ++r)
          for (int64_t d = 0; d < D; ++d)
            qb[r * D + d] = g.scale * static_cast<float>(Q[hq.base + (i0 + r) * hq.row + d]);
        gemm(m, Lkp, D, qb.data(), D, kt.data(), Lkp, s.data(), Lkp, false);
        for (int64_t r = 0; r < m; ++r) {
          float* row = s.data() + r * Lkp;
          mask_row(row, Lk, Lkp, mb ? mb + (i0 + r) * g.mask_rows : nullptr);
          L[bh * Lq + i0 + r] = softmax_row(row, Lkp);
        }
        gemm(m, Dp, Lkp, s.data(), Lkp, vf.data(), Dp, ob.data(), Dp, false);
        store_rows(ob.data(), Dp, 1.0f, m, D, O, hq, i0);
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
        dvf(Lkp * Dp), qb(kRows * Dp, 0.0f), dob(kRows * Dp, 0.0f), p(kRows * Lkp),
        ds(kRows * Lkp), pt(Lkp * kRows), dst(Lkp * kRows), dqb(kRows * Dp), di(kRows);
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
          float dot = 0;
          for (int64_t d = 0; d < D; ++d) {
            qb[r * Dp + d] = g.scale * static_cast<float>(Q[at + d]);
            const float go = static_cast<float>(dO[at + d]);
            dob[r * Dp + d] = go;
            dot += go * static_cast<float>(O[at + d]);
          }
          // D_i = rowsum(dO * O), less lse's own sensitivity (d lse / d S = P).
          di[r] = dot - dL[bh * Lq + i0 + r];
        }
        // P = exp(S - lse) recomputed; dP = dO v^T; dS = P (dP - D_i).
        gemm(m, Lkp, D, qb.data(), Dp, kt.data(), Lkp, p.data(), Lkp, false);
        gemm(m, Lkp, D, dob.data(), Dp, vt.data(), Lkp, ds.data(), Lkp, false);
        for (int64_t r = 0; r < m; ++r) {
          float* row = p.data() + r * Lkp;
          float* drow = ds.data() + r * Lkp;
          mask_row(row, Lk, Lkp, mb ? mb + (i0 + r) * g.mask_rows : nullptr);
          const float l = L[bh * Lq + i0 + r], dr = di[r];
          for (int64_t j = 0; j < Lkp; ++j) row[j] = vm::vm_exp(row[j] - l);
          for (int64_t j = 0; j < Lkp; ++j) drow[j] = row[j] * (drow[j] - dr);
        }
        // dQ = scale dS k; dV += P^T dO; dK += dS^T (scale q).
        gemm(m, Dp, Lkp, ds.data(), Lkp, kf.data(), Dp, dqb.data(), Dp, false);
        store_rows(dqb.data(), Dp, g.scale, m, D, dQ, hq, i0);
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < Lkp; ++j) {
            pt[j * kRows + r] = p[r * Lkp + j];
            dst[j * kRows + r] = ds[r * Lkp + j];
          }
        gemm(Lkp, Dp, m, pt.data(), kRows, dob.data(), Dp, dvf.data(), Dp, true);
        gemm(Lkp, Dp, m, dst.data(), kRows, qb.data(), Dp, dkf.data(), Dp, true);
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
    else
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
    else
      backward_t<T>(q, k, v, out, dout, lse, dlse, mask, g, dq, dk, dv);
  });
}

}  // namespace mycel::cpu
