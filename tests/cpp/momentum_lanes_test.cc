// Momentum's update as one register loop (kernels/cpu/momentum_lanes.h): which chains it
// recognises (operand orders, broadcast and full inputs, output order), and its results against
// the chain interpreter bit for bit and a double-precision reference, on lengths with vector
// tails, in place (outputs over v and w) and into separate buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "mycel/kernels/cpu/fused_elementwise_outputs.h"
#include "mycel/kernels/cpu/momentum_lanes.h"

namespace mycel::cpu {
namespace {

// t0=mul(i0,i1); t1=add(t0,i2); t2=mul(i3,t1); t3=sub(i4,t2): nn.Momentum's merged chain with
// v=i0, m=i1, g=i2, lr=i3, w=i4 (the order the graph builds it in).
EwProgram momentum_program(bool swap) {
  EwProgram p;
  p.num_inputs = 5;
  p.steps = {{EwOp::kMul, swap ? 1 : 0, swap ? 0 : 1},
             {EwOp::kAdd, swap ? 2 : 5, swap ? 5 : 2},
             {EwOp::kMul, swap ? 6 : 3, swap ? 3 : 6},
             {EwOp::kSub, 4, 7}};
  return p;
}

const char kFull[5] = {1, 0, 1, 0, 1};

TEST(MomentumLanes, MatchesTheChainInEitherOperandOrder) {
  const int outs[2] = {1, 3};
  for (bool swap : {false, true}) {
    const MomentumLanes mk = match_momentum(momentum_program(swap), kFull, 2, outs);
    ASSERT_TRUE(mk.ok);
    EXPECT_EQ(mk.v, 0);
    EXPECT_EQ(mk.m, 1);
    EXPECT_EQ(mk.g, 2);
    EXPECT_EQ(mk.lr, 3);
    EXPECT_EQ(mk.w, 4);
    EXPECT_EQ(mk.out_v, 0);
    EXPECT_EQ(mk.out_w, 1);
  }
  const int rev[2] = {3, 1};
  const MomentumLanes mk = match_momentum(momentum_program(false), kFull, 2, rev);
  ASSERT_TRUE(mk.ok);
  EXPECT_EQ(mk.out_v, 1);
  EXPECT_EQ(mk.out_w, 0);
}

TEST(MomentumLanes, RefusesOtherChains) {
  const int outs[2] = {1, 3};
  EwProgram p = momentum_program(false);
  const char m_full[5] = {1, 1, 1, 0, 1};  // a per-element momentum
  EXPECT_FALSE(match_momentum(p, m_full, 2, outs).ok);
  const char w_bcast[5] = {1, 0, 1, 0, 0};
  EXPECT_FALSE(match_momentum(p, w_bcast, 2, outs).ok);
  const int other[2] = {0, 3};  // t0 is not v'
  EXPECT_FALSE(match_momentum(p, kFull, 2, other).ok);
  EXPECT_FALSE(match_momentum(p, kFull, 1, outs + 1).ok);
  p.steps[3] = {EwOp::kSub, 7, 4};  // lr*v' - w
  EXPECT_FALSE(match_momentum(p, kFull, 2, outs).ok);
  p = momentum_program(false);
  p.steps[1].op = EwOp::kSub;
  EXPECT_FALSE(match_momentum(p, kFull, 2, outs).ok);
  // Nesterov: w - lr*(g + m*v'), five steps
  p = momentum_program(false);
  p.steps = {{EwOp::kMul, 0, 1}, {EwOp::kAdd, 5, 2}, {EwOp::kMul, 1, 6},
             {EwOp::kAdd, 2, 7}, {EwOp::kMul, 3, 8}, {EwOp::kSub, 4, 9}};
  EXPECT_FALSE(match_momentum(p, kFull, 2, outs).ok);
}

void check(int64_t n, bool in_place) {
  std::mt19937 rng(static_cast<unsigned>(n));
  std::normal_distribution<float> d;
  std::vector<float> v(n), g(n), w(n);
  for (int64_t i = 0; i < n; ++i) v[i] = d(rng), g[i] = d(rng), w[i] = d(rng);
  const float m = 0.9f, lr = 0.0137f;
  const EwProgram p = momentum_program(false);
  const int outs[2] = {1, 3};
  // The interpreter's results into separate buffers (it takes the loop itself unless told not).
  std::vector<float> rv(n), rw(n);
  const float* base[5] = {v.data(), &m, g.data(), &lr, w.data()};
  float* rdst[2] = {rv.data(), rw.data()};
  setenv("MYCEL_MOMENTUM_LANES", "0", 1);
  EXPECT_FALSE(match_momentum(p, kFull, 2, outs).ok);
  run_fused_elementwise_ptrs(p, base, kFull, n, 2, outs, rdst);
  unsetenv("MYCEL_MOMENTUM_LANES");
  const MomentumLanes mk = match_momentum(p, kFull, 2, outs);
  ASSERT_TRUE(mk.ok);
  std::vector<float> v0 = v, w0 = w, ov(n), ow(n);
  float* dst[2] = {in_place ? v.data() : ov.data(), in_place ? w.data() : ow.data()};
  run_momentum_lanes(mk, base, n, dst);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(std::memcmp(&dst[0][i], &rv[i], 4), 0) << "v' at " << i << " of " << n;
    ASSERT_EQ(std::memcmp(&dst[1][i], &rw[i], 4), 0) << "w' at " << i << " of " << n;
    const double vd = double(m) * v0[i] + g[i], wd = w0[i] - double(lr) * vd;
    EXPECT_NEAR(dst[0][i], vd, 1e-6 * (1 + std::fabs(vd)));
    EXPECT_NEAR(dst[1][i], wd, 1e-6 * (1 + std::fabs(wd)));
  }
  if (!in_place) {  // the inputs are left alone
    EXPECT_EQ(v, v0);
    EXPECT_EQ(w, w0);
  }
}

TEST(MomentumLanes, EqualsTheInterpreterBitForBit) {
  for (int64_t n : {1, 7, 16, 23, 512, 1000, 200704 + 9})
    for (bool in_place : {false, true}) check(n, in_place);
}

// The chain runner's own entry takes the loop on its blocks (and threads): the same bits as the
// interpreter, tails of blocks and vectors included.
TEST(MomentumLanes, ChainRunnerTakesTheLoop) {
  for (int64_t n : {5, 512 * 3 + 11, 70000 + 3}) {
    std::mt19937 rng(static_cast<unsigned>(n));
    std::normal_distribution<float> d;
    std::vector<float> v(n), g(n), w(n);
    for (int64_t i = 0; i < n; ++i) v[i] = d(rng), g[i] = d(rng), w[i] = d(rng);
    const float m = 0.5f, lr = 0.25f;
    const float* base[5] = {v.data(), &m, g.data(), &lr, w.data()};
    const int outs[2] = {3, 1};  // w' first
    std::vector<float> a0(n), a1(n), b0(n), b1(n);
    float* da[2] = {a0.data(), a1.data()};
    float* db[2] = {b0.data(), b1.data()};
    run_fused_elementwise_ptrs(momentum_program(true), base, kFull, n, 2, outs, da);
    setenv("MYCEL_MOMENTUM_LANES", "0", 1);
    run_fused_elementwise_ptrs(momentum_program(true), base, kFull, n, 2, outs, db);
    unsetenv("MYCEL_MOMENTUM_LANES");
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(std::memcmp(&a0[i], &b0[i], 4), 0) << i;
      ASSERT_EQ(std::memcmp(&a1[i], &b1[i], 4), 0) << i;
      const double vd = double(m) * v[i] + g[i];
      EXPECT_NEAR(a1[i], vd, 1e-6 * (1 + std::fabs(vd)));
      EXPECT_NEAR(a0[i], w[i] - double(lr) * vd, 1e-6 * (1 + std::fabs(vd)));
    }
  }
}

}  // namespace
}  // namespace mycel::cpu
