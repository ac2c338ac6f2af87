// The batch-lanes data gradient and forward convolution (kernels/cpu/conv_batch_lanes.cc) against
// the float64 reference loops, over LeNet5's conv2, batches that are not a multiple of 16,
// padding on every side, even and 1-wide kernels, and rows that end in a partial column block
// (the forward with and without bias and relu); and the geometry they take.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "mycel/kernels/cpu/conv_batch_lanes.h"
#include "mycel/kernels/cpu/nn_grad_ref.h"
#include "mycel/kernels/cpu/nn_ref.h"

namespace mycel {
namespace {

using cpu::WindowGeom;

WindowGeom geom(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc, int64_t kh, int64_t kw,
                int64_t pt, int64_t pb, int64_t pl, int64_t pr) {
  WindowGeom g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.oc = oc, g.kh = kh, g.kw = kw;
  g.pt = pt, g.pb = pb, g.pl = pl, g.pr = pr;
  g.oh = h + pt + pb - kh + 1;
  g.ow = w + pl + pr - kw + 1;
  return g;
}

Tensor random(Shape s, unsigned seed) {
  Tensor t = Tensor::empty(s, DType::float32);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

TEST(ConvBatchLanes, DataGradientMatchesFloat64ReferenceLoop) {
  struct Case {
    WindowGeom g;
    const char* what;
  };
  const Case cases[] = {
      {geom(64, 6, 14, 14, 16, 5, 5, 0, 0, 0, 0), "LeNet5 conv2"},
      {geom(37, 3, 9, 11, 5, 3, 4, 1, 2, 0, 3), "batch 37, even kernel, uneven padding"},
      {geom(16, 16, 8, 8, 16, 7, 7, 3, 3, 3, 3), "7x7, same padding, 16 channels"},
      {geom(20, 1, 12, 15, 2, 1, 2, 0, 0, 0, 0), "1x2 kernel, 15-column dx rows (7 + 7 + 1)"},
      {geom(33, 4, 6, 5, 7, 2, 1, 1, 0, 0, 0), "1-wide kernel, 5 columns, 3 image vectors"},
  };
  int taken = 0;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    const WindowGeom& g = k.g;
    if (!cpu::conv2d_bwd_data_batch_lanes_fits(DType::float32, g)) continue;
    ++taken;
    const Tensor w = random({g.oc, g.c, g.kh, g.kw}, 5), dy = random({g.n, g.oc, g.oh, g.ow}, 6);
    Tensor dx = Tensor::empty({g.n, g.c, g.h, g.w}, DType::float32);
    std::fill_n(dx.data<float>(), dx.numel(), std::numeric_limits<float>::quiet_NaN());
    cpu::conv2d_backprop_input_batch_lanes(dy, w, dx, g);
    Tensor want = Tensor::empty(dx.shape(), DType::float64);
    cpu::conv2d_backprop_input_ref<double>(dy.to(DType::float64), w.to(DType::float64), want, g);
    for (int64_t i = 0; i < dx.numel(); ++i) {
      const double v = want.data<double>()[i];
      ASSERT_NEAR(dx.data<float>()[i], v, 2e-5 * (std::abs(v) + 1.0)) << "element " << i;
    }
  }
  if (taken == 0) GTEST_SKIP() << "the batch-lanes kernel is not taken on this CPU";
  EXPECT_EQ(taken, 5);
}

TEST(ConvBatchLanes, ForwardMatchesFloat64ReferenceLoop) {
  const WindowGeom cases[] = {
      geom(64, 6, 14, 14, 16, 5, 5, 0, 0, 0, 0),  // LeNet5 conv2
      geom(37, 3, 9, 11, 5, 3, 4, 1, 2, 0, 3),    // batch 37, even kernel, uneven padding
      geom(16, 16, 8, 15, 16, 7, 7, 3, 3, 3, 3),  // 7x7 same padding, rows of 15 (7 + 7 + 1)
      geom(33, 4, 6, 5, 7, 2, 1, 1, 0, 0, 0),     // 1-wide kernel, 3 image vectors
  };
  int taken = 0;
  for (const WindowGeom& g : cases)
    for (const bool with_bias : {false, true})
      for (const bool relu : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n " << g.n << " c " << g.c << " oc " << g.oc
                                          << " bias " << with_bias << " relu " << relu);
        if (!cpu::conv2d_batch_lanes_fits(DType::float32, g)) continue;
        ++taken;
        const Tensor x = random({g.n, g.c, g.h, g.w}, 7), w = random({g.oc, g.c, g.kh, g.kw}, 8);
        const Tensor b = random({g.oc}, 9);
        Tensor y = Tensor::empty({g.n, g.oc, g.oh, g.ow}, DType::float32);
        std::fill_n(y.data<float>(), y.numel(), std::numeric_limits<float>::quiet_NaN());
        cpu::conv2d_batch_lanes(x, w, with_bias ? &b : nullptr, y, g, relu);
        Tensor want = Tensor::empty(y.shape(), DType::float64);
        const Tensor b64 = b.to(DType::float64);
        cpu::conv2d_ref<double>(x.to(DType::float64), w.to(DType::float64),
                                with_bias ? &b64 : nullptr, want, g);
        for (int64_t i = 0; i < y.numel(); ++i) {
          double v = want.data<double>()[i];
          if (relu) v = std::max(v, 0.0);
          ASSERT_NEAR(y.data<float>()[i], v, 2e-5 * (std::abs(v) + 1.0)) << "element " << i;
        }
      }
  if (taken == 0) GTEST_SKIP() << "the batch-lanes kernel is not taken on this CPU";
  EXPECT_EQ(taken, 16);
}

TEST(ConvBatchLanes, TakesOnlyItsGeometry) {
  const WindowGeom lenet2 = geom(64, 6, 14, 14, 16, 5, 5, 0, 0, 0, 0);
  if (!cpu::conv2d_bwd_data_batch_lanes_fits(DType::float32, lenet2))
    GTEST_SKIP() << "the batch-lanes kernel is not taken on this CPU";
  WindowGeom strided = lenet2, grouped = lenet2, many = lenet2, small_batch = lenet2;
  strided.sw = 2;
  grouped.groups = 2;
  many.oc = 32;
  small_batch.n = 8;
  const WindowGeom wide_rows = geom(64, 6, 20, 20, 16, 3, 3, 0, 0, 0, 0);  // dy rows of 18
  const WindowGeom wide_kernel = geom(64, 2, 12, 12, 4, 3, 9, 0, 0, 0, 0);
  for (const WindowGeom& g : {strided, grouped, many, small_batch, wide_rows, wide_kernel})
    EXPECT_FALSE(cpu::conv2d_bwd_data_batch_lanes_fits(DType::float32, g));
  EXPECT_FALSE(cpu::conv2d_bwd_data_batch_lanes_fits(DType::float64, lenet2));
  // The forward: x's rows (not dy's) must be narrow, and paddings at most kernel - 1.
  EXPECT_TRUE(cpu::conv2d_batch_lanes_fits(DType::float32, lenet2));
  const WindowGeom lenet1 = geom(64, 1, 32, 32, 6, 5, 5, 0, 0, 0, 0);  // rows of 32
  const WindowGeom over_padded = geom(64, 2, 10, 10, 4, 3, 3, 3, 3, 3, 3);
  for (const WindowGeom& g : {strided, grouped, many, small_batch, lenet1, over_padded})
    EXPECT_FALSE(cpu::conv2d_batch_lanes_fits(DType::float32, g));
}

}  // namespace
}  // namespace mycel
