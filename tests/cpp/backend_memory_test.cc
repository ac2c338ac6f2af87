// Memory planning: best-fit offsets checked by brute force, sharing across disjoint lifetimes,
// and a chain's arena smaller than the sum of its intermediates.
#include <gtest/gtest.h>

#include <random>

#include "backend_util.h"
#include "mycel/backend/memory_plan.h"

namespace mycel::backend::detail {
namespace {

size_t aligned(size_t n) { return (n + kBufferAlign - 1) / kBufferAlign * kBufferAlign; }

// No two buffers live at the same time overlap in memory, and all fit in the total.
void check_plan(const std::vector<BufferReq>& bufs, const MemoryPlan& p) {
  ASSERT_EQ(p.offsets.size(), bufs.size());
  for (size_t a = 0; a < bufs.size(); ++a) {
    EXPECT_EQ(p.offsets[a] % kBufferAlign, 0u);
    EXPECT_LE(p.offsets[a] + aligned(bufs[a].size), p.total);
    for (size_t b = a + 1; b < bufs.size(); ++b) {
      bool live_together = bufs[a].start <= bufs[b].end && bufs[b].start <= bufs[a].end;
      bool overlap = p.offsets[a] < p.offsets[b] + aligned(bufs[b].size) &&
                     p.offsets[b] < p.offsets[a] + aligned(bufs[a].size);
      EXPECT_FALSE(live_together && overlap && bufs[a].size && bufs[b].size)
          << "buffers " << a << " and " << b << " overlap while both live";
    }
  }
}

TEST(MemoryPlan, RandomPlansNeverOverlapLiveBuffers) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferReq> bufs(1 + rng() % 40);
    for (auto& b : bufs) {
      b.size = rng() % 5000;
      b.start = static_cast<int>(rng() % 50);
      b.end = b.start + static_cast<int>(rng() % 10);
    }
    MemoryPlan p = plan_memory(bufs);
    check_plan(bufs, p);
    size_t sum = 0, peak = 0;
    for (auto& b : bufs) sum += aligned(b.size);
    for (int t = 0; t < 60; ++t) {  // the total is between the peak of live bytes and the sum
      size_t live = 0;
      for (auto& b : bufs) live += (b.start <= t && t <= b.end) ? aligned(b.size) : 0;
      peak = std::max(peak, live);
    }
    EXPECT_LE(p.total, sum);
    EXPECT_GE(p.total, peak);
  }
}

TEST(MemoryPlan, DisjointLifetimesShareOffsets) {
  // a chain: each buffer lives from its definition to the next instruction.
  std::vector<BufferReq> bufs;
  for (int i = 0; i < 6; ++i) bufs.push_back({1024, i, i + 1});
  MemoryPlan p = plan_memory(bufs);
  check_plan(bufs, p);
  EXPECT_EQ(p.total, 2048u) << "two buffers alive at a time";
  EXPECT_EQ(p.offsets[0], p.offsets[2]);
  EXPECT_EQ(p.offsets[1], p.offsets[3]);
}

TEST(MemoryPlan, TotalEqualsThePeakWhenBuffersPack) {
  // 3 takes the place 1 leaves, so the arena is the peak of live bytes.
  std::vector<BufferReq> bufs = {{4096, 0, 10}, {1024, 0, 1}, {4096, 0, 10}, {1024, 2, 10}};
  MemoryPlan p = plan_memory(bufs);
  check_plan(bufs, p);
  EXPECT_EQ(p.total, 9216u);
}

using namespace mycel::backend::testing;

TEST(MemoryPlan, ChainArenaIsSmallerThanItsIntermediates) {
  // x -> exp -> matmul(w) -> tanh -> matmul(w) -> sigmoid -> matmul(w): matmuls never run in place.
  Module m;
  FuncGraph* g = m.add_graph("chain");
  NodePtr x = param(g, "x", tensor_abs({32, 32}));
  NodePtr w = param(g, "w", tensor_abs({32, 32}));
  NodePtr h = op(g, "exp", {x});
  h = op(g, "matmul", {h, w});
  h = op(g, "tanh", {h});
  h = op(g, "matmul", {h, w});
  h = op(g, "sigmoid", {h});
  g->set_output(op(g, "matmul", {h, w}));
  auto prog = compile(*g);
  const size_t one = 32 * 32 * 4;
  ProgramStats s = prog->stats();
  EXPECT_LT(s.arena_bytes, 6 * one);
  EXPECT_LE(s.arena_bytes, 2 * one) << prog->dump();
  Tensor X = randn({32, 32}, 1), W = randn({32, 32}, 2);
  Tensor ref = X;
  ref = eager("exp", {ref})[0];
  ref = eager("matmul", {ref, W})[0];
  ref = eager("tanh", {ref})[0];
  ref = eager("matmul", {ref, W})[0];
  ref = eager("sigmoid", {ref})[0];
  ref = eager("matmul", {ref, W})[0];
  expect_same(prog->run({X, W})[0], ref);

  // The function's frame, checked by brute force: live registers' buffers never overlap.
  ProgramImpl& p = prog->impl();
  FrameLayout L = plan_frame(p.fns[0], p.plan->fns[0].meta);
  check_plan(L.buffers, plan_memory(L.buffers));
}

}  // namespace
}  // namespace mycel::backend::detail
