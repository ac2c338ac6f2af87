// Dataset engine in C++: ordering with many workers, determinism of random transforms across
// worker counts, samplers, batching, error propagation and early stop.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>

#include "mycel/data/engine/engine.h"
#include "mycel/data/engine/tensor_source.h"

namespace mycel::data::engine {
namespace {

std::shared_ptr<Source> iota_source(int64_t n) {
  Tensor t = Tensor::empty({n}, DType::int64);
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = i;
  return tensor_source({t}, {"x"});
}

// Adds a random draw * 1000 to the value: the draw depends only on (seed, epoch, row id).
class AddNoise : public Transform {
 public:
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng& rng) const override {
    Tensor out = Tensor::empty(in[0].shape(), DType::int64);
    out.data<int64_t>()[0] = in[0].data<int64_t>()[0] + 1000 * rng.randint(0, 999);
    return {out};
  }
  std::string name() const override { return "AddNoise"; }
  bool is_random() const override { return true; }
};

class Fail : public Transform {
 public:
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng&) const override {
    if (in[0].data<int64_t>()[0] == 7) MYCEL_THROW(ValueError, "seven");
    return in;
  }
  std::string name() const override { return "Fail"; }
};

std::vector<int64_t> run(std::shared_ptr<Op> root, int64_t epochs, uint64_t seed) {
  Pipeline p(std::move(root), epochs, seed, 4);
  std::vector<int64_t> out;
  Row row;
  while (true) {
    auto st = p.next(row, -1);
    if (st == Pipeline::Status::kEnd) break;
    if (st != Pipeline::Status::kRow) continue;
    for (int64_t i = 0; i < row[0].numel(); ++i) out.push_back(row[0].data<int64_t>()[i]);
  }
  return out;
}

SamplerSpec spec(const std::string& kind) {
  SamplerSpec s;
  s.kind = kind;
  return s;
}

TEST(DataEngine, MapKeepsOrder) {
  auto src = source_op(iota_source(300), spec("sequential"), 3);
  auto got = run(map_op(src, {std::make_shared<AddNoise>()}, {0}, {-1}, 4), 1, 0);
  ASSERT_EQ(got.size(), 300u);
  for (int64_t i = 0; i < 300; ++i) EXPECT_EQ(got[i] % 1000, i);
}

TEST(DataEngine, RandomTransformSameForAnyWorkerCount) {
  auto build = [](int w) {
    auto src = source_op(iota_source(100), spec("random"), w);
    return repeat_op(map_op(src, {std::make_shared<AddNoise>()}, {0}, {-1}, w), 2);
  };
  auto one = run(build(1), 1, 42), four = run(build(4), 1, 42);
  EXPECT_EQ(one, four);
  ASSERT_EQ(one.size(), 200u);
  std::vector<int64_t> first;
  for (int i = 0; i < 100; ++i) first.push_back(one[i] % 1000);
  std::sort(first.begin(), first.end());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(first[i], i);
  EXPECT_NE(run(build(2), 1, 43), one);
}

TEST(DataEngine, DistributedShardsPartition) {
  std::multiset<int64_t> all;
  for (int k = 0; k < 4; ++k) {
    SamplerSpec s = spec("distributed");
    s.num_shards = 4;
    s.shard_id = k;
    auto got = run(source_op(iota_source(20), s, 2), 1, 5);
    EXPECT_EQ(got.size(), 5u);
    all.insert(got.begin(), got.end());
  }
  for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(all.count(i), 1u);
}

TEST(DataEngine, BatchStacksAndPads) {
  Tensor a = Tensor::zeros({2}, DType::float32), b = Tensor::zeros({3}, DType::float32);
  EXPECT_THROW(stack_column({a, b}, PadSpec{}, "x"), ValueError);
  PadSpec pad;
  pad.enabled = true;
  pad.value = 5;
  Tensor s = stack_column({a, b}, pad, "x");
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  EXPECT_EQ(s.data<float>()[2], 5.f);
  EXPECT_EQ(s.data<float>()[5], 0.f);
  auto got = run(batch_op(source_op(iota_source(10), spec("sequential"), 2), 4, true, nullptr, {},
                          {0}, {}, {"x"}, 2),
                 1, 0);
  EXPECT_EQ(got.size(), 8u);
}

