// The direct 2x2 max pooling and its gradient (kernels/cpu/pool_direct.cc: AVX-512 where the CPU
// has it, the plain vectorized loops elsewhere) against nn_ref's
// loops, bit for bit: odd sizes, rows shorter and longer than one 32-column step, windows with
// ties (including -0 and +0) and NaNs, and inputs too small for any window.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "mycel/kernels/cpu/nn_grad_ref.h"
#include "mycel/kernels/cpu/nn_ref.h"
#include "mycel/kernels/cpu/pool_direct.h"

namespace mycel {
namespace {

using cpu::WindowGeom;

WindowGeom pool_geom(int64_t n, int64_t c, int64_t h, int64_t w) {
  WindowGeom g;
  g.n = n, g.c = c, g.oc = c, g.h = h, g.w = w, g.kh = g.kw = 2, g.sh = g.sw = 2;
  g.oh = h / 2, g.ow = w / 2;
  return g;
}

// Small integers (many ties), some -0/+0 and a few NaNs: the cases where "which maximum" matters.
Tensor tricky(Shape s, unsigned seed) {
  Tensor t = Tensor::empty(s, DType::float32);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const unsigned r = rng() % 100;
    float v = static_cast<float>(static_cast<int>(rng() % 5) - 2);
    if (r < 10) v = 0.f;
    if (r >= 10 && r < 20) v = -0.f;
    if (r >= 20 && r < 23) v = std::numeric_limits<float>::quiet_NaN();
    t.data<float>()[i] = v;
  }
  return t;
}

void expect_same_bits(const Tensor& a, const Tensor& b, const char* what) {
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t i = 0; i < a.numel(); ++i) {
    uint32_t x, y;
    std::memcpy(&x, a.data<float>() + i, 4);
    std::memcpy(&y, b.data<float>() + i, 4);
    ASSERT_EQ(x, y) << what << " element " << i << ": " << a.data<float>()[i] << " vs "
                    << b.data<float>()[i];
  }
}

TEST(PoolDirect, MaxPoolAndGradientEqualTheReferenceLoopsBitForBit) {
  const WindowGeom cases[] = {pool_geom(2, 3, 28, 28), pool_geom(1, 2, 7, 9),
                              pool_geom(3, 1, 10, 70), pool_geom(1, 1, 2, 2),
                              pool_geom(1, 4, 5, 33),  pool_geom(2, 1, 1, 6),
                              pool_geom(3, 5, 10, 10), pool_geom(2, 3, 15, 15)};
  for (const WindowGeom& g : cases) {
    SCOPED_TRACE(std::to_string(g.h) + "x" + std::to_string(g.w));
    ASSERT_TRUE(cpu::max_pool_2x2_fits(DType::float32, g));
    const Tensor x = tricky({g.n, g.c, g.h, g.w}, 11);
    Tensor got = Tensor::empty({g.n, g.c, g.oh, g.ow}, DType::float32);
    Tensor want = Tensor::empty({g.n, g.c, g.oh, g.ow}, DType::float32);
    cpu::max_pool_2x2(x, got, g);
    cpu::max_pool2d_ref<float>(x, want, g);
    expect_same_bits(got, want, "max_pool2d");
    Tensor dy = Tensor::empty({g.n, g.c, g.oh, g.ow}, DType::float32);
    for (int64_t i = 0; i < dy.numel(); ++i) dy.data<float>()[i] = 1.f + static_cast<float>(i);
    Tensor dx = Tensor::empty(x.shape(), DType::float32),
           dx_ref = Tensor::empty(x.shape(), DType::float32);
    std::fill_n(dx.data<float>(), dx.numel(), std::numeric_limits<float>::quiet_NaN());
    cpu::max_pool_2x2_grad(x, dy, dx, g);
    cpu::max_pool2d_grad_ref<float>(x, dy, dx_ref, g);
    expect_same_bits(dx, dx_ref, "max_pool2d_grad");
  }
}

TEST(PoolDirect, TakesOnlyUnpadded2x2Stride2Float32) {
  WindowGeom g = pool_geom(1, 1, 8, 8), three = g, strided = g, padded = g;
  three.kh = three.kw = 3;
  strided.sh = 1;
  padded.pl = 1;
  EXPECT_FALSE(cpu::max_pool_2x2_fits(DType::float64, g));
  EXPECT_FALSE(cpu::max_pool_2x2_fits(DType::float32, three));
  EXPECT_FALSE(cpu::max_pool_2x2_fits(DType::float32, strided));
  EXPECT_FALSE(cpu::max_pool_2x2_fits(DType::float32, padded));
}

}  // namespace
}  // namespace mycel
