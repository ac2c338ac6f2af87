// kernels/cpu/ordered_reduce.h against a reference written from its definition alone: for each
// output, its reduced elements numbered in row-major order of the reduced axes go to lane r mod
// 16 in increasing r, and the lanes fold pairwise (+8, +4, +2, +1). Any thread split of the
// slices gives the same bits; the chain callback sees blocks of at most kOrBlock elements.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "mycel/kernels/cpu/ordered_reduce.h"

namespace mycel::cpu::ored {
namespace {

struct Source {
  const std::vector<float>* values;
  int64_t max_len = 0;
};

void copy_block(void* ctx, int64_t start, int64_t len, float* dst) {
  auto* s = static_cast<Source*>(ctx);
  s->max_len = std::max(s->max_len, len);
  std::memcpy(dst, s->values->data() + start, sizeof(float) * len);
}

float comb(int kind, float a, float v) {
  if (kind == 0) return a + v;
  if (a != a) return a;
  if (v != v) return v;
  return kind == 1 ? (v > a ? v : a) : (v < a ? v : a);
}

// The definition, element by element.
std::vector<float> reference(const std::vector<int64_t>& dims, const std::vector<bool>& red,
                             const std::vector<float>& x, int kind, float divisor) {
  int64_t outs = 1;
  for (size_t d = 0; d < dims.size(); ++d)
    if (!red[d]) outs *= dims[d];
  const float id = kind == 0 ? 0.f : kind == 1 ? -INFINITY : INFINITY;
  std::vector<float> lanes(outs * 16, id);
  std::vector<int64_t> idx(dims.size(), 0);
  for (size_t e = 0; e < x.size(); ++e) {
    int64_t o = 0, r = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (red[d])
        r = r * dims[d] + idx[d];
      else
        o = o * dims[d] + idx[d];
    }
    float& a = lanes[o * 16 + r % 16];
    a = comb(kind, a, x[e]);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  std::vector<float> out(outs);
  for (int64_t o = 0; o < outs; ++o) {
    float* a = &lanes[o * 16];
    for (int w = 8; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) a[l] = comb(kind, a[l], a[l + w]);
    out[o] = divisor > 0 ? a[0] / divisor : a[0];
  }
  return out;
}

void check(const std::vector<int64_t>& dims, const std::vector<bool>& red, int kind, bool mean,
           uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.f, 3.f);
  std::vector<float> x(n);
  for (auto& v : x) v = dist(gen);
  if (n > 5 && kind != 0) x[n / 3] = NAN;  // propagates
  std::vector<unsigned char> r(red.begin(), red.end());
  const or_plan p = or_make_plan(static_cast<int>(dims.size()), dims.data(), r.data());
  const float divisor = mean ? 7.f : 0.f;
  const auto want = reference(dims, red, x, kind, divisor);
  ASSERT_EQ(static_cast<int64_t>(want.size()), p.lead * p.outs);
  for (int64_t parts : {int64_t(1), int64_t(2), int64_t(3), p.lead}) {  // thread splits
    std::vector<float> out(want.size(), 12345.f), chain(n, 0.f);
    Source src{&x};
    for (int64_t t = 0; t < parts; ++t)
      or_run(p, kind, p.lead * t / parts, p.lead * (t + 1) / parts, copy_block, &src, out.data(),
             chain.data(), divisor);
    EXPECT_LE(src.max_len, kOrBlock);
    ASSERT_EQ(0, std::memcmp(out.data(), want.data(), sizeof(float) * want.size()))
        << "kind " << kind << " parts " << parts << " dims[0] " << dims[0];
    ASSERT_EQ(0, std::memcmp(chain.data(), x.data(), sizeof(float) * n));  // written through
  }
}

TEST(OrderedReduce, MatchesItsDefinitionOnEveryPatternOfAxes) {
  uint32_t seed = 1;
  const std::vector<std::pair<std::vector<int64_t>, std::vector<bool>>> cases = {
      {{37, 1029}, {false, true}},                    // rows, longer than a block
      {{130, 7}, {true, false}},                      // a bias gradient (over the batch)
      {{5, 33, 17}, {true, false, true}},             // outer and inner reduced
      {{3, 45, 19}, {false, true, false}},            // the middle axis
      {{2, 3, 5, 7}, {true, true, true, true}},       // everything
      {{4099}, {true}},                               // one long run
      {{61, 1}, {false, true}},                       // an axis of extent 1 reduced
      {{1, 1, 6}, {true, false, false}},              // nothing left to reduce
      {{6, 1, 9, 4}, {false, true, true, false}},     // a unit axis inside a group
      {{3, 17, 2, 5}, {true, false, true, false}},    // alternating
      {{700, 3}, {false, true}},                      // short rows, many per block
      {{16, 64, 128}, {true, true, false}},           // a transformer's bias gradient, sum(0, 1)
      {{2, 33, 7, 48}, {false, true, false, false}},  // two slices, kept axes merged
      {{5, 700}, {true, false}},                      // fewer rows than lanes, rows over a block
  };
  for (const auto& [dims, red] : cases)
    for (int kind = 0; kind < 3; ++kind) check(dims, red, kind, kind == 0 && dims[0] % 2, seed++);
}

}  // namespace
}  // namespace mycel::cpu::ored