TEST(DataEngine, WorkerErrorReachesConsumer) {
  auto m = map_op(source_op(iota_source(50), spec("sequential"), 2), {std::make_shared<Fail>()},
                  {0}, {-1}, 3);
  try {
    run(m, 1, 0);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("seven"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Fail"), std::string::npos);
  }
}

// The error travels in its row's place: the batches before row 7 arrive first (rows 0..5), the
// batch row 7 would end (6, 7) is dropped, then the error, whatever the worker counts.
TEST(DataEngine, ErrorArrivesAfterTheRowsBeforeIt) {
  for (int workers : {1, 2, 3, 5}) {
    auto m = map_op(source_op(iota_source(50), spec("sequential"), workers),
                    {std::make_shared<Fail>()}, {0}, {-1}, workers);
    Pipeline p(batch_op(m, 2, false, nullptr, {}, {0}, {}, {"x"}, workers), 1, 0, 4);
    std::vector<int64_t> got;
    Row row;
    try {
      for (auto st = p.next(row, -1); st != Pipeline::Status::kEnd; st = p.next(row, -1))
        if (st == Pipeline::Status::kRow)
          for (int64_t i = 0; i < row[0].numel(); ++i) got.push_back(row[0].data<int64_t>()[i]);
      FAIL() << "no error with " << workers << " workers";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("seven"), std::string::npos);
    }
    EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 3, 4, 5})) << workers << " workers";
  }
}

// Every packet of a pipeline (rows' values, -1 per epoch end), threaded or on the consumer.
std::vector<int64_t> stream(const std::function<std::shared_ptr<Op>()>& make, int64_t epochs,
                            bool on_consumer, bool* took_effect = nullptr) {
  Pipeline p(make(), epochs, 3, 4, on_consumer);
  if (took_effect) *took_effect = p.on_consumer();
  std::vector<int64_t> out;
  Row row;
  for (auto st = p.next(row, -1); st != Pipeline::Status::kEnd; st = p.next(row, -1)) {
    if (st == Pipeline::Status::kEpochEnd) out.push_back(-1);
    if (st != Pipeline::Status::kRow) continue;
    for (int64_t i = 0; i < row[0].numel(); ++i) out.push_back(row[0].data<int64_t>()[i]);
    out.push_back(-2);  // batch boundary
  }
  return out;
}

// On the consumer (no threads), batches, partial last batches, epoch ends and the inline ops
// above them arrive as with threads: same sampler order, same grouping.
TEST(DataEngine, OnConsumerSameStream) {
  using Make = std::function<std::shared_ptr<Op>()>;
  auto src = [] { return source_op(iota_source(23), spec("random"), 2); };
  std::vector<Make> trees = {
      [&] { return batch_op(src(), 5, false, nullptr, {}, {0}, {}, {"x"}, 2); },
      [&] { return batch_op(src(), 5, true, nullptr, {}, {0}, {}, {"x"}, 1); },
      [&] { return take_op(batch_op(src(), 4, false, nullptr, {}, {0}, {}, {"x"}, 2), 3); },
      [&] { return shuffle_op(batch_op(src(), 3, false, nullptr, {}, {0}, {}, {"x"}, 2), 4); },
      [&] { return repeat_op(batch_op(src(), 6, false, nullptr, {}, {0}, {}, {"x"}, 2), 2); },
      [&] { return batch_op(skip_op(src(), 4), 5, false, nullptr, {}, {0}, {}, {"x"}, 2); },
  };
  for (size_t k = 0; k < trees.size(); ++k) {
    bool took = false;
    auto threaded = stream(trees[k], 3, false);
    auto direct = stream(trees[k], 3, true, &took);
    EXPECT_TRUE(took) << "tree " << k;
    EXPECT_EQ(direct, threaded) << "tree " << k;
    EXPECT_GT(threaded.size(), 20u) << "tree " << k;
  }
}

// A map that is not one fused image chain (it may hold Python work) keeps its threads; the
// stream is unchanged, errors included.
TEST(DataEngine, OnConsumerDeclinedKeepsThreads) {
  auto make = [] {
    auto m = map_op(source_op(iota_source(50), spec("sequential"), 2), {std::make_shared<Fail>()},
                    {0}, {-1}, 2);
    return batch_op(m, 2, false, nullptr, {}, {0}, {}, {"x"}, 2);
  };
  bool took = true;
  Pipeline p(make(), 1, 0, 4, true);
  EXPECT_FALSE(p.on_consumer());
  EXPECT_THROW(stream(make, 1, true, &took), ValueError);
  EXPECT_FALSE(took);
}

TEST(DataEngine, EarlyStopJoins) {
  auto root = repeat_op(map_op(source_op(iota_source(1000), spec("random"), 3),
                               {std::make_shared<AddNoise>()}, {0}, {-1}, 3),
                        -1);
  Pipeline p(root, -1, 1, 2);
  Row row;
  for (int i = 0; i < 10; ++i) ASSERT_EQ(p.next(row, -1), Pipeline::Status::kRow);
  p.stop();  // returns only after every thread joined
  EXPECT_EQ(p.next(row, 0), Pipeline::Status::kEnd);
}

}  // namespace
}  // namespace mycel::data::engine
