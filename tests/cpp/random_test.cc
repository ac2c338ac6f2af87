// The Philox generator against Random123's known answers, and the global generator's state.
#include "mycel/core/random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "mycel/core/parallel.h"
#include "mycel/ops/registry.h"

namespace mycel {
namespace {

// Known-answer vectors of Random123 (Salmon et al., SC'11), tests/kat_vectors, "philox4x32 10":
// counter (4 words), key (2 words), expected output (4 words).
TEST(Philox, KnownAnswers) {
  struct Kat {
    std::array<uint32_t, 4> ctr;
    std::array<uint32_t, 2> key;
    std::array<uint32_t, 4> want;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) EXPECT_EQ(philox4x32_10(k.ctr, k.key), k.want);
}

TEST(Philox, StreamBlockLayout) {
  // block(j, sub) = philox({lo(offset + j), hi(offset + j), sub, 0}, {lo(key), hi(key)}).
  PhiloxStream s{0x299f31d0a4093822ull, 0xffffffffull};
  EXPECT_EQ(s.block(1, 7), philox4x32_10({0, 1, 7, 0}, {0xa4093822, 0x299f31d0}));
}

TEST(Generator, ReserveAdvancesAndSeedResets) {
  Generator& g = Generator::global();
  auto saved = g.state();
  g.set_seed(42);
  PhiloxStream a = g.reserve(10);
  PhiloxStream b = g.reserve(5);
  EXPECT_EQ(a.key, 42u);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b.offset, 10u);
  EXPECT_EQ(g.state()[1], 15u);
  g.set_seed(42);
  EXPECT_EQ(g.reserve(1).offset, 0u);
  g.set_state(saved[0], saved[1]);
}

TEST(Generator, ConcurrentReservationsDoNotOverlap) {
  Generator& g = Generator::global();
  auto saved = g.state();
  g.set_seed(1);
  std::vector<std::vector<uint64_t>> got(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) got[t].push_back(g.reserve(3).offset);
    });
  for (auto& t : ts) t.join();
  std::vector<uint64_t> all;
  for (auto& v : got) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], 3 * i);
  g.set_state(saved[0], saved[1]);
}

TEST(Generator, OpSeedsRepeatAndGlobalDoesNot) {
  PhiloxStream a = op_stream(3, 4, 100), b = op_stream(3, 4, 100), c = op_stream(3, 5, 100);
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_NE(a.key, c.key);
  PhiloxStream g1 = op_stream(0, 0, 100), g2 = op_stream(0, 0, 100);
  EXPECT_EQ(g2.offset, g1.offset + 100);
}

TEST(RandomOps, SameForAnyThreadCount) {
  int saved = num_threads();
  std::vector<std::vector<double>> runs;
  for (int nt : {1, 2, 3}) {
    set_num_threads(nt);
    Tensor t =
        call_op("normal", {}, {{"shape", std::vector<int64_t>{70001}}, {"seed", int64_t(9)}})[0];
    runs.emplace_back();
    for (int64_t i = 0; i < t.numel(); i += 997) runs.back().push_back(t.item_as_double(i));
  }
  set_num_threads(saved);
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
}

}  // namespace
}  // namespace mycel
