// Winograd F(2x2,3x3) and F(4x4,3x3) convolution (kernels/cpu/conv_winograd.cc) against a float64
// direct loop written here, over odd sizes, asymmetric padding, channel counts that are not
// multiples of 8, batch 2, bias, residual and relu/relu6, on nChw8c tensors. Tolerance: the max
// error relative to the largest |output| stays below 2e-6 (F(2x2)) and 1e-5 (F(4x4)).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/conv_winograd.h"

namespace mycel {
namespace {

using cpu::WindowGeom;
using cpu::WinogradAct;

WindowGeom geom(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oc, int64_t pt, int64_t pb,
                int64_t pl, int64_t pr) {
  WindowGeom g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.oc = oc, g.kh = 3, g.kw = 3;
  g.pt = pt, g.pb = pb, g.pl = pl, g.pr = pr;
  g.oh = h + pt + pb - 2;
  g.ow = w + pl + pr - 2;
  return g;
}

std::vector<float> random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

int64_t pad8(int64_t c) { return (c + 7) / 8 * 8; }

// NCHW -> nChw8c, padding channels with zeros.
std::vector<float> to_blocked(const std::vector<float>& x, int64_t n, int64_t c, int64_t hw) {
  std::vector<float> b(n * pad8(c) * hw, 0.f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t s = 0; s < hw; ++s)
        b[((i * pad8(c) / 8 + ch / 8) * hw + s) * 8 + ch % 8] = x[(i * c + ch) * hw + s];
  return b;
}

struct Case {
  WindowGeom g;
  bool bias, residual;
  WinogradAct act;
};

// Max |y - reference| / max |reference| over the logical elements; padded channels must be 0.
double run_case(const Case& k, int m) {
  const WindowGeom& g = k.g;
  const int64_t hw = g.h * g.w, ohw = g.oh * g.ow;
  const std::vector<float> x = random(g.n * g.c * hw, 1), wv = random(g.oc * g.c * 9, 2),
                           b = random(g.oc, 3), r = random(g.n * g.oc * ohw, 4);
  Tensor w = Tensor::empty({g.oc, g.c, 3, 3}, DType::float32);
  std::copy(wv.begin(), wv.end(), w.data<float>());
  const cpu::WinogradWeights u = cpu::winograd_weights(w, g, m);
  const std::vector<float> xb = to_blocked(x, g.n, g.c, hw), rb = to_blocked(r, g.n, g.oc, ohw);
  std::vector<float> yb(g.n * pad8(g.oc) * ohw, 123.f);
  cpu::conv2d_winograd(xb.data(), u, k.bias ? b.data() : nullptr, k.residual ? rb.data() : nullptr,
                       yb.data(), g, k.act);
  double err = 0, scale = 0;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < pad8(g.oc); ++o)
      for (int64_t i = 0; i < g.oh; ++i)
        for (int64_t j = 0; j < g.ow; ++j) {
          const float got = yb[((n * pad8(g.oc) / 8 + o / 8) * ohw + i * g.ow + j) * 8 + o % 8];
          if (o >= g.oc) {
            EXPECT_EQ(got, 0.f) << "padded channel " << o;
            continue;
          }
          double s = k.bias ? b[o] : 0.0;
          for (int64_t c = 0; c < g.c; ++c)
            for (int u2 = 0; u2 < 3; ++u2)
              for (int v = 0; v < 3; ++v) {
                const int64_t ih = i - g.pt + u2, iw = j - g.pl + v;
                if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
                  s += double(x[((n * g.c + c) * g.h + ih) * g.w + iw]) *
                       wv[((o * g.c + c) * 3 + u2) * 3 + v];
              }
          if (k.residual) s += r[((n * g.oc + o) * g.oh + i) * g.ow + j];
          if (k.act != WinogradAct::kNone) s = std::max(s, 0.0);
          if (k.act == WinogradAct::kRelu6) s = std::min(s, 6.0);
          err = std::max(err, std::abs(got - s));
          scale = std::max(scale, std::abs(s));
        }
  return err / std::max(scale, 1e-30);
}

std::vector<Case> cases() {
  return {
      {geom(1, 16, 8, 8, 16, 1, 1, 1, 1), false, false, WinogradAct::kNone},
      {geom(1, 19, 11, 13, 21, 1, 1, 1, 1), true, false, WinogradAct::kRelu},
      {geom(2, 24, 7, 5, 40, 2, 0, 1, 2), true, true, WinogradAct::kRelu},
      {geom(1, 64, 32, 32, 64, 1, 1, 1, 1), true, true, WinogradAct::kNone},
      {geom(1, 33, 1, 1, 17, 1, 1, 1, 1), true, false, WinogradAct::kRelu6},
      {geom(1, 16, 3, 9, 56, 0, 0, 0, 0), false, true, WinogradAct::kRelu6},
      {geom(3, 40, 6, 6, 24, 1, 1, 1, 1), true, true, WinogradAct::kRelu},
  };
}

TEST(ConvWinograd, F2x2MatchesDirectLoop) {
#if defined(__AVX2__) && defined(__FMA__)
  double worst = 0;
  for (const Case& k : cases()) worst = std::max(worst, run_case(k, 2));
  EXPECT_LT(worst, 2e-6);
  std::printf("F(2x2,3x3) max relative error %.3g\n", worst);
#else
  GTEST_SKIP() << "AVX2 build only";
#endif
}

TEST(ConvWinograd, F4x4MatchesDirectLoop) {
#if defined(__AVX2__) && defined(__FMA__)
  double worst = 0;
  for (const Case& k : cases()) worst = std::max(worst, run_case(k, 4));
  EXPECT_LT(worst, 1e-5);
  std::printf("F(4x4,3x3) max relative error %.3g\n", worst);
#else
  GTEST_SKIP() << "AVX2 build only";
#endif
}

// Planes with many tiles take the per-thread blocks (each thread runs the three steps on whole
// blocks of tiles, which split the tiles unevenly here: odd sizes, batch 2, tile counts that no
// thread count divides), on 1, 2 and 3 threads; the small cases above take the shared path.
TEST(ConvWinograd, ThreadBlocksMatchDirectLoopOn1To3Threads) {
#if defined(__AVX2__) && defined(__FMA__)
  const int saved = num_threads();
  const std::vector<Case> big = {
      {geom(2, 24, 37, 29, 40, 1, 1, 1, 1), true, true, WinogradAct::kRelu},
      {geom(1, 64, 56, 56, 64, 1, 1, 1, 1), true, false, WinogradAct::kNone},
      {geom(1, 19, 45, 31, 21, 2, 0, 0, 2), false, true, WinogradAct::kRelu6},
  };
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (const Case& k : big) {
      EXPECT_LT(run_case(k, 2), 2e-6) << threads << " threads, F(2x2), c " << k.g.c;
      EXPECT_LT(run_case(k, 4), 1e-5) << threads << " threads, F(4x4), c " << k.g.c;
    }
  }
  set_num_threads(saved);
#else
  GTEST_SKIP() << "AVX2 build only";
#endif
}

