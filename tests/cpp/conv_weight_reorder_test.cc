// conv_weight_reorder's loops against oneDNN's reorders (the reference they replace), byte for
// byte: bf16 weights into the convolution layouts (padding zero), and the split weight
// gradient's float32 partials added and rounded into plain bf16, special values included
// (subnormals flush, NaN, infinities, halfway cases), over odd shapes and 1-3 threads.
#include "mycel/kernels/cpu/conv_weight_reorder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace mycel::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;

dnnl::engine& eng() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

void reorder(const memory::desc& from, const void* src, const memory::desc& to, void* dst) {
  dnnl::stream s(eng());
  memory a(from, eng(), const_cast<void*>(src)), b(to, eng(), dst);
  dnnl::reorder(a, b).execute(s, a, b);
  s.wait();
}

struct Case {
  memory::dims dims;
  tag blocked;
};

// ResNet-18's layouts (forward AcdB{32,48,64}a2b, backward-data ABcd8a16b2a, the weight
// gradient's ABcd16b16a and Acdb16a) on shapes with channels off the blocks, 1x1, 5x5, groups.
const Case kCases[] = {{{64, 64, 3, 3}, tag::AcdB64a2b},
                       {{512, 256, 1, 1}, tag::AcdB48a2b},
                       {{64, 3, 3, 3}, tag::AcdB64a2b},
                       {{40, 13, 5, 5}, tag::AcdB32a2b},
                       {{256, 128, 3, 3}, tag::ABcd8a16b2a},
                       {{20, 7, 3, 3}, tag::ABcd8a16b2a},
                       {{128, 64, 3, 3}, tag::ABcd16b16a},
                       {{17, 33, 1, 1}, tag::ABcd16b16a},
                       {{30, 18, 5, 5}, tag::ABcd16b16a},
                       {{64, 3, 3, 3}, tag::Acdb16a},
                       {{9, 3, 7, 7}, tag::Acdb16a},
                       {{2, 16, 24, 3, 3}, tag::aBCde16c16b},
                       {{3, 20, 10, 3, 3}, tag::gOIhw16i16o},
                       // the register-tile paths: 1x1, 3x1, 2x2, 3x3; N of AcdBNa2b 16-64
                       {{128, 64, 1, 1}, tag::AcdB64a2b},
                       {{96, 32, 3, 3}, tag::AcdB48a2b},
                       {{32, 48, 3, 1}, tag::AcdB16a2b},
                       {{64, 16, 2, 2}, tag::AcdB32a2b},
                       {{32, 64, 1, 1}, tag::ABcd8a16b2a},
                       {{48, 32, 2, 2}, tag::ABcd8a16b2a},
                       {{64, 32, 1, 1}, tag::ABcd16b16a},
                       {{32, 48, 3, 1}, tag::ABcd16b16a},
                       {{48, 16, 2, 2}, tag::ABcd16b16a},
                       {{16, 16, 3, 3}, tag::ABcd16b16a}};

uint16_t random_bits(std::mt19937& rng) { return static_cast<uint16_t>(rng() & 0xffff); }

TEST(ConvWeightReorder, Plain16BitToBlockedMatchesOneDnn) {
  std::mt19937 rng(7);
  // bf16 and f16 alike (the loops move 16-bit words): random bits, NaN patterns included for
  // bf16. oneDNN's f16 reorders into padded layouts (simple:any) go through float32 and rewrite
  // NaNs and -0 as +0: f16 gets neither (ours keeps the bits)
  for (const auto dt : {memory::data_type::bf16, memory::data_type::f16})
    for (const Case& c : kCases) {
      const memory::desc plain(c.dims, dt, c.dims.size() == 5 ? tag::goihw : tag::oihw);
      const memory::desc blocked(c.dims, dt, c.blocked);
      auto w = WeightBlocking::make(blocked);
      ASSERT_TRUE(w) << "tag " << static_cast<int>(c.blocked);
      ASSERT_EQ(w->plain_elems() * 2, static_cast<int64_t>(plain.get_size()));
      ASSERT_EQ(w->blocked_elems() * 2, static_cast<int64_t>(blocked.get_size()));
      std::vector<uint16_t> src(w->plain_elems());
      for (auto& v : src) {
        v = random_bits(rng);
        if (dt == memory::data_type::f16 && (v & 0x7c00) == 0x7c00) v &= 0xfbff;  // no Inf/NaN
        if (dt == memory::data_type::f16 && v == 0x8000) v = 0;
      }
      std::vector<uint16_t> want(w->blocked_elems(), 0x5555);
      reorder(plain, src.data(), blocked, want.data());
      for (int threads = 1; threads <= 3; ++threads) {
        std::vector<uint16_t> got(w->blocked_elems(), 0xAAAA);  // the padding must be written
        weights_to_blocked(*w, src.data(), got.data(), threads);
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 2))
            << "tag " << static_cast<int>(c.blocked) << " dims " << c.dims[0] << "x" << c.dims[1]
            << " f16 " << (dt == memory::data_type::f16) << " threads " << threads;
      }
    }
}

