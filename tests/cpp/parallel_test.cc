// The Communicator without mpirun (a world of one) and alltoall's block shuffles; the multi-rank
// behaviour is tested under mpirun by tests/python/test_parallel_*.py.
#include <gtest/gtest.h>

#include "mycel/ops/registry.h"
#include "mycel/parallel/communicator.h"
#include "mycel/parallel/detail.h"

namespace mycel::parallel {
namespace {

TEST(ParallelBlocks, SplitsAroundADimension) {
  detail::Blocks b = detail::blocks({2, 6, 5}, 1, 3, 4);  // parts of 2 x 5 floats, 2 outer rows
  EXPECT_EQ(b.outer, 2);
  EXPECT_EQ(b.inner, 2u * 5u * 4u);
}

TEST(ParallelBlocks, TransposeBlocksSwapsTheTwoBlockAxes) {
  // src (a=2, b=3) blocks of 2 bytes: "A0A1A2" / "B0B1B2" -> dst (3, 2): "A0B0", "A1B1", "A2B2".
  const std::string src = "A0A1A2B0B1B2";
  std::string dst(src.size(), '?');
  detail::transpose_blocks(src.data(), dst.data(), 2, 3, 2);
  EXPECT_EQ(dst, "A0B0A1B1A2B2");
}

TEST(Communicator, WorldOfOneWithoutMpirun) {
  init();
  EXPECT_TRUE(initialized());
  EXPECT_EQ(world_size(), 1);
  EXPECT_EQ(group_rank(kWorldGroup), 0);
  EXPECT_EQ(group_size("hccl_world_group"), 1);
  Tensor x = Tensor::scalar(3.0, DType::float32);
  auto y = call_op("all_reduce", {x});
  EXPECT_EQ(y[0].item_as_double(), 3.0);
  EXPECT_THROW(create_group("two", {0, 1}), ValueError);
  EXPECT_THROW(set_timeout(0), ValueError);
  EXPECT_THROW(parse_reduce_op("avg", "all_reduce"), ValueError);
}

}  // namespace
}  // namespace mycel::parallel
