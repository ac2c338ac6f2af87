// The strategy search against brute force on random cost graphs, the memory limit, and the op
// cost model against closed forms.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "mycel/core/error.h"
#include "mycel/parallel/search/cost_graph.h"
#include "mycel/parallel/search/op_model.h"

namespace mycel::parallel::search {
namespace {

// A random DAG: each node draws 0..3 producers among earlier nodes (parallel edges allowed).
CostGraph random_graph(std::mt19937& rng, int n, int max_s, double edge_scale) {
  std::uniform_int_distribution<int> ns(1, max_s);
  std::uniform_real_distribution<double> u(0, 1);
  CostGraph g;
  for (int v = 0; v < n; ++v) {
    std::vector<Cost> c(ns(rng));
    for (Cost& x : c) x = {u(rng), std::floor(u(rng) * 100)};
    g.add_node("op" + std::to_string(v), c);
    const int preds = v == 0 ? 0 : std::uniform_int_distribution<int>(0, 3)(rng);
    for (int p = 0; p < preds; ++p) {
      const int from = std::uniform_int_distribution<int>(0, v - 1)(rng);
      std::vector<double> m(g.nodes()[from].costs.size() * c.size());
      for (double& x : m) x = u(rng) * edge_scale;
      g.add_edge(from, v, m);
    }
  }
  return g;
}

TEST(StrategySearch, DynamicProgrammingIsOptimalOnRandomGraphs) {
  std::mt19937 rng(7);
  double gap_sum = 0, gap_max = 0;
  int graphs = 0, elims[6] = {0, 0, 0, 0, 0, 0};
  for (int n = 1; n <= 9; ++n)
    for (int rep = 0; rep < 40; ++rep) {
      const CostGraph g = random_graph(rng, n, n <= 6 ? 4 : 3, rep % 2 ? 1.0 : 0.2);
      const Solution bf = brute_force(g, 0);
      const Solution dp = solve(g, SearchMode::kDynamicProgramming, 0);
      ASSERT_TRUE(dp.exact);
      ASSERT_NEAR(dp.time, bf.time, 1e-9 * (1 + bf.time)) << "n=" << n << " rep=" << rep;
      EXPECT_NEAR(g.evaluate(dp.choice).time, dp.time, 1e-12 * (1 + dp.time));
      for (int i = 0; i < 6; ++i) elims[i] += dp.eliminations[i];
      const Solution rec = solve(g, SearchMode::kRecursiveProgramming, 0);
      ASSERT_GE(rec.time, bf.time - 1e-9);
      const double gap = rec.time / bf.time - 1;
      gap_sum += gap, gap_max = std::max(gap_max, gap), ++graphs;
    }
  for (int i = 0; i < 6; ++i) EXPECT_GT(elims[i], 0) << kEliminationNames[i] << " never ran";
  std::printf("recursive_programming vs optimum over %d graphs: mean gap %.2f%%, max %.2f%%\n",
              graphs, 100 * gap_sum / graphs, 100 * gap_max);
}

TEST(StrategySearch, MemoryLimitIsNeverExceeded) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (int rep = 0; rep < 150; ++rep) {
    const CostGraph g = random_graph(rng, 2 + rep % 6, 4, 0.5);
    double lo = 0, hi = 0;
    for (const CostNode& n : g.nodes()) {
      double a = 1e300, b = 0;
      for (const Cost& c : n.costs) a = std::min(a, c.memory), b = std::max(b, c.memory);
      lo += a, hi += b;
    }
    const double limit = lo + u(rng) * (hi - lo) + 0.5;
    const Solution bf = brute_force(g, limit);
    for (SearchMode m : {SearchMode::kDynamicProgramming, SearchMode::kRecursiveProgramming}) {
      const Solution s = solve(g, m, limit);
      ASSERT_LE(s.memory, limit);
      ASSERT_GE(s.time, bf.time - 1e-9);
      for (size_t v = 0; v < g.nodes().size(); ++v)
        ASSERT_LE(g.nodes()[v].costs[s.choice[v]].memory, limit);
    }
  }
}

TEST(StrategySearch, NothingFitsNamesTheOp) {
  CostGraph g;
  g.add_node("conv1", {{1, 10}, {2, 5}});
  g.add_node("fc_huge", {{1, 900}, {3, 700}});
  g.add_edge(0, 1, {0, 1, 1, 0});
  try {
    solve(g, SearchMode::kDynamicProgramming, 600);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'fc_huge'"), std::string::npos) << e.what();
  }
  try {  // every op fits alone but not together
    solve(g, SearchMode::kRecursiveProgramming, 702);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("fc_huge"), std::string::npos) << e.what();
  }
  EXPECT_EQ(solve(g, SearchMode::kDynamicProgramming, 705).choice, (std::vector<int>{1, 1}));
  EXPECT_THROW(g.add_edge(0, 1, {1, 2}), ValueError);
  EXPECT_THROW(g.add_edge(1, 1, {1, 2, 3, 4}), ValueError);
  EXPECT_THROW(g.add_node("bad", {}), ValueError);
}

