// The registry from C++: attribute validation, eager call_op, broadcasting, errors.
#include <gtest/gtest.h>

#include "mycel/kernels/cpu/elementwise.h"
#include "mycel/ops/registry.h"

namespace mycel {
namespace {

Tensor arange_f32(Shape s) {
  Tensor t = Tensor::empty(s, DType::float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

TEST(Registry, EveryOpIsComplete) {
  for (const OpDef* op : Registry::get().ops()) {
    EXPECT_FALSE(op->doc.empty()) << op->name;
    EXPECT_TRUE(op->infer) << op->name;
    EXPECT_TRUE(op->kernel) << op->name;
  }
}

TEST(Registry, AddBroadcasts) {
  Tensor a = arange_f32({2, 1, 3}), b = arange_f32({4, 1});
  Tensor c = call_op("add", {a, b})[0];
  ASSERT_EQ(c.shape(), (Shape{2, 4, 3}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 3; ++k)
        EXPECT_EQ(c.data<float>()[(i * 4 + j) * 3 + k], float(i * 3 + k + j));
}

TEST(Registry, PromotesInputs) {
  Tensor a = arange_f32({3});
  Tensor b = Tensor::scalar(2, DType::int32);
  Tensor c = call_op("mul", {a, b})[0];
  EXPECT_EQ(c.dtype(), DType::float64);  // numpy: float32 * int32 -> float64
  EXPECT_EQ(c.item_as_double(2), 4.0);
}

TEST(Registry, ErrorsNameTheOp) {
  try {
    call_op("add", {arange_f32({2, 3}), arange_f32({4})});
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[add]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(2, 3)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(call_op("add", {arange_f32({2})}), TypeError);
  EXPECT_THROW(Registry::get().at("no_such_op"), ValueError);
}

// The memory planner's in-place reuse reads this trait (never an op's name or doc string).
TEST(Registry, ElementwiseTraitMarksExactlyThePointwiseOps) {
  for (const char* name :
       {"add", "mul", "pow", "relu", "exp", "gelu", "isnan", "select", "clip_by_value"})
    EXPECT_TRUE(Registry::get().at(name).elementwise) << name;
  for (const char* name : {"matmul", "softmax", "sum", "reshape", "transpose", "conv2d", "gather"})
    EXPECT_FALSE(Registry::get().at(name).elementwise) << name;
}

TEST(BroadcastPlan, CollapsesDims) {
  Shape out{4, 5, 6}, a{4, 5, 6}, b{1, 5, 6};
  auto p = cpu::plan_broadcast(out, {&a, &b});
  ASSERT_EQ(p.shape, (Shape{4, 30}));
  EXPECT_EQ(p.strides[0], (std::vector<int64_t>{30, 1}));
  EXPECT_EQ(p.strides[1], (std::vector<int64_t>{0, 1}));
}

}  // namespace
}  // namespace mycel