// 49 tiles with channel counts that make each thread block one group of 6 tiles or less
// (ResNet-18's 256 channels at 14x14 under F(2x2), 128 at 28x28 under F(4x4)): the blocks split
// the tiles evenly (at most 6 per GEMM group, none of 1) on 1, 2 and 3 threads; every thread
// count gives the same result (each output sums its channels in one order).
TEST(ConvWinograd, EvenTileSplitAt49TilesOn1To3Threads) {
#if defined(__AVX2__) && defined(__FMA__)
  const int saved = num_threads();
  const Case f2{geom(1, 200, 14, 14, 168, 1, 1, 1, 1), true, true, WinogradAct::kRelu};
  const Case f4{geom(1, 96, 28, 28, 72, 1, 1, 1, 1), true, false, WinogradAct::kNone};
  double e2_1 = 0, e4_1 = 0;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    const double e2 = run_case(f2, 2), e4 = run_case(f4, 4);
    EXPECT_LT(e2, 2e-6) << threads << " threads, F(2x2)";
    EXPECT_LT(e4, 1e-5) << threads << " threads, F(4x4)";
    if (threads == 1) {
      e2_1 = e2, e4_1 = e4;
    } else {
      EXPECT_EQ(e2, e2_1) << threads << " threads, F(2x2)";
      EXPECT_EQ(e4, e4_1) << threads << " threads, F(4x4)";
    }
  }
  set_num_threads(saved);
#else
  GTEST_SKIP() << "AVX2 build only";
#endif
}

