// The AVX512-BF16 weight-gradient kernel (kernels/cpu/matmul_bf16_atb.h), c = a^T b over K rows
// with a's column sums, against a double-precision loop over the same bf16 values: odd K (the
// last pair half zero), K across several packed blocks and not a multiple of one, M not a
// multiple of the 12-row tile or of 16, N not a multiple of 32 or 16 (masked columns), N < 16,
// row strides wider than the rows. Skipped where the CPU has no AVX512-BF16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "mycel/core/cpu_features.h"
#include "mycel/kernels/cpu/matmul_bf16_atb.h"

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

void check(int64_t K, int64_t M, int64_t N, int64_t pad_a, int64_t pad_b, bool sums) {
  std::mt19937 rng(static_cast<unsigned>(K * 131 + M * 17 + N));
  std::normal_distribution<float> d;
  const int64_t lda = M + pad_a, ldb = N + pad_b, ldc = N + 3;
  std::vector<uint16_t> a(static_cast<size_t>(K * lda)), b(static_cast<size_t>(K * ldb));
  for (auto& v : a) v = to_bf16(d(rng));
  for (auto& v : b) v = to_bf16(d(rng));
  const float sentinel = 12345.0f;
  std::vector<float> c(static_cast<size_t>(M * ldc), sentinel), s(static_cast<size_t>(M), -1.0f);
  matmul_bf16_atb(a.data(), lda, b.data(), ldb, K, M, N, c.data(), ldc, sums ? s.data() : nullptr);
  for (int64_t m = 0; m < M; ++m) {
    double cs = 0;
    for (int64_t k = 0; k < K; ++k) cs += widen(a[k * lda + m]);
    // float32 accumulation of K products (or terms) of about unit size: a few ulps of sqrt(K).
    const double tol = 2e-6 * K;
    if (sums) {
      ASSERT_NEAR(s[m], cs, tol) << "col sum " << m << " K=" << K << " M=" << M;
    }
    for (int64_t n = 0; n < N; ++n) {
      double ref = 0;
      for (int64_t k = 0; k < K; ++k) ref += widen(a[k * lda + m]) * widen(b[k * ldb + n]);
      ASSERT_NEAR(c[m * ldc + n], ref, tol)
          << "c[" << m << "," << n << "] K=" << K << " M=" << M << " N=" << N;
    }
    for (int64_t n = N; n < ldc; ++n) ASSERT_EQ(c[m * ldc + n], sentinel) << "wrote past N";
  }
}

TEST(MatmulBf16Atb, MatchesDoubleReference) {
  if (!cpu_has_avx512_bf16()) GTEST_SKIP() << "no AVX512-BF16";  // tested on AMX CPUs too
  check(1024, 512, 128, 0, 0, true);  // the transformer's FFN weight gradient's thread share
  check(1024, 128, 512, 0, 0, true);
  check(1, 1, 1, 0, 0, true);
  check(3, 13, 7, 5, 1, true);      // odd K: the last pair's second row is 0
  check(257, 25, 33, 0, 0, false);  // K one past a block; 2 row tiles + 1; 33 columns
  check(771, 97, 48, 16, 8, true);  // K = 3 blocks + 3; N: a 32 panel and a 16 tail
  check(600, 12, 15, 0, 0, true);   // one full tile, N < 16
  check(64, 40, 100, 0, 0, true);   // N: 3 panels and a 4-column tail
}

}  // namespace
}  // namespace mycel::cpu
