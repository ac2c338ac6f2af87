// The int8 kernels (kernels/cpu/quant.h): oneDNN's u8 x s8 convolution and matmul against the
// exact int32 reference loops, over geometries with padding, stride, dilation, groups, zero
// points, fused relu and both output dtypes; and the saturation rule for 8-bit weights.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "mycel/kernels/cpu/quant.h"

namespace mycel::cpu {
namespace {

template <class T>
Tensor random_ints(Shape s, DType dt, int lo, int hi, std::mt19937& rng) {
  Tensor t = Tensor::empty(s, dt);
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(d(rng));
  return t;
}

QuantSpec spec(int64_t oc, int32_t xzp, bool relu, std::mt19937& rng) {
  QuantSpec q;
  q.x_scale = 0.02f;
  q.x_zp = xzp;
  std::uniform_real_distribution<float> d(0.001f, 0.01f);
  for (int64_t o = 0; o < oc; ++o) q.w_scale.push_back(d(rng));
  q.y_scale = 0.05f;
  q.y_zp = 3;
  q.relu = relu;
  return q;
}

// Outputs equal up to float rounding: float within 1e-4 relative, uint8 within one step.
void expect_close(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (a.dtype() == DType::uint8) {
      EXPECT_LE(std::abs(int(a.data<uint8_t>()[i]) - int(b.data<uint8_t>()[i])), 1) << i;
    } else {
      const float x = a.data<float>()[i], y = b.data<float>()[i];
      EXPECT_NEAR(x, y, 1e-4f * (1 + std::abs(y))) << i;
    }
  }
}

TEST(QuantKernels, ConvMatchesReference) {
  std::mt19937 rng(7);
  struct Case {
    int64_t n, c, h, oc, k, s, p, d, g;
    int32_t xzp;
  };
  for (Case cs : {Case{2, 8, 9, 16, 3, 1, 1, 1, 1, 7}, Case{1, 6, 11, 12, 3, 2, 1, 2, 3, 0},
                  Case{1, 1, 12, 6, 5, 1, 0, 1, 1, 100}, Case{3, 16, 5, 8, 1, 1, 0, 1, 1, 0},
                  Case{1, 5, 9, 70, 3, 2, 1, 1, 1, 3}, Case{2, 32, 16, 64, 3, 1, 1, 1, 1, 9}}) {
    WindowGeom g;
    g.n = cs.n, g.c = cs.c, g.h = g.w = cs.h, g.oc = cs.oc, g.kh = g.kw = cs.k, g.sh = g.sw = cs.s;
    g.pt = g.pb = g.pl = g.pr = cs.p, g.dh = g.dw = cs.d, g.groups = cs.g;
    const int64_t ek = cs.d * (cs.k - 1) + 1;
    g.oh = g.ow = (cs.h + 2 * cs.p - ek) / cs.s + 1;
    Tensor x = random_ints<uint8_t>({g.n, g.c, g.h, g.w}, DType::uint8, 0, 255, rng);
    Tensor w = random_ints<int8_t>({g.oc, g.c / g.groups, g.kh, g.kw}, DType::int8, -63, 63, rng);
    Tensor b = Tensor::empty({g.oc}, DType::float32);
    for (int64_t o = 0; o < g.oc; ++o) b.data<float>()[o] = 0.1f * static_cast<float>(o % 5) - 0.2f;
    for (bool relu : {false, true})
      for (DType out : {DType::float32, DType::uint8}) {
        const QuantSpec q = spec(g.oc, cs.xzp, relu, rng);
        Tensor y = Tensor::empty({g.n, g.oc, g.oh, g.ow}, out),
               r = Tensor::empty({g.n, g.oc, g.oh, g.ow}, out);
        Int8Path path;
        qconv2d(x, w, &b, y, g, q, false, &path);
        EXPECT_EQ(path.kind, Int8Path::Kind::kOneDnn) << path.name();  // 7-bit weights
        EXPECT_EQ(path.name().rfind("onednn:", 0), 0u) << path.name();
        qconv2d_ref(x, w, &b, r, g, q);
        expect_close(y, r);
      }
  }
}

TEST(QuantKernels, DenseMatchesReference) {
  std::mt19937 rng(8);
  for (int64_t m : {1, 3, 7}) {
    const int64_t k = 50, n = 9;
    Tensor x = random_ints<uint8_t>({m, k}, DType::uint8, 0, 255, rng);
    Tensor w = random_ints<int8_t>({n, k}, DType::int8, -63, 63, rng);
    for (int32_t xzp : {0, 17}) {
      const QuantSpec q = spec(n, xzp, true, rng);
      Tensor y = Tensor::empty({m, n}, DType::float32), r = Tensor::empty({m, n}, DType::float32);
      Int8Path path;
      qdense(x, w, nullptr, y, m, k, n, q, false, &path);
      EXPECT_EQ(path.kind, m <= 4 ? Int8Path::Kind::kRows : Int8Path::Kind::kOneDnn) << path.name();
      qdense_ref(x, w, nullptr, r, m, k, n, q);
      expect_close(y, r);
    }
  }
}

TEST(QuantKernels, EightBitWeightsStayExactWithoutVnni) {
  // 255 * 127 + 255 * 127 overflows int16: without VNNI oneDNN would saturate, so the kernel
  // must take the exact loops instead.
  WindowGeom g;
  g.n = 1, g.c = 2, g.h = g.w = 1, g.oc = 1, g.oh = g.ow = 1;
  Tensor x = Tensor::empty({1, 2, 1, 1}, DType::uint8),
         w = Tensor::empty({1, 2, 1, 1}, DType::int8);
  x.data<uint8_t>()[0] = x.data<uint8_t>()[1] = 255;
  w.data<int8_t>()[0] = w.data<int8_t>()[1] = 127;
  EXPECT_EQ(int8_weights_safe(w), cpu_has_vnni());
  QuantSpec q;
  q.w_scale = {1.0f};
  Tensor y = Tensor::empty({1, 1, 1, 1}, DType::float32);
  Int8Path path;
  qconv2d(x, w, nullptr, y, g, q, true, &path);
  EXPECT_EQ(y.data<float>()[0], 64770.0f);
  // exact for 8-bit weights on any CPU: oneDNN's VNNI sums in int32, else the small loops
  EXPECT_EQ(path.kind, cpu_has_vnni() ? Int8Path::Kind::kOneDnn : Int8Path::Kind::kSmall);
  g.n = 2, g.h = g.w = g.oh = g.ow = 4, g.oc = 70;  // too many outputs for the small path
  x = Tensor::empty({2, 2, 4, 4}, DType::uint8);
  w = Tensor::empty({70, 2, 1, 1}, DType::int8);
  std::fill_n(x.data<uint8_t>(), x.numel(), uint8_t{255});
  std::fill_n(w.data<int8_t>(), w.numel(), int8_t{127});
  q.w_scale.assign(70, 1.0f);
  y = Tensor::empty({2, 70, 4, 4}, DType::float32);
  qconv2d(x, w, nullptr, y, g, q, true, &path);
  EXPECT_EQ(path.kind, cpu_has_vnni() ? Int8Path::Kind::kOneDnn : Int8Path::Kind::kReference);
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.data<float>()[i], 64770.0f) << i;
}

}  // namespace
}  // namespace mycel::cpu
