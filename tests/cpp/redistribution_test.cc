// Redistribution plans, run on 4 virtual ranks in one process with the collectives simulated
// from their definitions: every pair among a set of 2-d and 4-d layouts must give each rank
// exactly its slice of the tensor under the target layout. (The same pairs run over real MPI in
// tests/python/test_parallel_redistribution.py.)
#include <gtest/gtest.h>

#include <cstring>

#include "mycel/parallel/redistribution.h"

namespace mycel::parallel {
namespace {

using shard::TensorLayout;
using Ints = std::vector<int64_t>;

Tensor iota(const Shape& s) {
  Tensor x = Tensor::empty(s, DType::float32);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i);
  return x;
}

Tensor slice_of(const Tensor& t, const TensorLayout& l, int64_t rank) {
  return call_op("slice", {t}, {{"begin", l.slice_offset(rank)}, {"size", l.slice_shape()}})[0];
}

// Concatenation along dim 0 of equal-shaped parts.
Tensor cat0(const std::vector<Tensor>& parts) {
  Shape s = parts[0].shape();
  s[0] *= static_cast<int64_t>(parts.size());
  Tensor y = Tensor::empty(s, parts[0].dtype());
  char* dst = static_cast<char*>(y.data());
  for (const Tensor& p : parts) {
    Tensor c = p.clone();
    std::memcpy(dst, c.data(), c.nbytes());
    dst += c.nbytes();
  }
  return y;
}

Ints perm_front(int64_t d, int64_t nd) {
  Ints p = {d};
  for (int64_t i = 0; i < nd; ++i)
    if (i != d) p.push_back(i);
  return p;
}
Ints inverse(const Ints& p) {
  Ints q(p.size());
  for (size_t i = 0; i < p.size(); ++i) q[p[i]] = static_cast<int64_t>(i);
  return q;
}
Tensor transpose(const Tensor& x, const Ints& p) {
  return call_op("transpose", {x}, {{"perm", p}})[0];
}
Tensor cat(const std::vector<Tensor>& parts, int64_t d) {
  const Ints p = perm_front(d, parts[0].ndim());
  std::vector<Tensor> t;
  for (const Tensor& x : parts) t.push_back(transpose(x, p));
  return transpose(cat0(t), inverse(p));
}
Tensor part(const Tensor& x, int64_t d, int64_t n, int64_t k) {
  Ints begin(x.ndim(), 0), size = x.shape();
  size[d] /= n;
  begin[d] = k * size[d];
  return call_op("slice", {x}, {{"begin", begin}, {"size", size}})[0];
}

// One collective step over all ranks, from its definition.
std::vector<Tensor> collective(const std::vector<Tensor>& xs,
                               const std::vector<RedistStep>& steps) {
  std::vector<Tensor> out(xs.size());
  for (size_t r = 0; r < xs.size(); ++r) {
    const RedistStep& s = steps[r];
    std::vector<Tensor> members;
    size_t me = 0;
    for (size_t j = 0; j < s.group.size(); ++j) {
      members.push_back(xs[static_cast<size_t>(s.group[j])]);
      if (s.group[j] == static_cast<int64_t>(r)) me = j;
    }
    const int64_t n = static_cast<int64_t>(members.size());
    auto sum = [&] {
      Tensor acc = members[0];
      for (size_t j = 1; j < members.size(); ++j) acc = call_op("add", {acc, members[j]})[0];
      return acc;
    };
    if (s.op == "all_gather")
      out[r] = cat0(members);
    else if (s.op == "all_reduce")
      out[r] = sum();
    else if (s.op == "reduce_scatter")
      out[r] = part(sum(), 0, n, static_cast<int64_t>(me));
    else if (s.op == "all_to_all") {
      const int64_t sd = std::get<int64_t>(s.attrs.at("split_dim")),
                    cd = std::get<int64_t>(s.attrs.at("concat_dim"));
      std::vector<Tensor> got;
      for (const Tensor& m : members) got.push_back(part(m, sd, n, static_cast<int64_t>(me)));
      out[r] = cat(got, cd);
    } else {
      ADD_FAILURE() << "unexpected step " << s.op;
    }
  }
  return out;
}

// Redistributes on 4 virtual ranks; returns the plan of rank 0.
RedistPlan check_pair(const Tensor& full, const TensorLayout& from, const TensorLayout& to) {
  const int64_t n = from.device.size();
  std::vector<RedistPlan> plans;
  std::vector<Tensor> xs;
  for (int64_t r = 0; r < n; ++r) {
    plans.push_back(plan_redistribution(from, to, r));
    Tensor x = slice_of(full, from, r);
    // A pending sum: rank r holds (r's coordinate-0 term) so the terms add up to the tensor.
    if (!from.partial.empty()) {
      int64_t terms = 1;
      for (int a : from.partial) terms *= from.device.dims[a];
      x = call_op("div", {x, Tensor::scalar(static_cast<double>(terms), DType::float32)})[0];
    }
    xs.push_back(x);
  }
  for (size_t i = 0; i < plans[0].steps.size(); ++i) {
    std::vector<RedistStep> steps;
    for (int64_t r = 0; r < n; ++r) {
      EXPECT_EQ(plans[r].steps.size(), plans[0].steps.size());
      steps.push_back(plans[r].steps.at(i));
    }
    if (steps[0].group.empty())
      for (int64_t r = 0; r < n; ++r) xs[r] = call_op(steps[r].op, {xs[r]}, steps[r].attrs)[0];
    else
      xs = collective(xs, steps);
  }
  for (int64_t r = 0; r < n; ++r) {
    Tensor want = slice_of(full, to, r);
    EXPECT_EQ(xs[r].shape(), want.shape())
        << from.str() << " -> " << to.str() << ": " << plans[r].str();
    if (xs[r].shape() != want.shape()) continue;
    for (int64_t e = 0; e < want.numel(); ++e)
      if (xs[r].item_as_double(e) != want.item_as_double(e)) {
        ADD_FAILURE() << from.str() << " -> " << to.str() << " rank " << r << " elem " << e << ": "
                      << plans[r].str();
        return plans[0];
      }
  }
  return plans[0];
}

TensorLayout L(Ints dev, std::vector<int> map, Shape shape, std::vector<int> partial = {}) {
  return TensorLayout{shard::DeviceMatrix{dev}, map, shape, partial};
}

// The layouts of the round-trip tests: 2-d (8, 8) and 4-d (4, 4, 4, 4) tensors on 4 devices.
std::vector<TensorLayout> layouts_2d() {
  const Shape s = {8, 8};
  return {L({4}, {-1, -1}, s),        L({4}, {0, -1}, s),    L({4}, {-1, 0}, s),
          L({2, 2}, {0, 1}, s),       L({2, 2}, {1, 0}, s),  L({2, 2}, {0, -1}, s),
          L({2, 2}, {-1, 1}, s),      L({4, 1}, {0, -1}, s), L({1, 4}, {-1, 1}, s),
          L({2, 2}, {-1, -1}, s, {0})};
}
std::vector<TensorLayout> layouts_4d() {
  const Shape s = {4, 4, 4, 4};
  return {L({4}, {-1, -1, -1, -1}, s),       L({4}, {0, -1, -1, -1}, s),
          L({4}, {-1, -1, -1, 0}, s),        L({2, 2}, {0, 1, -1, -1}, s),
          L({2, 2}, {-1, -1, 1, 0}, s),      L({2, 2}, {1, -1, -1, -1}, s),
          L({2, 2}, {-1, 0, -1, -1}, s, {1})};
}

TEST(Redistribution, EveryPairOf2dLayoutsRoundTrips) {
  const Tensor full = iota({8, 8});
  for (const TensorLayout& a : layouts_2d())
    for (const TensorLayout& b : layouts_2d()) {
      if (!b.partial.empty()) continue;
      check_pair(full, a, b);
      if (::testing::Test::HasFailure()) return;
    }
}

TEST(Redistribution, EveryPairOf4dLayoutsRoundTrips) {
  const Tensor full = iota({4, 4, 4, 4});
  for (const TensorLayout& a : layouts_4d())
    for (const TensorLayout& b : layouts_4d()) {
      if (!b.partial.empty()) continue;
      check_pair(full, a, b);
      if (::testing::Test::HasFailure()) return;
    }
}

TEST(Redistribution, PicksTheCheapCollectives) {
  const Tensor full = iota({8, 8});
  // Same layout: nothing to do.
  EXPECT_TRUE(check_pair(full, L({4}, {0, -1}, {8, 8}), L({4}, {0, -1}, {8, 8})).steps.empty());
  // A row split becoming a column split is one AlltoAll.
  RedistPlan p = check_pair(full, L({4}, {0, -1}, {8, 8}), L({4}, {-1, 0}, {8, 8}));
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].op, "all_to_all");
  EXPECT_EQ(p.comm_bytes, 2 * 8 * 4);
  // Splitting a replicated tensor needs no communication.
  p = check_pair(full, L({4}, {-1, -1}, {8, 8}), L({2, 2}, {0, 1}, {8, 8}));
  for (const RedistStep& s : p.steps) EXPECT_TRUE(s.group.empty()) << p.str();
  EXPECT_EQ(p.comm_bytes, 0);
  // A pending sum the target splits on the same axis is one ReduceScatter.
  p = check_pair(full, L({4}, {-1, -1}, {8, 8}, {0}), L({4}, {0, -1}, {8, 8}));
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].op, "reduce_scatter");
  // Gathering columns: AllGather on dim 0 between two transposes.
  p = check_pair(full, L({4}, {-1, 0}, {8, 8}), L({4}, {-1, -1}, {8, 8}));
  EXPECT_EQ(p.str(),
            "transpose(perm=(1, 0)) -> all_gather(ranks=(0, 1, 2, 3)) -> transpose(perm=(1, 0))");
}

TEST(Redistribution, DeviceMatricesWithoutCommonRefinement) {
  // [2, 3] and [3, 2] share no chain of strides: the plan goes through the whole tensor.
  const Tensor full = iota({6, 6});
  check_pair(full, L({2, 3}, {0, 1}, {6, 6}), L({3, 2}, {0, 1}, {6, 6}));
}

TEST(Redistribution, BadLayoutsAreRefused) {
  EXPECT_THROW(plan_redistribution(L({4}, {0, -1}, {8, 8}), L({2}, {0, -1}, {8, 8}), 0),
               ValueError);
  EXPECT_THROW(plan_redistribution(L({4}, {0, -1}, {8, 8}), L({4}, {0, -1}, {8, 4}), 0),
               ValueError);
  EXPECT_THROW(plan_redistribution(L({4}, {0, -1}, {6, 8}), L({4}, {-1, -1}, {6, 8}), 0),
               ValueError);
  EXPECT_THROW(plan_redistribution(L({4}, {-1, -1}, {8, 8}), L({4}, {-1, -1}, {8, 8}, {0}), 0),
               ValueError);
}

}  // namespace
}  // namespace mycel::parallel
