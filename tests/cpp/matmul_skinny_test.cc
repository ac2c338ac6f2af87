// The skinny float32 matmul loops (kernels/cpu/matmul_skinny.h) against a double-precision
// triple loop, on both loop forms, odd sizes (column tails, odd row counts), with and without a
// bias, at one and two threads; and which geometries they take (run under the sanitizers).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/matmul_skinny.h"

namespace mycel::cpu {
namespace {

Tensor randn(Shape s, std::mt19937& rng) {
  Tensor t = Tensor::empty(s, DType::float32);
  std::normal_distribution<float> d;
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

MatmulGeom geom(int64_t m, int64_t k, int64_t n, bool ta, bool tb) {
  MatmulGeom g;
  g.m = m;
  g.k = k;
  g.n = n;
  g.trans_a = ta;
  g.trans_b = tb;
  g.out_shape = {m, n};
  return g;
}

void check(int64_t m, int64_t k, int64_t n, bool ta, bool tb, bool with_bias) {
  std::mt19937 rng(static_cast<unsigned>(m * 131 + k * 17 + n));
  const Tensor a = randn(ta ? Shape{k, m} : Shape{m, k}, rng);
  const Tensor b = randn(tb ? Shape{n, k} : Shape{k, n}, rng);
  const Tensor bias = randn({n}, rng);
  const MatmulGeom g = geom(m, k, n, ta, tb);
  ASSERT_TRUE(matmul_skinny_fits(g)) << m << "x" << k << "x" << n;
  Tensor c = Tensor::empty({m, n}, DType::float32);
  matmul_skinny(a, b, with_bias ? &bias : nullptr, c, g);
  const float *pa = a.data<float>(), *pb = b.data<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = with_bias ? bias.data<float>()[j] : 0.0;
      for (int64_t p = 0; p < k; ++p)
        s += double(ta ? pa[p * m + i] : pa[i * k + p]) * (tb ? pb[j * k + p] : pb[p * n + j]);
      EXPECT_NEAR(c.data<float>()[i * n + j], s, 1e-5 * std::sqrt(double(k)) + 1e-5 * std::abs(s))
          << m << "x" << k << "x" << n << " at " << i << "," << j;
    }
}

TEST(MatmulSkinny, RowsOfBAndDotsEqualADoubleLoop) {
  const int before = num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (bool bias : {false, true}) {
      check(10, 128, 512, true, false, bias);   // dW through 10 classes
      check(128, 10, 512, false, false, bias);  // dx through 10 classes
      check(128, 512, 10, false, true, bias);   // the 10-output dense layer
      check(7, 33, 95, false, false, bias);     // odd rows, a column tail
      check(129, 3, 33, true, false, bias);
      check(16, 1, 31, false, false, bias);
      check(1, 1, 1, false, false, bias);
      check(3, 17, 16, false, true, bias);
      check(40, 70, 1, false, true, bias);
    }
  }
  set_num_threads(before);
}

TEST(MatmulSkinny, LeavesOtherGeometriesToOneDnn) {
  EXPECT_FALSE(matmul_skinny_fits(geom(17, 17, 17, false, false)));
  EXPECT_FALSE(matmul_skinny_fits(geom(10, 128, 512, true, true)));    // b transposed, N large
  EXPECT_FALSE(matmul_skinny_fits(geom(8, 2048, 1024, true, false)));  // over 8M multiply-adds
  MatmulGeom batched = geom(10, 128, 512, false, false);
  batched.batch = {2};
  EXPECT_FALSE(matmul_skinny_fits(batched));
  EXPECT_TRUE(matmul_skinny_fits(geom(16, 300, 17, false, false)));
}

}  // namespace
}  // namespace mycel::cpu
