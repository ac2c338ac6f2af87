// The direct few-channel convolution (kernels/cpu/conv_direct.cc) and its fused 2x2 max pooling,
// against a float64 loop written here, over padded, odd-sized, multi-tile and multi-block
// geometries, with and without bias and relu, in NCHW, NHWC and channel-blocked outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "mycel/kernels/cpu/conv_direct.h"
#include "mycel/kernels/cpu/nn_grad_ref.h"

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

// y[n][o][i][j] in float64, relu applied when asked.
std::vector<double> reference_conv(const Tensor& x, const Tensor& w, const Tensor* b,
                                   const WindowGeom& g, bool relu) {
  std::vector<double> y(g.n * g.oc * g.oh * g.ow);
  const float *X = x.data<float>(), *W = w.data<float>();
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.oc; ++o)
      for (int64_t i = 0; i < g.oh; ++i)
        for (int64_t j = 0; j < g.ow; ++j) {
          double s = b ? b->data<float>()[o] : 0.0;
          for (int64_t c = 0; c < g.c; ++c)
            for (int64_t u = 0; u < g.kh; ++u)
              for (int64_t v = 0; v < g.kw; ++v) {
                const int64_t ih = i - g.pt + u, iw = j - g.pl + v;
                if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
                  s += double(X[((n * g.c + c) * g.h + ih) * g.w + iw]) *
                       W[((o * g.c + c) * g.kh + u) * g.kw + v];
              }
          y[((n * g.oc + o) * g.oh + i) * g.ow + j] = relu ? std::max(s, 0.0) : s;
        }
  return y;
}

// The 2x2, stride 2 max pooling of a reference_conv result.
std::vector<double> reference_pool(const std::vector<double>& y, const WindowGeom& g) {
  const int64_t ph = g.oh / 2, pw = g.ow / 2;
  std::vector<double> p(g.n * g.oc * ph * pw);
  for (int64_t nc = 0; nc < g.n * g.oc; ++nc)
    for (int64_t i = 0; i < ph; ++i)
      for (int64_t j = 0; j < pw; ++j) {
        const double* r = &y[(nc * g.oh + 2 * i) * g.ow + 2 * j];
        p[(nc * ph + i) * pw + j] = std::max({r[0], r[1], r[g.ow], r[g.ow + 1]});
      }
  return p;
}

// Compares y (NCHW when block is 0, else nChw<block>c: channel o of pixel (i, j) at block
// o / block, lane o % block, the last block's padding lanes zero) with the NCHW reference of
// h x w planes.
void expect_matches(const Tensor& y, const std::vector<double>& ref, const WindowGeom& g, int64_t h,
                    int64_t w, int64_t block) {
  const float* Y = y.data<float>();
  const int64_t X = block, blocks = X ? (g.oc + X - 1) / X : 0, plane = h * w * X;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) {
        for (int64_t o = 0; o < g.oc; ++o) {
          const int64_t at = X == 0 ? ((n * g.oc + o) * h + i) * w + j
                                    : (n * blocks + o / X) * plane + (i * w + j) * X + o % X;
          const double want = ref[((n * g.oc + o) * h + i) * w + j];
          ASSERT_NEAR(Y[at], want, 1e-5 + 1e-5 * std::abs(want))
              << "n " << n << " o " << o << " row " << i << " col " << j << " block " << X;
        }
        for (int64_t o = g.oc; o < blocks * X; ++o)
          ASSERT_EQ(Y[(n * blocks + o / X) * plane + (i * w + j) * X + o % X], 0.f)
              << "padding channel " << o << " block " << X;
      }
}

struct Case {
  WindowGeom g;
  const char* what;
};