// Random floats of all magnitudes, with subnormals, zeros, infinities, NaNs and values halfway
// between two bf16 numbers (the rounding's ties) mixed in.
float random_float(std::mt19937& rng) {
  const uint32_t r = rng();
  uint32_t u;
  switch (r % 8) {
    case 0:  // subnormal
      u = (rng() & 0x807fffffu);
      break;
    case 1:  // a tie: the low 16 bits exactly half
      u = (rng() & 0xffff0000u) | 0x8000u;
      if ((u & 0x7f800000u) == 0x7f800000u) u &= 0xbfffffffu;
      break;
    case 2: {
      const uint32_t s[] = {0x7f800000u, 0xff800000u, 0x7fc00001u, 0xffa00000u, 0u, 0x80000000u};
      u = s[rng() % 6];
      break;
    }
    default: {
      std::normal_distribution<float> n(0.f, 1.f);
      const float f = n(rng) * std::ldexp(1.f, static_cast<int>(rng() % 40) - 20);
      std::memcpy(&u, &f, 4);
    }
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(ConvWeightReorder, BlockedPartialsSumToPlainBf16AsOneDnn) {
  if (!sum_blocked_to_bf16_available()) GTEST_SKIP() << "no AVX512-BF16 here";
  std::mt19937 rng(11);
  for (const Case& c : kCases) {
    const memory::desc plain(c.dims, memory::data_type::bf16,
                             c.dims.size() == 5 ? tag::goihw : tag::oihw);
    const memory::desc blocked(c.dims, memory::data_type::f32, c.blocked);
    auto w = WeightBlocking::make(blocked);
    ASSERT_TRUE(w);
    const int64_t n = w->blocked_elems();
    for (int T = 1; T <= 3; ++T) {
      std::vector<std::vector<float>> parts(T, std::vector<float>(n));
      for (auto& p : parts)
        for (auto& v : p) v = random_float(rng);
      // The reference: the partials added in order into the first, then oneDNN's reorder.
      std::vector<float> sum = parts[0];
      for (int u = 1; u < T; ++u)
        for (int64_t k = 0; k < n; ++k) sum[k] += parts[u][k];
      std::vector<uint16_t> want(w->plain_elems());
      reorder(blocked, sum.data(), plain, want.data());
      std::vector<const float*> ptrs;
      for (auto& p : parts) ptrs.push_back(p.data());
      for (int threads = 1; threads <= 3; ++threads) {
        std::vector<uint16_t> got(w->plain_elems(), 0xAAAA);
        sum_blocked_to_bf16(*w, ptrs.data(), T, got.data(), threads);
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 2))
            << "tag " << static_cast<int>(c.blocked) << " T " << T << " threads " << threads;
      }
    }
  }
}

TEST(ConvWeightReorder, LayoutsNotWalkedAreRefused) {
  // plain 2-D, and a layout with compensation-free but non-dense strides
  EXPECT_FALSE(WeightBlocking::make(memory::desc({4, 4}, memory::data_type::bf16, tag::ab)));
  const memory::desc strided({4, 4, 3, 3}, memory::data_type::bf16,
                             memory::dims{4 * 4 * 9 * 2, 4 * 9, 3, 1});
  EXPECT_FALSE(WeightBlocking::make(strided));
}

}  // namespace
}  // namespace mycel::cpu
