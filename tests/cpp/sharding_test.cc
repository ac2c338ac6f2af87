// Sharding rules (ops/sharding.h), checked by simulating the SPMD run in one process: for every
// strategy an op lists on 4 devices, each virtual rank runs the op on its slices (as the plan
// lays them out, with the plan's local attributes), the plan's collectives combine the ranks'
// results, and every rank's output must equal its slice of the op run on the whole tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "mycel/ops/registry.h"

namespace mycel {
namespace {

Tensor random_tensor(const Shape& s, DType t, uint64_t seed, double lo = -1, double hi = 1) {
  Tensor x = Tensor::empty(s, DType::float64);
  uint64_t z = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (int64_t i = 0; i < x.numel(); ++i) {
    z = z * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = static_cast<double>(z >> 11) / 9007199254740992.0;
    x.data<double>()[i] = t == DType::float32 || t == DType::float64
                              ? lo + (hi - lo) * u
                              : std::floor(lo + (hi - lo) * u);
  }
  return x.to(t);
}

Tensor slice_of(const Tensor& t, const shard::TensorLayout& l, int64_t rank) {
  if (t.ndim() == 0) return t;
  std::vector<int64_t> off = l.slice_offset(rank);
  Shape sz = l.slice_shape();
  return call_op("slice", {t}, {{"begin", off}, {"size", sz}})[0];
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.item_as_double(i);
  return v;
}

Tensor from_values(const std::vector<double>& v, const TensorMeta& m) {
  Tensor x = Tensor::empty(m.shape, DType::float64);
  for (size_t i = 0; i < v.size(); ++i) x.data<double>()[i] = v[i];
  return x.to(m.dtype);
}

struct Case {
  std::string op;
  std::vector<Tensor> inputs;  // undefined: an absent optional input
  std::map<std::string, AttrValue> attrs;
};

struct OpSetup {
  const OpDef& op;
  Attrs attrs;
  std::vector<TensorMeta> in_metas, out_metas;
  std::vector<const TensorMeta*> ptrs;
  shard::ShardContext ctx() const { return {op, ptrs, attrs, out_metas, 4}; }
};

std::vector<Tensor> clones(const std::vector<Tensor>& v) {
  std::vector<Tensor> c;
  for (const Tensor& t : v) c.push_back(t.defined() ? t.clone() : Tensor());
  return c;
}

// Runs `s` on 4 virtual ranks and compares with the whole op; returns the plan.
shard::ShardPlan simulate(const Case& k, const OpSetup& u, const shard::Strategy& s) {
  const std::vector<Tensor> full = call_op(u.op, clones(k.inputs), u.attrs);
  shard::ShardPlan p = shard::plan(u.ctx(), s);
  Attrs local = u.attrs;
  for (auto& [name, v] : p.local_int_attrs) local.values()[u.op.attr_index(name)] = v;
  const int64_t n = p.device.size();
  EXPECT_EQ(n, 4);
  std::vector<std::vector<Tensor>> out(n);
  for (int64_t r = 0; r < n; ++r) {
    std::vector<Tensor> ins;
    for (size_t i = 0; i < k.inputs.size(); ++i)
      ins.push_back(k.inputs[i].defined() ? slice_of(k.inputs[i].clone(), p.inputs[i], r)
                                          : Tensor());
    out[r] = call_op(u.op, ins, local);
  }
  for (const shard::Comm& c : p.comms) {
    std::vector<std::vector<double>> combined(n);
    for (int64_t r = 0; r < n; ++r) {
      std::vector<int64_t> g = p.device.group(r, c.axes);
      std::vector<double> acc = values(out[g[0]][c.output]);
      for (size_t j = 1; j < g.size(); ++j) {
        std::vector<double> v = values(out[g[j]][c.output]);
        for (size_t e = 0; e < acc.size(); ++e) {
          if (c.reduce_op == "sum" || c.reduce_op == "mean")
            acc[e] += v[e];
          else if (c.reduce_op == "max")
            acc[e] = std::max(acc[e], v[e]);
          else if (c.reduce_op == "min")
            acc[e] = std::min(acc[e], v[e]);
          else if (c.reduce_op == "prod")
            acc[e] *= v[e];
          else
            ADD_FAILURE() << "unknown reduce_op " << c.reduce_op;
        }
      }
      if (c.reduce_op == "mean")
        for (double& a : acc) a /= static_cast<double>(g.size());
      combined[r] = acc;
    }
    for (int64_t r = 0; r < n; ++r)
      out[r][c.output] = from_values(combined[r], out[r][c.output].meta());
  }
  for (int64_t r = 0; r < n; ++r)
    for (size_t o = 0; o < full.size(); ++o) {
      Tensor want = slice_of(full[o], p.outputs[o], r);
      EXPECT_EQ(out[r][o].shape(), want.shape())
          << k.op << " rank " << r << " output " << o << " " << p.str();
      if (out[r][o].shape() != want.shape()) continue;
      std::vector<double> a = values(out[r][o]), b = values(want);
      for (size_t e = 0; e < a.size(); ++e)
        if (std::abs(a[e] - b[e]) > 1e-4 * (1 + std::abs(b[e]))) {
          ADD_FAILURE() << k.op << " rank " << r << " output " << o << " elem " << e << ": " << a[e]
                        << " vs " << b[e] << ", plan " << p.str();
          return p;
        }
    }
  return p;
}

OpSetup setup(const Case& k) {
  const OpDef& op = Registry::get().at(k.op);
  OpSetup u{op, make_attrs(op, k.attrs), {}, {}, {}};
  for (const Tensor& t : k.inputs) u.in_metas.push_back(t.defined() ? t.meta() : TensorMeta{});
  for (size_t i = 0; i < k.inputs.size(); ++i)
    u.ptrs.push_back(k.inputs[i].defined() ? &u.in_metas[i] : nullptr);
  for (const Tensor& t : call_op(op, clones(k.inputs), u.attrs)) u.out_metas.push_back(t.meta());
  return u;
}

// Every listed strategy of the case simulates exactly; returns how many there were.
size_t check_all(const Case& k) {
  OpSetup u = setup(k);
  std::vector<shard::Strategy> all = shard::strategies(u.ctx());
  for (const shard::Strategy& s : all) {
    SCOPED_TRACE(k.op);
    simulate(k, u, s);
    if (::testing::Test::HasFailure()) return all.size();
  }
  return all.size();
}

Tensor f32(const Shape& s, uint64_t seed) { return random_tensor(s, DType::float32, seed); }
Tensor i32(const Shape& s, uint64_t seed, int64_t hi) {
  return random_tensor(s, DType::int32, seed, 0, hi);
}
using Ints = std::vector<int64_t>;

TEST(Sharding, MatmulRowsColumnsAndReductionDim) {
  EXPECT_GT(check_all({"matmul", {f32({8, 6}, 1), f32({6, 4}, 2)}, {}}), 5u);
  check_all({"matmul", {f32({8, 6}, 1), f32({4, 6}, 2)}, {{"transpose_b", true}}});
  check_all({"matmul", {f32({6, 8}, 1), f32({6, 4}, 2)}, {{"transpose_a", true}}});
  check_all({"matmul", {f32({2, 4, 6}, 3), f32({6, 4}, 4)}, {}});
  check_all({"matmul", {f32({2, 4, 6}, 3), f32({1, 6, 4}, 4)}, {}});
  check_all({"dense", {f32({8, 6}, 5), f32({4, 6}, 6), f32({4}, 7)}, {}});
  check_all({"dense", {f32({8, 6}, 5), f32({4, 6}, 6), Tensor()}, {}});
}

TEST(Sharding, ReductionDimSplitEndsInAllReduce) {
  Case k{"matmul", {f32({8, 8}, 1), f32({8, 4}, 2)}, {}};
  OpSetup u = setup(k);
  shard::ShardPlan p = simulate(k, u, {{2, 2}, {2, 1}});
  ASSERT_EQ(p.comms.size(), 1u);
  EXPECT_EQ(p.comms[0].op, "all_reduce");
  EXPECT_EQ(p.comms[0].reduce_op, "sum");
  EXPECT_EQ(p.device.dims, (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(p.comms[0].axes, (std::vector<int>{1}));
  EXPECT_EQ(p.comms[0].bytes, 4 * 4 * 4);  // the (4, 4) float32 slice of the output
  EXPECT_EQ(p.outputs[0].slice_shape(), (Shape{4, 4}));
  // Row split only: no communication, the output is split like x's rows.
  p = simulate(k, u, {{4, 1}, {1, 1}});
  EXPECT_TRUE(p.comms.empty());
  EXPECT_EQ(p.outputs[0].split_counts(), (shard::Dims{4, 1}));
}

TEST(Sharding, ElementwiseByTraitWithBroadcasting) {
  check_all({"add", {f32({8, 4}, 1), f32({4}, 2)}, {}});
  check_all({"mul", {f32({8, 1}, 1), f32({1, 4}, 2)}, {}});
  check_all({"relu", {f32({8, 4}, 3)}, {}});
  OpSetup u = setup({"add", {f32({8, 1}, 1), f32({1, 4}, 2)}, {}});
  EXPECT_THROW(shard::plan(u.ctx(), {{2, 2}, {1, 2}}), ValueError);  // a broadcast dim never splits
}

TEST(Sharding, Reductions) {
  for (const char* op : {"sum", "mean", "max", "min", "prod"}) {
    check_all({op, {f32({8, 4}, 4)}, {{"axis", Ints{1}}}});
    check_all({op, {f32({8, 4}, 4)}, {{"axis", Ints{0}}, {"keep_dims", true}}});
    check_all({op, {f32({4, 2, 4}, 4)}, {}});
  }
  check_all({"logsumexp", {f32({8, 4}, 4)}, {{"axis", Ints{1}}}});
  OpSetup u = setup({"logsumexp", {f32({8, 4}, 4)}, {{"axis", Ints{1}}}});
  EXPECT_THROW(shard::plan(u.ctx(), {{1, 4}}), ValueError);
}

TEST(Sharding, SoftmaxAndLosses) {
  check_all({"softmax", {f32({8, 4}, 1)}, {}});
  check_all({"log_softmax", {f32({8, 4}, 1)}, {{"axis", int64_t{0}}}});
  OpSetup u = setup({"softmax", {f32({8, 4}, 1)}, {}});
  try {
    shard::plan(u.ctx(), {{1, 4}});
    ADD_FAILURE() << "softmax split along its axis";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[softmax] input 'x' dim 1 cannot be split"),
              std::string::npos)
        << e.what();
  }
  check_all({"softmax_cross_entropy_with_logits",
             {f32({8, 4}, 1), random_tensor({8, 4}, DType::float32, 2, 0, 1)},
             {}});
  for (const char* red : {"mean", "sum", "none"}) {
    check_all({"sparse_softmax_cross_entropy_with_logits",
               {f32({8, 5}, 1), i32({8}, 2, 5)},
               {{"reduction", std::string(red)}}});
    check_all({"mse_loss", {f32({8, 4}, 1), f32({8, 4}, 2)}, {{"reduction", std::string(red)}}});
    check_all({"binary_cross_entropy_with_logits",
               {f32({8, 4}, 1), random_tensor({8, 4}, DType::float32, 2, 0, 1), Tensor(), Tensor()},
               {{"reduction", std::string(red)}}});
  }
  check_all({"nll_loss",
             {f32({8, 5}, 1), i32({8}, 2, 5), random_tensor({5}, DType::float32, 3, 0.5, 1)},
             {{"reduction", std::string("sum")}}});
  // A weighted mean does not combine from slices: the batch stays whole.
  OpSetup nll = setup({"nll_loss", {f32({8, 5}, 1), i32({8}, 2, 5), Tensor()}, {}});
  EXPECT_EQ(shard::strategies(nll.ctx()).size(), 1u);
  EXPECT_THROW(shard::plan(nll.ctx(), {{4, 1}, {4}, {}}), ValueError);
}

TEST(Sharding, ConvNormsGathers) {
  EXPECT_GT(check_all({"conv2d", {f32({4, 4, 5, 5}, 1), f32({8, 4, 3, 3}, 2), f32({8}, 3)}, {}}),
            3u);
  // Without a bias the input channels split too (partial sums and an AllReduce).
  EXPECT_GT(check_all({"conv2d",
                       {f32({4, 4, 5, 5}, 1), f32({8, 4, 3, 3}, 2), Tensor()},
                       {{"pad_mode", std::string("same")}}}),
            check_all({"conv2d",
                       {f32({4, 4, 5, 5}, 1), f32({8, 4, 3, 3}, 2), f32({8}, 3)},
                       {{"pad_mode", std::string("same")}}}));
  OpSetup conv = setup({"conv2d", {f32({4, 4, 5, 5}, 1), f32({8, 4, 3, 3}, 2), Tensor()}, {}});
  EXPECT_THROW(shard::plan(conv.ctx(), {{1, 1, 2, 1}, {1, 1, 1, 1}, {}}),
               ValueError);  // image rows
  for (bool training : {true, false})
    check_all({"batch_norm",
               {f32({4, 4, 3, 3}, 1), f32({4}, 2), f32({4}, 3), f32({4}, 4),
                random_tensor({4}, DType::float32, 5, 0.5, 1.5)},
               {{"is_training", training}}});
  check_all({"layer_norm", {f32({8, 4, 6}, 1), f32({6}, 2), f32({6}, 3)}, {}});
  check_all({"layer_norm",
             {f32({8, 4, 6}, 1), f32({4, 6}, 2), f32({4, 6}, 3)},
             {{"begin_norm_axis", int64_t{1}}, {"begin_params_axis", int64_t{1}}}});
  check_all({"gather", {f32({8, 6}, 1), i32({4}, 2, 8)}, {}});
  check_all({"gather", {f32({8, 4}, 1), i32({2, 4}, 2, 4)}, {{"axis", int64_t{1}}}});
  check_all({"embedding", {i32({4, 2}, 2, 10), f32({10, 8}, 1)}, {}});
  check_all({"one_hot", {i32({8}, 2, 5)}, {{"depth", int64_t{5}}}});
  check_all({"one_hot", {i32({8, 4}, 2, 5)}, {{"depth", int64_t{5}}, {"axis", int64_t{0}}}});
}

TEST(Sharding, ReshapeAndTranspose) {
  check_all({"reshape", {f32({8, 6}, 1)}, {{"shape", Ints{4, 2, 6}}}});
  check_all({"reshape", {f32({4, 6}, 1)}, {{"shape", Ints{24}}}});
  check_all({"reshape", {f32({4, 2, 6}, 1)}, {{"shape", Ints{8, -1}}}});
  check_all({"flatten", {f32({4, 2, 3}, 1)}, {}});
  check_all({"expand_dims", {f32({4, 4}, 1)}, {{"axis", int64_t{1}}}});
  check_all({"transpose", {f32({8, 4, 2}, 1)}, {{"perm", Ints{2, 0, 1}}}});
  OpSetup u = setup({"reshape", {f32({4, 6}, 1)}, {{"shape", Ints{6, 4}}}});
  EXPECT_THROW(shard::plan(u.ctx(), {{1, 2}}),
               ValueError);  // dim 1's slices are not contiguous rows of the output
}

TEST(Sharding, BadStrategiesNameTheOpAndInput) {
  OpSetup u = setup({"matmul", {f32({8, 6}, 1), f32({6, 4}, 2)}, {}});
  try {
    shard::plan(u.ctx(), {{2, 2}, {1, 2}});
    ADD_FAILURE();
  } catch (const ValueError& e) {
    EXPECT_NE(
        std::string(e.what()).find("[matmul] input 'y' dim 0 is split in 1 but input 'x' dim 1"),
        std::string::npos)
        << e.what();
  }
  EXPECT_THROW(shard::plan(u.ctx(), {{3, 1}, {1, 1}}), ValueError);  // 3 does not divide 8 or 4
  EXPECT_THROW(shard::plan(u.ctx(), {{2, 1}}), ValueError);          // one tuple per input
  EXPECT_THROW(shard::plan(u.ctx(), {{8, 1}, {1, 1}}), ValueError);  // more devices than 4
  OpSetup sc = setup({"cumsum", {f32({8, 4}, 1)}, {{"axis", int64_t{1}}}});
  EXPECT_THROW(shard::plan(sc.ctx(), {{2, 1}}), ValueError);  // no rule: replicated only
  EXPECT_EQ(shard::strategies(sc.ctx()).size(), 1u);
}

TEST(Sharding, LayoutsAndGroups) {
  shard::TensorLayout l = shard::layout_from_dims({8, 4}, {2, 1}, 4);
  EXPECT_EQ(l.device.dims, (std::vector<int64_t>{2, 1, 2}));  // the repeat axis last
  EXPECT_EQ(l.tensor_map, (std::vector<int>{0, -1}));
  EXPECT_EQ(l.slice_shape(), (Shape{4, 4}));
  EXPECT_EQ(l.slice_offset(3), (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(l.slice_offset(1), (std::vector<int64_t>{0, 0}));  // ranks 0 and 1 hold the same slice
  EXPECT_EQ(l.str(), "dev[2,1,2] map[0,-1] shape(8, 4)");
  shard::DeviceMatrix d{{2, 3}};
  EXPECT_EQ(d.group(4, {0}), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(d.group(4, {1}), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(d.group(4, {0, 1}), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_THROW(shard::layout_from_dims({6, 4}, {4, 1}, 4), ValueError);
}

TEST(Sharding, CostsScaleWithTheSplit) {
  Case k{"matmul", {f32({8, 8}, 1), f32({8, 4}, 2)}, {}};
  OpSetup u = setup(k);
  shard::OpCost whole = shard::cost(u.ctx(), shard::plan(u.ctx(), {{1, 1}, {1, 1}}));
  shard::OpCost rows = shard::cost(u.ctx(), shard::plan(u.ctx(), {{4, 1}, {1, 1}}));
  EXPECT_DOUBLE_EQ(whole.flops, 2.0 * 8 * 8 * 4);
  EXPECT_DOUBLE_EQ(rows.flops, whole.flops / 4);
  EXPECT_DOUBLE_EQ(rows.bytes_read, (2 * 8 + 8 * 4) * 4.0);
  EXPECT_DOUBLE_EQ(rows.bytes_written, 2 * 4 * 4.0);
}

}  // namespace
}  // namespace mycel
