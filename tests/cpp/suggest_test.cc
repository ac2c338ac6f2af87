// "Did you mean" for misspelt names: the closest candidate within the edit budget, else a list.
#include <gtest/gtest.h>

#include "mycel/core/suggest.h"

namespace mycel {

TEST(Suggest, EditDistanceIgnoresCaseAndCountsSwapsOnce) {
  EXPECT_EQ(edit_distance("transpose_B", "transpose_b"), 0u);
  EXPECT_EQ(edit_distance("scael", "scale"), 1u);
  EXPECT_EQ(edit_distance("relue", "relu"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(Suggest, ClosestWithinBudget) {
  EXPECT_EQ(closest_name("has_bais", {"in_channels", "has_bias"}), "has_bias");
  EXPECT_EQ(closest_name("adjoint", {"x", "y", "transpose_a"}), "");
}

TEST(Suggest, Messages) {
  EXPECT_EQ(did_you_mean("transpose_B", {"x", "y", "transpose_a", "transpose_b"}),
            "; did you mean 'transpose_b'?");
  EXPECT_EQ(did_you_mean("adjoint", {"x", "y"}), "; expected one of: x, y");
  EXPECT_EQ(did_you_mean("adjoint", {}), "");
}

}  // namespace mycel
