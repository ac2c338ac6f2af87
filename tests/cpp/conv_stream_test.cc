// The streamed direct convolution (kernels/cpu/conv_stream.cc) against a float64 direct loop
// written here: odd planes (every last-tile length), strides 1-3, dilation, asymmetric padding,
// non-square kernels, channel counts that are not multiples of 8 (every output-group width: 1 to
// 4 blocks of 8), batch 2, bias and relu/relu6, on nChw8c tensors. The
// sums run in the same order as a plain float loop, so the tolerance is float32 rounding: 1e-5 of
// the largest |output|.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "mycel/kernels/cpu/conv_stream.h"

namespace mycel {
namespace {

using cpu::WindowGeom;
using cpu::WinogradAct;

struct Case {
  int64_t n, c, h, w, oc, kh, kw, s, d, pt, pb, pl, pr;
  bool bias;
  WinogradAct act;
};

WindowGeom geom(const Case& k) {
  WindowGeom g;
  g.n = k.n, g.c = k.c, g.h = k.h, g.w = k.w, g.oc = k.oc, g.kh = k.kh, g.kw = k.kw;
  g.sh = g.sw = k.s, g.dh = g.dw = k.d;
  g.pt = k.pt, g.pb = k.pb, g.pl = k.pl, g.pr = k.pr;
  g.oh = (k.h + k.pt + k.pb - (k.kh - 1) * k.d - 1) / k.s + 1;
  g.ow = (k.w + k.pl + k.pr - (k.kw - 1) * k.d - 1) / k.s + 1;
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

// Max |y - reference| / max |reference| over the logical elements; padded channels must be 0.
double run_case(const Case& k) {
  const WindowGeom g = geom(k);
  const int64_t hw = g.h * g.w, ohw = g.oh * g.ow, taps = g.kh * g.kw;
  const std::vector<float> x = random(g.n * g.c * hw, 1), wv = random(g.oc * g.c * taps, 2),
                           b = random(g.oc, 3);
  Tensor w = Tensor::empty({g.oc, g.c, g.kh, g.kw}, DType::float32);
  std::copy(wv.begin(), wv.end(), w.data<float>());
  const cpu::StreamWeights u = cpu::conv_stream_weights(w, g);
  const std::vector<float> xb = to_blocked(x, g.n, g.c, hw);
  std::vector<float> yb(g.n * pad8(g.oc) * ohw, 123.f);
  cpu::conv2d_stream(xb.data(), u, k.bias ? b.data() : nullptr, yb.data(), g, k.act);
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
            for (int64_t a = 0; a < g.kh; ++a)
              for (int64_t v = 0; v < g.kw; ++v) {
                const int64_t ih = i * g.sh - g.pt + a * g.dh, iw = j * g.sw - g.pl + v * g.dw;
                if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
                  s += double(x[((n * g.c + c) * g.h + ih) * g.w + iw]) *
                       wv[((o * g.c + c) * g.kh + a) * g.kw + v];
              }
          if (k.act != WinogradAct::kNone) s = std::max(s, 0.0);
          if (k.act == WinogradAct::kRelu6) s = std::min(s, 6.0);
          err = std::max(err, std::abs(got - s));
          scale = std::max(scale, std::abs(s));
        }
  return err / std::max(scale, 1e-30);
}

TEST(ConvStream, MatchesDirectLoop) {
#if defined(__AVX2__) && defined(__FMA__)
  const std::vector<Case> cases = {
      // n  c  h  w  oc kh kw s d pt pb pl pr bias act
      {1, 16, 4, 4, 16, 3, 3, 1, 1, 1, 1, 1, 1, false, WinogradAct::kNone},
      {1, 19, 7, 7, 21, 3, 3, 1, 1, 1, 1, 1, 1, true, WinogradAct::kRelu},    // 49: tiles of 3
      {1, 24, 8, 8, 40, 3, 3, 2, 1, 1, 1, 1, 1, true, WinogradAct::kRelu6},   // groups 4 + 1
      {2, 33, 9, 11, 56, 3, 3, 2, 1, 1, 0, 2, 1, true, WinogradAct::kRelu},   // groups 4 + 3
      {1, 40, 6, 5, 48, 5, 3, 1, 1, 2, 2, 0, 1, false, WinogradAct::kRelu},   // groups 4 + 2
      {1, 16, 9, 9, 17, 3, 3, 1, 2, 2, 2, 2, 2, true, WinogradAct::kNone},    // dilation 2
      {1, 64, 10, 10, 64, 3, 3, 3, 1, 0, 0, 1, 1, true, WinogradAct::kRelu},  // stride 3
      {1, 16, 3, 2, 24, 1, 3, 1, 1, 0, 0, 1, 1, true, WinogradAct::kNone},    // 1x3, plane 6
      {1, 20, 5, 5, 32, 3, 3, 1, 1, 1, 1, 1, 1, false, WinogradAct::kRelu6},  // 25: 8 x 3 + 1
      {1, 512, 4, 4, 512, 3, 3, 1, 1, 1, 1, 1, 1, true, WinogradAct::kRelu},  // ResNet's last
      {1, 256, 8, 8, 512, 3, 3, 2, 1, 1, 1, 1, 1, true, WinogradAct::kNone},  // its downsample
      // Padding 3 around a 3x3 kernel: the corner outputs read padding only (the bias alone).
      {1, 16, 4, 4, 24, 3, 3, 1, 1, 3, 3, 3, 3, true, WinogradAct::kRelu},
  };
  double worst = 0;
  for (const Case& k : cases) {
    const double e = run_case(k);
    EXPECT_LT(e, 1e-5) << "c " << k.c << " oc " << k.oc << " " << k.h << "x" << k.w;
    worst = std::max(worst, e);
  }
  std::printf("streamed conv max relative error %.3g\n", worst);
#else
  GTEST_SKIP() << "AVX2 build only";
#endif
}

TEST(ConvStream, RejectsWeightsOfAnotherShape) {
  Case k{1, 16, 4, 4, 16, 3, 3, 1, 1, 1, 1, 1, 1, false, WinogradAct::kNone};
  WindowGeom g = geom(k);
  Tensor w = Tensor::zeros({16, 16, 3, 3}, DType::float32);
  g.c = 24;  // the weights say 16
  EXPECT_THROW(cpu::conv_stream_weights(w, g), Error);
  EXPECT_FALSE(cpu::conv_stream_fits(DType::float64, geom(k)));
  WindowGeom grouped = geom(k);
  grouped.groups = 2;
  EXPECT_FALSE(cpu::conv_stream_fits(DType::float32, grouped));
}

}  // namespace
}  // namespace mycel
