// Two loop forms, both reading memory along contiguous rows:
// - rows of b along N (b not transposed): each output row block of 32 columns accumulates
//   sum_k A(i, k) * B(k, j..j+32) in four registers; threads split the columns (M small: a
//   weight gradient dy^T x with 10 rows) or the rows (K small: dx = dy W through 10 classes).
// - b transposed with N small (a dense layer's 10 outputs): each output is a dot product of two
//   contiguous rows of length K; threads split the rows of a.
#include "mycel/kernels/cpu/matmul_skinny.h"

#include <immintrin.h>

#include <algorithm>

#include "mycel/core/parallel.h"

namespace mycel::cpu {
namespace {

constexpr int64_t kSkinny = 16;  // the dimension that makes a matmul skinny
constexpr int64_t kBlock = 32;   // output columns per register block (four 8-float vectors)
// Larger products (multiply-adds) stay with oneDNN: these loops do not pack their operands, so
// a long reduction re-reads b's column blocks from L2 or memory for every pair of rows.
constexpr int64_t kMaxWork = int64_t(1) << 23;

bool has_batch(const MatmulGeom& g) {
  return !g.batch.empty() || !g.a_batch.empty() || !g.b_batch.empty();
}

// C(i, j0..j0+w) = bias + sum_k A(i, k) B(k, j0..j0+w) for w <= kBlock; A(i, k) at
// a[i * sai + k * sak], B row k at b + k * ldb.
inline void row_block(const float* a, int64_t sai, int64_t sak, const float* b, int64_t ldb,
                      const float* bias, float* c, int64_t i, int64_t j0, int64_t w, int64_t K) {
  const float* ai = a + i * sai;
  if (w == kBlock) {
    __m256 acc0 = bias ? _mm256_loadu_ps(bias + j0) : _mm256_setzero_ps();
    __m256 acc1 = bias ? _mm256_loadu_ps(bias + j0 + 8) : _mm256_setzero_ps();
    __m256 acc2 = bias ? _mm256_loadu_ps(bias + j0 + 16) : _mm256_setzero_ps();
    __m256 acc3 = bias ? _mm256_loadu_ps(bias + j0 + 24) : _mm256_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
      const __m256 s = _mm256_set1_ps(ai[k * sak]);
      const float* bk = b + k * ldb + j0;
      acc0 = _mm256_fmadd_ps(s, _mm256_loadu_ps(bk), acc0);
      acc1 = _mm256_fmadd_ps(s, _mm256_loadu_ps(bk + 8), acc1);
      acc2 = _mm256_fmadd_ps(s, _mm256_loadu_ps(bk + 16), acc2);
      acc3 = _mm256_fmadd_ps(s, _mm256_loadu_ps(bk + 24), acc3);
    }
    _mm256_storeu_ps(c + j0, acc0);
    _mm256_storeu_ps(c + j0 + 8, acc1);
    _mm256_storeu_ps(c + j0 + 16, acc2);
    _mm256_storeu_ps(c + j0 + 24, acc3);
    return;
  }
  float acc[kBlock];
  for (int64_t j = 0; j < w; ++j) acc[j] = bias ? bias[j0 + j] : 0.f;
  for (int64_t k = 0; k < K; ++k) {
    const float s = ai[k * sak];
    const float* bk = b + k * ldb + j0;
    for (int64_t j = 0; j < w; ++j) acc[j] += s * bk[j];
  }
  std::copy(acc, acc + w, c + j0);
}

// Two rows i, i + 1 of a full block at once: each load of b feeds two FMAs, and eight
// independent accumulators cover the FMA latency.
inline void row_pair_block(const float* a, int64_t sai, int64_t sak, const float* b, int64_t ldb,
                           const float* bias, float* c, int64_t ldc, int64_t i, int64_t j0,
                           int64_t K) {
  const float* a0 = a + i * sai;
  const float* a1 = a0 + sai;
  __m256 x[4], y[4];
  for (int q = 0; q < 4; ++q)
    x[q] = y[q] = bias ? _mm256_loadu_ps(bias + j0 + 8 * q) : _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m256 s0 = _mm256_set1_ps(a0[k * sak]), s1 = _mm256_set1_ps(a1[k * sak]);
    const float* bk = b + k * ldb + j0;
    for (int q = 0; q < 4; ++q) {
      const __m256 v = _mm256_loadu_ps(bk + 8 * q);
      x[q] = _mm256_fmadd_ps(s0, v, x[q]);
      y[q] = _mm256_fmadd_ps(s1, v, y[q]);
    }
  }
  for (int q = 0; q < 4; ++q) {
    _mm256_storeu_ps(c + i * ldc + j0 + 8 * q, x[q]);
    _mm256_storeu_ps(c + (i + 1) * ldc + j0 + 8 * q, y[q]);
  }
}