TEST(ConvDirect, MatchesFloat64LoopWithAndWithoutPooling) {
  const std::vector<Case> cases = {
      {geom(2, 1, 32, 32, 6, 5, 5, 0, 0, 0, 0), "LeNet5 conv1"},
      {geom(1, 3, 17, 32, 16, 3, 3, 1, 1, 1, 1),
       "same padding, 16 channels (two blocks), odd height"},
      {geom(2, 5, 9, 20, 11, 5, 5, 2, 2, 2, 2), "125 weights per channel, 11 channels"},
      {geom(3, 2, 9, 40, 5, 3, 5, 2, 1, 0, 3), "asymmetric padding, three column tiles"},
      {geom(1, 1, 8, 8, 1, 1, 1, 0, 0, 0, 0), "1x1 kernel, one channel"},
      {geom(2, 4, 12, 13, 7, 4, 4, 1, 2, 1, 2), "64 weights per channel"},
      {geom(1, 2, 6, 70, 9, 2, 3, 0, 1, 2, 0), "wide rows, 9 channels"},
  };
  for (const Case& k : cases) {
    const WindowGeom& g = k.g;
    SCOPED_TRACE(k.what);
    if (!cpu::conv2d_direct_fits(DType::float32, g))
      GTEST_SKIP() << "no direct kernel (needs AVX2 or AVX-512)";
    const Tensor x = random({g.n, g.c, g.h, g.w}, 1), w = random({g.oc, g.c, g.kh, g.kw}, 2);
    const Tensor b = random({g.oc}, 3);
    for (bool relu : {false, true})
      for (const Tensor* bias : {static_cast<const Tensor*>(nullptr), &b}) {
        const std::vector<double> conv = reference_conv(x, w, bias, g, relu);
        const std::vector<double> pooled = reference_pool(conv, g);
        for (int64_t block : {int64_t(0), g.oc, int64_t(8), int64_t(16)}) {  // NCHW, NHWC, nChwXc
          const int64_t per = block == 0 ? g.oc : (g.oc + block - 1) / block * block;
          // NaN-filled outputs: every element the kernel must write is checked.
          Tensor y = Tensor::empty({g.n * g.oh * g.ow * per}, DType::float32);
          std::fill_n(y.data<float>(), y.numel(), std::numeric_limits<float>::quiet_NaN());
          cpu::conv2d_direct(x, w, bias, y, g, relu, block);
          expect_matches(y, conv, g, g.oh, g.ow, block);
          Tensor p = Tensor::empty({g.n * (g.oh / 2) * (g.ow / 2) * per}, DType::float32);
          std::fill_n(p.data<float>(), p.numel(), std::numeric_limits<float>::quiet_NaN());
          cpu::conv2d_direct_max_pool(x, w, bias, p, g, relu, block);
          expect_matches(p, pooled, g, g.oh / 2, g.ow / 2, block);
        }
      }
  }
}

TEST(ConvDirect, TakesOnlyFewChannelStrideOneFloat32) {
  const WindowGeom lenet = geom(64, 1, 32, 32, 6, 5, 5, 0, 0, 0, 0);
  WindowGeom many_out = lenet, strided = lenet, big_window = lenet, grouped = lenet, wide = lenet;
  // 10-column rows and 16 channels (like LeNet5's conv2): oneDNN fills more lanes.
  const WindowGeom short_rows = geom(64, 6, 12, 12, 16, 3, 3, 0, 0, 0, 0);
  if (!cpu::conv2d_direct_fits(DType::float32, lenet))
    GTEST_SKIP() << "no direct kernel (needs AVX2 or AVX-512)";
  EXPECT_TRUE(cpu::conv2d_direct_fits(DType::float32, geom(8, 3, 32, 32, 16, 3, 3, 1, 1, 1, 1)));
  wide.w = 40000;  // its load masks would not fit the kernel's stack table
  wide.ow = wide.w - 4;
  many_out.oc = 32;
  strided.sw = 2;
  big_window.c = 6;  // 6 * 5 * 5 = 150 weights per channel
  grouped.groups = 2;
  EXPECT_FALSE(cpu::conv2d_direct_fits(DType::float64, lenet));
  EXPECT_FALSE(cpu::conv2d_direct_fits(DType::float32, many_out));
  EXPECT_FALSE(cpu::conv2d_direct_fits(DType::float32, strided));
  EXPECT_FALSE(cpu::conv2d_direct_fits(DType::float32, big_window));
  EXPECT_FALSE(cpu::conv2d_direct_fits(DType::float32, grouped));
  EXPECT_FALSE(cpu::conv2d_direct_fits(DType::float32, wide));
  EXPECT_FALSE(cpu::conv2d_direct_fits(DType::float32, short_rows));
}

// The largest |a - b| over |b| + 1 (a mix of absolute and relative error).
double worst_error(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double want = b.data<double>()[i];
    worst = std::max(worst, std::abs(a.data<float>()[i] - want) / (std::abs(want) + 1.0));
  }
  return worst;
}

Tensor to_double(const Tensor& t) { return t.to(DType::float64); }

