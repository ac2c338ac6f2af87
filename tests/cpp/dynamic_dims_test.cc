// Dynamic dims in shape checks: analysis's placeholder size agrees with any size while it is
// active, and nowhere else (core/dynamic_dims.h).
#include <gtest/gtest.h>

#include "mycel/core/dynamic_dims.h"
#include "mycel/core/error.h"

namespace mycel {
namespace {

constexpr int64_t kP = 5040;  // a placeholder analysis uses

TEST(DynamicDims, BroadcastTakesTheStaticSize) {
  DynamicPlaceholderScope scope(kP);
  EXPECT_EQ(broadcast_shapes({kP, 32}, {16, kP}, "t"), (Shape{16, 32}));
  EXPECT_EQ(broadcast_shapes({kP, 4}, {1, 4}, "t"), (Shape{kP, 4}));  // against 1: dynamic
  EXPECT_EQ(broadcast_shapes({kP}, {kP}, "t"), (Shape{kP}));
  EXPECT_THROW(broadcast_shapes({kP, 32}, {kP, 8}, "t"), ShapeError);  // static dims still checked
}

TEST(DynamicDims, NoPlaceholderOutsideTheScope) {
  {
    DynamicPlaceholderScope scope(kP);
    EXPECT_TRUE(dims_agree(kP, 3));
    EXPECT_TRUE(shapes_agree({kP, 2}, {7, 2}));
    EXPECT_FALSE(shapes_agree({kP, 2}, {7, 3}));
    EXPECT_EQ(agreed_dim(kP, 7), 7);
  }
  EXPECT_EQ(dynamic_placeholder(), 0);
  EXPECT_FALSE(dims_agree(kP, 3));
  EXPECT_THROW(broadcast_shapes({kP, 32}, {16, 32}, "t"), ShapeError);
}

}  // namespace
}  // namespace mycel