// Planes with few tiles (ResNet-18's 128 channels at 16x16 under F(4x4), 256 at 8x8 under
// F(2x2)) take the shared path, each step split over the threads: on 1, 2 and 3 threads, with
// output channel block counts that split unevenly, batch 2, against the float64 loop, and every
// thread count giving the same result (each output sums its channels in one order).
TEST(ConvWinograd, FewTilesSharedPathOn1To3Threads) {
#if defined(__AVX2__) && defined(__FMA__)
  const int saved = num_threads();
  const std::vector<Case> few = {
      {geom(1, 128, 16, 16, 128, 1, 1, 1, 1), true, true, WinogradAct::kRelu},
      {geom(1, 256, 8, 8, 256, 1, 1, 1, 1), true, false, WinogradAct::kNone},
      {geom(2, 24, 9, 7, 40, 1, 1, 1, 1), false, true, WinogradAct::kRelu6},
      {geom(1, 32, 8, 8, 24, 1, 1, 1, 1), true, false, WinogradAct::kRelu},
  };
  // F(4x4) at 256 input channels rounds a little more (1.2e-5) than the smaller cases above.
  std::vector<double> first;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (size_t i = 0; i < few.size(); ++i) {
      const Case& k = few[i];
      const double e2 = run_case(k, 2), e4 = run_case(k, 4);
      EXPECT_LT(e2, 2e-6) << threads << " threads, F(2x2), c " << k.g.c;
      EXPECT_LT(e4, 2e-5) << threads << " threads, F(4x4), c " << k.g.c;
      if (threads == 1) {
        first.push_back(e2), first.push_back(e4);
      } else {
        EXPECT_EQ(e2, first[2 * i]) << threads << " threads, F(2x2), c " << k.g.c;
        EXPECT_EQ(e4, first[2 * i + 1]) << threads << " threads, F(4x4), c " << k.g.c;
      }
    }
  }
  set_num_threads(saved);
#else
  GTEST_SKIP() << "AVX2 build only";
#endif
}

TEST(ConvWinograd, RejectsMismatchedWeights) {
  const WindowGeom g = geom(1, 16, 8, 8, 16, 1, 1, 1, 1);
  Tensor w = Tensor::zeros({16, 8, 3, 3}, DType::float32);
  EXPECT_THROW(cpu::winograd_weights(w, g, 4), ValueError);
  Tensor w2 = Tensor::zeros({16, 16, 3, 3}, DType::float32);
  EXPECT_THROW(cpu::winograd_weights(w2, g, 3), ValueError);
}

// The per-call transform (float32, vectorised, training) equals the float64 one within float32
// rounding, and its `flip` form equals the float64 transform of the explicitly flipped and
// transposed weights (the backward-data convolution's), for both tiles and channel counts that
// are not multiples of 8 or 16 (every entry of U compared, the padding's zeros included).
TEST(ConvWinograd, PerCallWeightTransformMatchesFloat64One) {
  for (int m : {2, 4})
    for (auto [c, oc] : {std::pair<int64_t, int64_t>{20, 27}, {16, 16}, {64, 24}}) {
      const WindowGeom g = geom(4, c, 9, 9, oc, 1, 1, 1, 1);
      const std::vector<float> wv = random(oc * c * 9, 7);
      Tensor w = Tensor::empty({oc, c, 3, 3}, DType::float32);
      std::copy(wv.begin(), wv.end(), w.data<float>());
      // w' (c, oc, 3, 3) with w'[i][o] = rot180(w[o][i]): the forward weights of the backward
      // convolution of geometry gb (c and oc swapped), whose flip form reads w.
      WindowGeom gb = g;
      gb.c = oc, gb.oc = c;
      Tensor wt = Tensor::empty({c, oc, 3, 3}, DType::float32);
      for (int64_t o = 0; o < oc; ++o)
        for (int64_t i = 0; i < c; ++i)
          for (int t = 0; t < 9; ++t)
            wt.data<float>()[(i * oc + o) * 9 + t] = wv[(o * c + i) * 9 + 8 - t];
      for (bool flip : {false, true}) {
        const WindowGeom& gg = flip ? gb : g;
        const cpu::WinogradWeights want = cpu::winograd_weights(flip ? wt : w, gg, m);
        cpu::WinogradWeights got;
        cpu::winograd_weights_into(w.data<float>(), gg, m, flip, got);
        ASSERT_EQ(got.m, m);
        ASSERT_EQ(got.c8, want.c8);
        ASSERT_EQ(got.oc8, want.oc8);
        const float *a = got.u.data<float>(), *b = want.u.data<float>();
        for (int64_t k = 0; k < want.u.numel(); ++k)
          ASSERT_NEAR(a[k], b[k], 1e-6f * (1.f + std::abs(b[k])))
              << "m " << m << " c " << c << " oc " << oc << " flip " << flip << " entry " << k;
      }
    }
}

}  // namespace
}  // namespace mycel