TEST(StrategySearch, ResidualChainsReduceExactly) {
  // A chain with residual skips (series-parallel, like ResNet and transformer blocks): the
  // eliminations alone solve it, so the result is exact and never worse than the heuristic.
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  CostGraph g;
  for (int v = 0; v < 400; ++v) {
    std::vector<Cost> c(2 + v % 7);
    for (Cost& x : c) x = {u(rng), 1};
    g.add_node("op" + std::to_string(v), c);
    for (int from : {v - 1, v % 3 == 0 ? v - 3 : -1}) {
      if (from < 0) continue;
      std::vector<double> m(g.nodes()[from].costs.size() * c.size());
      for (double& x : m) x = u(rng);
      g.add_edge(from, v, m);
    }
  }
  const Solution dp = solve(g, SearchMode::kDynamicProgramming, 0);
  const Solution rec = solve(g, SearchMode::kRecursiveProgramming, 0);
  EXPECT_TRUE(dp.exact);
  EXPECT_EQ(dp.eliminations[5], 0);  // no star elimination needed
  EXPECT_LE(dp.time, rec.time + 1e-9);
}

ModelSpec mlp(int64_t batch, int64_t in, int64_t out) {
  ModelSpec m;
  OpSpec op;
  op.name = "fc";
  op.kind = "matmul";
  op.dims = {{"n", batch, true, true}, {"o", out}, {"k", in}};
  op.inputs = {{{{0}, {2}}, -1, false}, {{{2}, {1}}, -1, true}};
  op.output = {{{0}, {1}}, -1, false};
  op.flops = 2.0 * batch * in * out;
  m.ops.push_back(op);
  return m;
}

TEST(CostModel, MatMulStrategiesAndClosedFormCosts) {
  Topology t;
  t.devices_per_node = 4;
  t.flops_per_second = 1e12;
  const ModelSpec m = mlp(64, 128, 256);
  const OpStrategies s = enumerate_strategies(m.ops[0], m, t, 4);
  EXPECT_EQ(s.splits.size(), 6u);  // (a, b, c) with a * b * c = 4
  for (size_t i = 0; i < s.splits.size(); ++i) {
    const auto& k = s.splits[i];
    EXPECT_NEAR(s.costs[i].compute, 3 * m.ops[0].flops / 4 / 1e12, 1e-15);
    if (k == std::vector<int64_t>{4, 1, 1}) {
      // Data parallel: the weight's gradient AllReduce over 4 devices (in a fusion bucket: no
      // latency of its own), nothing else.
      const double w = 128.0 * 256 * 4;
      EXPECT_NEAR(s.costs[i].comm, 2 * 0.75 * w * t.intra_node.beta, 1e-15);
      // weight, gradient and momentum; the saved output slice; the input batch slice
      EXPECT_NEAR(s.costs[i].memory, 3 * w + 64.0 / 4 * 256 * 4 + 64.0 / 4 * 128 * 4, 1e-6);
    }
    if (k == std::vector<int64_t>{1, 1, 4}) {
      // Reduction split: forward AllReduce of the whole output; the weight is not replicated.
      const double y = 64.0 * 256 * 4;
      EXPECT_NEAR(s.costs[i].comm, 2 * 3 * t.intra_node.alpha + 2 * 0.75 * y * t.intra_node.beta,
                  1e-15);
    }
  }
}

TEST(CostModel, RedistributionVolumes) {
  Topology t;
  const std::vector<int64_t> shape{64, 32};
  const double full = 64 * 32 * 4;
  EXPECT_EQ(redistribution(shape, {1, 1}, {4, 1}, 4, t).bytes, 0);  // a split is local
  EXPECT_NEAR(redistribution(shape, {4, 1}, {1, 1}, 4, t).bytes, 0.75 * full, 1e-9);  // AllGather
  EXPECT_NEAR(redistribution(shape, {4, 1}, {1, 4}, 4, t).bytes, full / 4 - full / 16, 1e-9);
  EXPECT_NEAR(redistribution(shape, {4, 1}, {1, 1}, 4, t).time,
              3 * t.intra_node.alpha + 0.75 * full * t.intra_node.beta, 1e-15);
}

TEST(CostModel, TopologyFilesAreChecked) {
  const Topology t = parse_topology(R"({"devices_per_node": 4, "flops_per_second": 2e12,
      "memory_per_device_gib": 1, "inter_node": {"latency_us": 10, "bandwidth_gbps": 5}})");
  EXPECT_EQ(t.devices_per_node, 4);
  EXPECT_DOUBLE_EQ(t.inter_node.alpha, 1e-5);
  EXPECT_DOUBLE_EQ(t.inter_node.beta, 1 / 5e9);
  EXPECT_DOUBLE_EQ(t.memory_per_device, 1024.0 * 1024 * 1024);
  EXPECT_THROW(parse_topology("{\"devices_per_nod\": 4}"), ValueError);
  EXPECT_THROW(parse_topology("{\"devices_per_node\": 0}"), ValueError);
  EXPECT_THROW(parse_topology("{\"intra_node\": {\"bandwidth_gbps\": -1}}"), ValueError);
  EXPECT_THROW(parse_topology("[1"), ValueError);
}

}  // namespace
}  // namespace mycel::parallel::search
