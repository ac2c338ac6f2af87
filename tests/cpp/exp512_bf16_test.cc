// The bf16 softmax's exp (kernels/cpu/exp512_bf16.h) against double's exp over the float inputs
// of its range [-87.3, 0] (normal results): every 61st float (18 million) by default, every one
// of the 1.1e9 with MYCEL_EXP_EXHAUSTIVE=1 (a measurement). Its bound, 7e-6 relative, is what
// lets the softmax round its weights to bf16 (half an ulp is 2^-9 = 1.95e-3 relative) as an
// exact exp would but for values within 7e-6 of a rounding boundary. Also the denormal tail,
// -inf and NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "mycel/core/cpu_features.h"

#if MYCEL_AVX512_KERNELS
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
#include "mycel/kernels/cpu/exp512_bf16.h"

namespace mycel {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// exp16_nonpositive_bf16 of 16 floats.
void exp16(const float* d, float* out) {
  _mm512_storeu_ps(out, cpu::exp512::exp16_nonpositive_bf16(_mm512_loadu_ps(d)));
}

// The largest relative error over the floats -from_bits(u) for u in [0, end) step `stride`.
double max_rel_error(uint32_t end, uint32_t stride, float* worst) {
  double max_err = 0;
  float d[16], e[16];
  int k = 0;
  auto flush = [&] {
    exp16(d, e);
    for (int i = 0; i < k; ++i) {
      const double ref = std::exp(static_cast<double>(d[i]));
      const double err = std::fabs(e[i] - ref) / ref;
      if (err > max_err) max_err = err, *worst = d[i];
    }
    k = 0;
  };
  for (uint64_t u = 0; u < end; u += stride) {
    d[k++] = -from_bits(static_cast<uint32_t>(u));
    if (k == 16) flush();
  }
  if (k) {
    for (int i = k; i < 16; ++i) d[i] = 0.f;
    flush();
  }
  return max_err;
}

TEST(Exp512Bf16, RelativeErrorOverTheFloatRange) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "no AVX-512";
  // -87.33: the smallest d whose exp is a normal float.
  uint32_t end;
  const float lo = 87.33f;
  std::memcpy(&end, &lo, 4);
  const char* v = std::getenv("MYCEL_EXP_EXHAUSTIVE");
  const uint32_t stride = v && *v == '1' ? 1 : 61;
  float worst = 0;
  const double err = max_rel_error(end + 1, stride, &worst);
  std::printf("[exp512_bf16] max relative error %.3g at d = %.9g (stride %u)\n", err, worst,
              stride);
  EXPECT_LT(err, 7.0e-6);
  EXPECT_GT(err, 1.0e-7);  // the polynomial's own error shows: the sample reaches its extrema
}

TEST(Exp512Bf16, DenormalTailInfinityAndNaN) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "no AVX-512";
  const float inf = std::numeric_limits<float>::infinity();
  float d[16] = {-87.5f, -90.f, -95.f, -100.f, -103.f,        -104.f,  -110.f, -150.f,
                 -1e30f, -inf,  0.f,   -0.f,   std::nanf(""), -1e-30f, -1e-7f, -0.5f};
  float e[16];
  exp16(d, e);
  for (int i = 0; i < 16; ++i) {
    if (std::isnan(d[i])) {
      EXPECT_TRUE(std::isnan(e[i]));
      continue;
    }
    const double ref = std::exp(static_cast<double>(d[i]));
    // Below 2^-126 float has fewer bits: the error is a few of the smallest denormal (2^-149).
    EXPECT_LE(std::fabs(e[i] - ref), std::max(7.0e-6 * ref, std::ldexp(4.0, -149))) << d[i];
    EXPECT_GE(e[i], 0.f) << d[i];
  }
  EXPECT_EQ(e[9], 0.f);  // -inf: no weight (a masked key)
}

}  // namespace
}  // namespace mycel
#pragma GCC pop_options
#endif
