// The per-head AVX512-BF16 kernel (kernels/cpu/matmul_heads_bf16.h), c = a @ b over strided
// (A, C, rows, cols) views, against a double-precision loop over the same bf16 values: a with
// contiguous rows (P, dS) or contiguous columns (P^T, dS^T; packed), b and c plain, head-split
// (rows heads * d apart) or padded; odd K (rows read straight: the tail pair), M not a multiple
// of the 12-row tile or of 16, N not a multiple of 32 or 16 (masked columns), 1, 2 and 3 threads.
// Elements of c's buffer outside the view keep their sentinel. Skipped without AVX512-BF16.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "mycel/core/cpu_features.h"
#include "mycel/core/parallel.h"
#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/matmul_heads_bf16.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {
namespace {

uint16_t to_bf16(float x) {  // nearest even; the test's values are finite
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
double widen(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

enum class Layout { kPlain, kSplit, kPadded, kTransposed, kSplitTransposed };

// An (A, C, R, S) view and the size of its buffer: plain (A, C, R, S); split: the buffer
// (A, R, C, S) of a head split; padded: rows of S + 5; transposed: the (A, C, S, R) buffer (or its
// split) read as (A, C, R, S).
struct View {
  StridedView v;
  int64_t size = 0;
};
View make(Layout l, int64_t A, int64_t C, int64_t R, int64_t S) {
  View o;
  switch (l) {
    case Layout::kPlain:
      o.v = {{A, C, R, S}, {C * R * S, R * S, S, 1}};
      break;
    case Layout::kSplit:
      o.v = {{A, C, R, S}, {R * C * S, S, C * S, 1}};
      break;
    case Layout::kPadded:
      o.v = {{A, C, R, S}, {C * R * (S + 5), R * (S + 5), S + 5, 1}};
      o.size = A * C * R * (S + 5);
      return o;
    case Layout::kTransposed:
      o.v = {{A, C, R, S}, {C * R * S, R * S, 1, R}};
      break;
    case Layout::kSplitTransposed:
      o.v = {{A, C, R, S}, {R * C * S, R, 1, C * R}};
      break;
  }
  o.size = A * C * R * S;
  return o;
}

int64_t at(const StridedView& v, int64_t i, int64_t j, int64_t r, int64_t s) {
  return i * v.strides[0] + j * v.strides[1] + r * v.strides[2] + s * v.strides[3];
}

void check(int64_t A, int64_t C, int64_t M, int64_t K, int64_t N, Layout la, Layout lb, Layout lc,
           int threads) {
  std::mt19937 rng(static_cast<unsigned>(M * 131 + K * 17 + N + static_cast<int>(la) * 7));
  std::normal_distribution<float> d;
  const View a = make(la, A, C, M, K), b = make(lb, A, C, K, N), c = make(lc, A, C, M, N);
  StridedMatmul s{a.v, b.v, c.v};
  ASSERT_TRUE(matmul_heads_bf16_fits(s, true));
  std::vector<uint16_t> av(static_cast<size_t>(a.size)), bv(static_cast<size_t>(b.size));
  for (auto& x : av) x = to_bf16(d(rng));
  for (auto& x : bv) x = to_bf16(d(rng));
  const uint16_t sentinel = to_bf16(12345.0f);
  std::vector<uint16_t> cv(static_cast<size_t>(c.size), sentinel);
  const int before = num_threads();
  set_num_threads(threads);
  matmul_heads_bf16(av.data(), bv.data(), cv.data(), s);
  set_num_threads(before);
  std::vector<char> seen(cv.size(), 0);
  for (int64_t i = 0; i < A; ++i)
    for (int64_t j = 0; j < C; ++j)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double ref = 0;
          for (int64_t k = 0; k < K; ++k)
            ref += widen(av[at(a.v, i, j, m, k)]) * widen(bv[at(b.v, i, j, k, n)]);
          const int64_t o = at(c.v, i, j, m, n);
          seen[o] = 1;
          // One bf16 rounding of a float32 sum of K unit-sized products.
          const double tol = std::ldexp(std::abs(ref), -8) + 2e-6 * K;
          ASSERT_NEAR(widen(cv[o]), ref, tol) << "c[" << i << "," << j << "," << m << "," << n
                                              << "] M=" << M << " K=" << K << " N=" << N;
        }
  for (size_t o = 0; o < cv.size(); ++o)
    if (!seen[o]) {
      ASSERT_EQ(cv[o], sentinel) << "wrote outside the view at " << o;
    }
}

TEST(MatmulHeadsBf16, MatchesDoubleReference) {
  if (!cpu_has_avx512_bf16()) GTEST_SKIP() << "no AVX512-BF16";  // tested on AMX CPUs too
  for (int t : {1, 2, 3}) {
    // The transformer's products: P.V and dS.K (a's rows), P^T.dO and dS^T.Q (a's columns).
    check(2, 4, 128, 128, 32, Layout::kPlain, Layout::kSplit, Layout::kSplit, t);
    check(2, 4, 128, 128, 32, Layout::kTransposed, Layout::kSplit, Layout::kSplit, t);
    // Odd sizes: K odd (the tail pair), M past the tiles, N masked, N > 32 (two panels).
    check(3, 2, 37, 29, 19, Layout::kPlain, Layout::kSplit, Layout::kSplit, t);
    check(3, 2, 37, 29, 19, Layout::kTransposed, Layout::kPlain, Layout::kPadded, t);
    check(1, 3, 13, 7, 45, Layout::kSplit, Layout::kPadded, Layout::kPlain, t);
    check(1, 3, 25, 33, 70, Layout::kSplitTransposed, Layout::kSplit, Layout::kSplit, t);
    // b's columns contiguous (q k^T, dO V^T: packed by scatter), K past 32 (two loads a row),
    // odd K, N past a panel and masked.
    check(2, 4, 128, 32, 128, Layout::kSplit, Layout::kSplitTransposed, Layout::kPlain, t);
    check(3, 2, 37, 29, 19, Layout::kPlain, Layout::kTransposed, Layout::kPlain, t);
    check(1, 3, 25, 45, 70, Layout::kTransposed, Layout::kSplitTransposed, Layout::kPadded, t);
  }
  check(2, 2, 5, 1, 9, Layout::kPlain, Layout::kTransposed, Layout::kPlain, 2);  // K = 1
  // Degenerate dims: K = 1 (only the tail), M = 1, N = 1.
  check(2, 2, 5, 1, 9, Layout::kPlain, Layout::kPlain, Layout::kPlain, 2);
  check(2, 2, 1, 9, 5, Layout::kTransposed, Layout::kSplit, Layout::kPlain, 2);
  check(2, 2, 11, 6, 1, Layout::kSplit, Layout::kPlain, Layout::kSplit, 2);
}

TEST(MatmulHeadsBf16, FitsOnlyRowContiguousC) {
  const View a = make(Layout::kPlain, 2, 2, 8, 8), bt = make(Layout::kTransposed, 2, 2, 8, 8);
  EXPECT_TRUE(matmul_heads_bf16_fits({a.v, a.v, a.v}));
  EXPECT_FALSE(matmul_heads_bf16_fits({a.v, bt.v, a.v}));       // q k^T, dO V^T: oneDNN's launches
  EXPECT_TRUE(matmul_heads_bf16_fits({a.v, bt.v, a.v}, true));  // attention_heads_grad's dP
  setenv("MYCEL_MATMUL_HEADS_BF16_BT", "1", 1);                 // or on request (A/B)
  EXPECT_TRUE(matmul_heads_bf16_fits({a.v, bt.v, a.v}));
  unsetenv("MYCEL_MATMUL_HEADS_BF16_BT");
  EXPECT_FALSE(matmul_heads_bf16_fits({a.v, a.v, bt.v}));
  const View big = make(Layout::kPlain, 1, 1, 257, 64);  // M past 256: oneDNN's
  EXPECT_FALSE(matmul_heads_bf16_fits(
      {big.v, make(Layout::kPlain, 1, 1, 64, 8).v, make(Layout::kPlain, 1, 1, 257, 8).v}));
  const View edge = make(Layout::kPlain, 1, 1, 256, 256);
  EXPECT_TRUE(matmul_heads_bf16_fits({edge.v, edge.v, edge.v}));
}

// The per-launch time of the transformer's products (64 heads of 128x128 @ 128x32, b and c
// head-split): minima over 300 calls, 1 and 2 threads, a read straight (P.V, dS.K) and transposed
// (P^T.dO, dS^T.Q), a's 2 MiB in cache (L3) or from memory (24 copies in turn); this kernel and
// oneDNN's primitive (matmul_strided with MYCEL_MATMUL_HEADS_BF16=0) alternating call by call.
// Run with --gtest_also_run_disabled_tests --gtest_filter='*HeadsBf16*Bench'.
TEST(MatmulHeadsBf16, DISABLED_Bench) {
  if (!cpu_has_avx512_bf16()) GTEST_SKIP() << "no AVX512-BF16";  // tested on AMX CPUs too
  const int before = num_threads();
  for (int copies : {1, 24}) {
    for (Layout la : {Layout::kPlain, Layout::kTransposed}) {
      const View a = make(la, 16, 4, 128, 128), b = make(Layout::kSplit, 16, 4, 128, 32),
                 c = make(Layout::kSplit, 16, 4, 128, 32);
      std::vector<Tensor> as;
      for (int i = 0; i < copies; ++i) {
        as.push_back(Tensor::empty(Shape{a.size}, DType::bfloat16));
        std::fill_n(static_cast<uint16_t*>(as.back().data()), a.size, uint16_t{0x3f80});
      }
      Tensor bt = Tensor::empty(Shape{b.size}, DType::bfloat16),
             ct = Tensor::empty(Shape{c.size}, DType::bfloat16);
      std::fill_n(static_cast<uint16_t*>(bt.data()), b.size, uint16_t{0x3f80});
      const StridedMatmul s{a.v, b.v, c.v};
      for (int t : {1, 2}) {
        set_num_threads(t);
        std::unique_ptr<KernelPrepared> slot[2];
        double best[2] = {1e9, 1e9};
        for (int i = 0; i < 600; ++i) {
          const int own = i % 2;
          setenv("MYCEL_MATMUL_HEADS_BF16", own ? "1" : "0", 1);  // read when first prepared
          const auto t0 = std::chrono::steady_clock::now();
          matmul_strided(as[static_cast<size_t>(i % copies)], bt, ct, s, &slot[own]);
          best[own] = std::min(best[own], std::chrono::duration<double, std::micro>(
                                              std::chrono::steady_clock::now() - t0)
                                              .count());
        }
        unsetenv("MYCEL_MATMUL_HEADS_BF16");
        for (int own : {0, 1})
          std::printf("a %s, %s, %d threads, %s: min %.1f us (%.0f GFLOP/s)\n",
                      la == Layout::kPlain ? "rows" : "transposed",
                      copies == 1 ? "in cache" : "from memory", t, own ? "own" : "oneDNN",
                      best[own], 2.0 * 64 * 128 * 128 * 32 / best[own] / 1e3);
      }
    }
  }
  // q k^T and dO V^T: b (d x L) the transpose of a head-split (L x d), c plain (the scores).
  for (int t : {1, 2}) {
    set_num_threads(t);
    const View a = make(Layout::kSplit, 16, 4, 128, 32),
               b = make(Layout::kSplitTransposed, 16, 4, 32, 128),
               c = make(Layout::kPlain, 16, 4, 128, 128);
    Tensor at = Tensor::empty(Shape{a.size}, DType::bfloat16),
           bt = Tensor::empty(Shape{b.size}, DType::bfloat16),
           ct = Tensor::empty(Shape{c.size}, DType::bfloat16);
    std::fill_n(static_cast<uint16_t*>(at.data()), a.size, uint16_t{0x3f80});
    std::fill_n(static_cast<uint16_t*>(bt.data()), b.size, uint16_t{0x3f80});
    const StridedMatmul s{a.v, b.v, c.v};
    std::unique_ptr<KernelPrepared> slot[2];
    double best[2] = {1e9, 1e9};
    for (int i = 0; i < 600; ++i) {
      const int own = i % 2;
      setenv("MYCEL_MATMUL_HEADS_BF16_BT", own ? "1" : "0", 1);
      const auto t0 = std::chrono::steady_clock::now();
      matmul_strided(at, bt, ct, s, &slot[own]);
      best[own] = std::min(
          best[own],
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    unsetenv("MYCEL_MATMUL_HEADS_BF16_BT");
    for (int own : {0, 1})
      std::printf("b transposed (q k^T), %d threads, %s: min %.1f us (%.0f GFLOP/s)\n", t,
                  own ? "own" : "oneDNN", best[own], 2.0 * 64 * 128 * 128 * 32 / best[own] / 1e3);
  }
  set_num_threads(before);
}

}  // namespace
}  // namespace mycel::cpu