// Rows i .. i + R - 1 (R <= 5) of a 16-column block: ten accumulators at most, so a weight
// gradient through 10 classes reads its K rows of b twice (rows 0-4, 5-9), not five times as
// row pairs of 32 columns do; b's rows (2 KiB apart for N = 512) share a few L1 sets and come
// from L2 on every pass. Each output sums k in order from the bias, as row_block does.
template <int R>
inline void rows_block16(const float* a, int64_t sai, int64_t sak, const float* b, int64_t ldb,
                         const float* bias, float* c, int64_t ldc, int64_t i, int64_t j0,
                         int64_t K) {
  __m256 x[R], y[R];
  for (int r = 0; r < R; ++r) {
    x[r] = bias ? _mm256_loadu_ps(bias + j0) : _mm256_setzero_ps();
    y[r] = bias ? _mm256_loadu_ps(bias + j0 + 8) : _mm256_setzero_ps();
  }
  const float* ai = a + i * sai;
  for (int64_t k = 0; k < K; ++k) {
    const float* bk = b + k * ldb + j0;
    const __m256 v0 = _mm256_loadu_ps(bk), v1 = _mm256_loadu_ps(bk + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 s = _mm256_set1_ps(ai[r * sai + k * sak]);
      x[r] = _mm256_fmadd_ps(s, v0, x[r]);
      y[r] = _mm256_fmadd_ps(s, v1, y[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(c + (i + r) * ldc + j0, x[r]);
    _mm256_storeu_ps(c + (i + r) * ldc + j0 + 8, y[r]);
  }
}

// Rows [0, M) of columns [j0, j1) (M <= 16) by rows_block16, the last columns (under 16) by
// row_block.
void few_rows(const float* a, int64_t sai, int64_t sak, const float* b, const float* bias, float* c,
              int64_t M, int64_t K, int64_t N, int64_t j0, int64_t j1) {
  int64_t j = j0;
  for (; j + 16 <= j1; j += 16) {
    int64_t i = 0;
    for (; i + 5 <= M; i += 5) rows_block16<5>(a, sai, sak, b, N, bias, c, N, i, j, K);
    switch (M - i) {
      case 4:
        rows_block16<4>(a, sai, sak, b, N, bias, c, N, i, j, K);
        break;
      case 3:
        rows_block16<3>(a, sai, sak, b, N, bias, c, N, i, j, K);
        break;
      case 2:
        rows_block16<2>(a, sai, sak, b, N, bias, c, N, i, j, K);
        break;
      case 1:
        rows_block16<1>(a, sai, sak, b, N, bias, c, N, i, j, K);
        break;
      default:
        break;
    }
  }
  if (j < j1)
    for (int64_t i = 0; i < M; ++i) row_block(a, sai, sak, b, N, bias, c + i * N, i, j, j1 - j, K);
}

void rows_of_b(const float* a, const float* b, const float* bias, float* c, const MatmulGeom& g) {
  const int64_t M = g.m, K = g.k, N = g.n;
  const int64_t sai = g.trans_a ? 1 : K, sak = g.trans_a ? M : 1;
  const int64_t blocks = (N + kBlock - 1) / kBlock;
  auto run = [&](int64_t i0, int64_t i1, int64_t b0, int64_t b1) {
    for (int64_t jb = b0; jb < b1; ++jb) {
      const int64_t j0 = jb * kBlock, w = std::min(kBlock, N - j0);
      int64_t i = i0;
      if (w == kBlock)
        for (; i + 2 <= i1; i += 2) row_pair_block(a, sai, sak, b, N, bias, c, N, i, j0, K);
      for (; i < i1; ++i) row_block(a, sai, sak, b, N, bias, c + i * N, i, j0, w, K);
    }
  };
  if (M <= kSkinny) {  // few rows: the threads split the column blocks
    parallel_for(blocks, M * K * kBlock, [&](int64_t b0, int64_t b1) {
      few_rows(a, sai, sak, b, bias, c, M, K, N, b0 * kBlock, std::min(N, b1 * kBlock));
    });
    return;
  }
  // Short reduction (dx through 10 classes): b is a few rows and stays in L1, so each pair of
  // output rows is written whole, block after block. Block by block over all the rows instead,
  // the 128-byte pieces of rows 2 KiB apart (N = 512) fell into a few L1 sets and were evicted
  // before the next block completed their lines: 128 x 10 x 512 took 21 us in the MLP step, on
  // one thread as on two.
  parallel_for(M, K * N, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
    for (; i + 2 <= i1; i += 2) {
      int64_t jb = 0;
      for (; (jb + 1) * kBlock <= N; ++jb)
        row_pair_block(a, sai, sak, b, N, bias, c, N, i, jb * kBlock, K);
      if (jb * kBlock < N) run(i, i + 2, jb, blocks);
    }
    if (i < i1) run(i, i1, 0, blocks);
  });
}

inline float dot(const float* x, const float* y, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(y + k), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 8), _mm256_loadu_ps(y + k + 8), s1);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(s0, s1));
  float s = 0.f;
  for (float v : lanes) s += v;
  for (; k < n; ++k) s += x[k] * y[k];
  return s;
}

