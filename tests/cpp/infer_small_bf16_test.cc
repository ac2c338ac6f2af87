// infer_small_bf16.h's loops against references written here: rounding to bf16 by choosing the
// nearer of the two neighbouring bf16 values in double precision (ties to the even one), on
// random values, exact ties, NaN, infinities, subnormals and values that round up to infinity;
// the add with relu/relu6 and the mean over H and W against double sums rounded the same way.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "mycel/kernels/cpu/infer_small_bf16.h"

namespace mycel {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float widen(uint16_t b) { return from_bits(uint32_t(b) << 16); }

// The nearer of the bf16 values just below and above |f| (ties: the even one), compared in
// double; infinity counts as 2^128 (the next step after the largest finite value). NaN: 0x7fc0.
uint16_t round_ref(double v) {
  const float f = static_cast<float>(v);  // float first, as the kernels compute in float
  if (std::isnan(f)) return 0x7fc0;
  const uint32_t u = to_bits(f);
  const uint16_t lo = static_cast<uint16_t>(u >> 16);
  if ((u & 0xffff) == 0) return lo;
  const uint16_t hi = static_cast<uint16_t>(lo + 1);  // the next magnitude, same sign
  auto value = [](uint16_t b) {
    const float w = widen(b);
    return std::isinf(w) ? std::copysign(std::ldexp(1.0, 128), w) : double(w);
  };
  const double dl = std::abs(value(lo) - f), dh = std::abs(value(hi) - f);
  if (dl != dh) return dl < dh ? lo : hi;
  return (lo & 1) ? hi : lo;
}

bool same(uint16_t got, uint16_t want) {
  if (std::isnan(widen(want))) return std::isnan(widen(got)) && (got & 0x40);  // quiet
  return got == want;
}

std::vector<float> inputs() {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any;
  std::vector<float> v;
  for (int i = 0; i < 4000; ++i) v.push_back(from_bits(any(rng)));  // every exponent, NaNs too
  for (int i = 0; i < 1000; ++i)                                    // exact ties, both parities
    v.push_back(from_bits((any(rng) & 0xffff0000u) | 0x8000u));
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {0.f, -0.f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(), from_bits(0x7f7fffffu),
                  from_bits(0x7f7f8000u), from_bits(0xff7fffffu), 1.f, -1.5f})
    v.push_back(f);
  v.push_back(from_bits(0x7f800001u));  // signalling NaN
  return v;
}

TEST(InferSmallBf16, CastRoundsToNearestEven) {
  const std::vector<float> x = inputs();
  std::vector<uint16_t> y(x.size());
  cpu::cast_f32_to_bf16(x.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_TRUE(same(y[i], round_ref(x[i])))
        << "x bits " << std::hex << to_bits(x[i]) << " got " << y[i] << " want " << round_ref(x[i]);
}

TEST(InferSmallBf16, AddActAndMean) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 4.f);
  const int64_t count = 1000 + 5;  // a tail after the 8-wide steps
  std::vector<uint16_t> a(count), b(count), y(count);
  for (int64_t i = 0; i < count; ++i) {
    a[i] = round_ref(nd(rng));
    b[i] = round_ref(nd(rng));
  }
  for (cpu::SmallAct act : {cpu::SmallAct::kNone, cpu::SmallAct::kRelu, cpu::SmallAct::kRelu6}) {
    cpu::add_act_bf16(a.data(), b.data(), y.data(), count, act);
    for (int64_t i = 0; i < count; ++i) {
      double s = double(widen(a[i])) + widen(b[i]);  // exact in float too (8-bit mantissas)
      if (act != cpu::SmallAct::kNone) s = std::max(s, 0.0);
      if (act == cpu::SmallAct::kRelu6) s = std::min(s, 6.0);
      ASSERT_EQ(y[i], round_ref(s)) << i;
    }
  }
  // Mean over 7x7 positions of (1, 100, 7, 7) in NHWC (block = 100) and in nChw16c.
  const int64_t c = 100, hw = 49;
  for (int64_t block : {c, int64_t(16)}) {
    const int64_t cb = (c + block - 1) / block;
    std::vector<uint16_t> x(cb * hw * block, 0), m(c);
    for (auto& v : x) v = round_ref(nd(rng));
    cpu::mean_hw_bf16(x.data(), m.data(), 1, c, hw, block);
    for (int64_t ch = 0; ch < c; ++ch) {
      double s = 0;
      for (int64_t p = 0; p < hw; ++p) s += widen(x[(ch / block * hw + p) * block + ch % block]);
      // float32 sums: within a bf16 unit of the rounded exact mean
      EXPECT_NEAR(widen(m[ch]), s / hw, std::abs(s / hw) * 0x1p-7 + 1e-6) << ch;
    }
  }
}

TEST(InferSmallBf16, DenseRowsMatchDoubleSums) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto [m, k, n] : {std::array<int64_t, 3>{1, 1280, 1000}, {3, 37, 70}, {2, 5, 3}}) {
    Tensor w = Tensor::empty({n, k}, DType::bfloat16);
    uint16_t* W = static_cast<uint16_t*>(w.data());
    std::vector<uint16_t> x(m * k), bias(n), y(m * n);
    for (int64_t i = 0; i < n * k; ++i) W[i] = round_ref(nd(rng));
    for (auto& v : x) v = round_ref(nd(rng));
    for (auto& v : bias) v = round_ref(nd(rng));
    const Tensor packed = cpu::pack_dense_rows_bf16(w);
    for (cpu::SmallAct act : {cpu::SmallAct::kNone, cpu::SmallAct::kRelu6}) {
      cpu::dense_rows_bf16(x.data(), static_cast<const uint16_t*>(packed.data()), bias.data(),
                           y.data(), m, k, n, act);
      for (int64_t r = 0; r < m; ++r)
        for (int64_t o = 0; o < n; ++o) {
          double s = widen(bias[o]), mag = std::abs(s);
          for (int64_t j = 0; j < k; ++j) {
            s += double(widen(x[r * k + j])) * widen(W[o * k + j]);
            mag += std::abs(double(widen(x[r * k + j])) * widen(W[o * k + j]));
          }
          if (act != cpu::SmallAct::kNone) s = std::min(std::max(s, 0.0), 6.0);
          // one bf16 rounding of the result plus float32 sums' error
          ASSERT_NEAR(widen(y[r * n + o]), s, std::abs(s) * 0x1p-8 + mag * 1e-6) << r << " " << o;
        }
    }
  }
}

}  // namespace
}  // namespace mycel