TEST(ConvDirect, BackwardDataAndFilterMatchFloat64ReferenceLoops) {
  const std::vector<Case> cases = {
      {geom(64, 1, 32, 32, 6, 5, 5, 0, 0, 0, 0), "LeNet5 conv1"},
      {geom(64, 6, 14, 14, 16, 5, 5, 0, 0, 0, 0), "LeNet5 conv2"},
      {geom(3, 3, 17, 21, 16, 3, 3, 1, 1, 1, 1), "same padding, odd sizes"},
      {geom(2, 5, 9, 20, 11, 5, 5, 2, 2, 2, 2), "padding 2, 11 channels"},
      {geom(3, 2, 9, 40, 5, 3, 5, 2, 1, 0, 3), "asymmetric padding, rows of 36"},
      {geom(1, 1, 8, 9, 1, 1, 1, 0, 0, 0, 0), "1x1 kernel, one channel"},
      {geom(2, 4, 12, 13, 7, 4, 4, 1, 2, 1, 2), "even kernel, 7 channels"},
      {geom(2, 3, 11, 30, 9, 7, 7, 3, 3, 3, 3), "7x7 kernel"},
      {geom(1, 2, 6, 70, 9, 2, 3, 0, 1, 2, 0), "wide rows, 9 channels"},
  };
  int data_cases = 0, filter_cases = 0;
  for (const Case& k : cases) {
    const WindowGeom& g = k.g;
    SCOPED_TRACE(k.what);
    const Tensor x = random({g.n, g.c, g.h, g.w}, 4), w = random({g.oc, g.c, g.kh, g.kw}, 5);
    const Tensor dy = random({g.n, g.oc, g.oh, g.ow}, 6);
    if (cpu::conv2d_direct_bwd_data_fits(DType::float32, g)) {
      ++data_cases;
      Tensor dx = Tensor::empty(x.shape(), DType::float32);
      std::fill_n(dx.data<float>(), dx.numel(), std::numeric_limits<float>::quiet_NaN());
      std::vector<float> scratch(w.numel());
      cpu::conv2d_direct_backprop_input(dy, w, dx, g, scratch.data());
      Tensor want = Tensor::empty(x.shape(), DType::float64);
      cpu::conv2d_backprop_input_ref<double>(to_double(dy), to_double(w), want, g);
      EXPECT_LT(worst_error(dx, want), 2e-5);
    }
    if (cpu::conv2d_direct_bwd_filter_fits(DType::float32, g)) {
      ++filter_cases;
      Tensor dw = Tensor::empty(w.shape(), DType::float32);
      std::fill_n(dw.data<float>(), dw.numel(), std::numeric_limits<float>::quiet_NaN());
      std::vector<float> scratch(cpu::conv2d_direct_bwd_filter_scratch(g));
      cpu::conv2d_direct_backprop_filter(dy, x, dw, g, scratch.data());
      Tensor want = Tensor::empty(w.shape(), DType::float64);
      cpu::conv2d_backprop_filter_ref<double>(to_double(dy), to_double(x), want, g);
      // Sums over up to 64 * 784 products of numbers in [-1, 1].
      EXPECT_LT(worst_error(dw, want), 1e-4);
    }
  }
  if (data_cases + filter_cases == 0) GTEST_SKIP() << "no direct backward kernels on this CPU";
  EXPECT_GE(data_cases, 5);
  EXPECT_EQ(filter_cases, static_cast<int>(cases.size()));
}

TEST(ConvDirect, BackwardKernelsTakeOnlyTheirGeometry) {
  const WindowGeom lenet2 = geom(64, 6, 14, 14, 16, 5, 5, 0, 0, 0, 0);
  if (!cpu::conv2d_direct_bwd_filter_fits(DType::float32, lenet2))
    GTEST_SKIP() << "no direct backward kernels on this CPU";
  EXPECT_TRUE(cpu::conv2d_direct_bwd_data_fits(DType::float32, lenet2));
  WindowGeom strided = lenet2, grouped = lenet2,
             wide_kernel = geom(2, 2, 20, 20, 4, 9, 9, 0, 0, 0, 0);
  WindowGeom many = lenet2, big_pad = geom(2, 2, 20, 20, 4, 3, 3, 3, 3, 3, 3);
  strided.sw = 2;
  grouped.groups = 2;
  many.oc = 32;
  for (const WindowGeom& g : {strided, grouped, many}) {
    EXPECT_FALSE(cpu::conv2d_direct_bwd_filter_fits(DType::float32, g));
    EXPECT_FALSE(cpu::conv2d_direct_bwd_data_fits(DType::float32, g));
  }
  EXPECT_FALSE(cpu::conv2d_direct_bwd_filter_fits(DType::float32, wide_kernel));  // 9 > 7 taps
  EXPECT_FALSE(cpu::conv2d_direct_bwd_filter_fits(DType::float64, lenet2));
  EXPECT_FALSE(cpu::conv2d_direct_bwd_data_fits(DType::float64, lenet2));
  EXPECT_FALSE(cpu::conv2d_direct_bwd_data_fits(DType::float32, big_pad));  // padding > kernel - 1
}

}  // namespace
}  // namespace mycel