// dot()'s lanes summed in dot()'s order, then its scalar tail.
inline float finish(__m256 s0, __m256 s1, const float* x, const float* y, int64_t k, int64_t n) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(s0, s1));
  float s = 0.f;
  for (float v : lanes) s += v;
  for (; k < n; ++k) s += x[k] * y[k];
  return s;
}

// The four dot products of rows x0, x1 with rows y0, y1, each summed as dot() sums it (the same
// bits): a single dot's two accumulators are a chain of dependent FMAs, at a quarter of the FMA
// rate; four at once keep eight independent chains in flight, and each load feeds two FMAs.
inline void dots_2x2(const float* x0, const float* x1, const float* y0, const float* y1, int64_t n,
                     float* c00, float* c01, float* c10, float* c11) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0, d0 = a0, d1 = a0, e0 = a0, e1 = a0;
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m256 p0 = _mm256_loadu_ps(x0 + k), p1 = _mm256_loadu_ps(x0 + k + 8);
    const __m256 q0 = _mm256_loadu_ps(x1 + k), q1 = _mm256_loadu_ps(x1 + k + 8);
    const __m256 u0 = _mm256_loadu_ps(y0 + k), u1 = _mm256_loadu_ps(y0 + k + 8);
    const __m256 v0 = _mm256_loadu_ps(y1 + k), v1 = _mm256_loadu_ps(y1 + k + 8);
    a0 = _mm256_fmadd_ps(p0, u0, a0);
    a1 = _mm256_fmadd_ps(p1, u1, a1);
    b0 = _mm256_fmadd_ps(p0, v0, b0);
    b1 = _mm256_fmadd_ps(p1, v1, b1);
    d0 = _mm256_fmadd_ps(q0, u0, d0);
    d1 = _mm256_fmadd_ps(q1, u1, d1);
    e0 = _mm256_fmadd_ps(q0, v0, e0);
    e1 = _mm256_fmadd_ps(q1, v1, e1);
  }
  *c00 = finish(a0, a1, x0, y0, k, n);
  *c01 = finish(b0, b1, x0, y1, k, n);
  *c10 = finish(d0, d1, x1, y0, k, n);
  *c11 = finish(e0, e1, x1, y1, k, n);
}

void dots(const float* a, const float* b, const float* bias, float* c, const MatmulGeom& g) {
  const int64_t K = g.k, N = g.n;
  parallel_for(g.m, K * N, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
    for (; i + 2 <= i1; i += 2) {
      const float* x0 = a + i * K;
      float* r0 = c + i * N;
      int64_t j = 0;
      for (; j + 2 <= N; j += 2)
        dots_2x2(x0, x0 + K, b + j * K, b + (j + 1) * K, K, r0 + j, r0 + j + 1, r0 + N + j,
                 r0 + N + j + 1);
      for (; j < N; ++j) {
        r0[j] = dot(x0, b + j * K, K);
        r0[N + j] = dot(x0 + K, b + j * K, K);
      }
      if (bias)
        for (j = 0; j < N; ++j) r0[j] += bias[j], r0[N + j] += bias[j];
    }
    for (; i < i1; ++i)
      for (int64_t j = 0; j < N; ++j)
        c[i * N + j] = dot(a + i * K, b + j * K, K) + (bias ? bias[j] : 0.f);
  });
}

}  // namespace

bool matmul_skinny_fits(const MatmulGeom& g) {
  if (has_batch(g) || g.m <= 0 || g.n <= 0 || g.k <= 0) return false;
  if (std::min({g.m, g.n, g.k}) > kSkinny || g.m * g.n * g.k > kMaxWork) return false;
  if (!g.trans_b) return g.m <= kSkinny || g.k <= kSkinny;  // rows_of_b
  return !g.trans_a && g.n <= kSkinny;                      // dots
}

void matmul_skinny(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                   const MatmulGeom& g) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  const float* pbias = bias ? bias->data<float>() : nullptr;
  float* pc = c.data<float>();
  if (!g.trans_b)
    rows_of_b(pa, pb, pbias, pc, g);
  else
    dots(pa, pb, pbias, pc, g);
}

}  // namespace mycel::cpu
