// Core: dtype promotion, 16-bit float conversion, tensors and views, the caching allocator,
// printing values the way numpy does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "mycel/core/dtype.h"
#include "mycel/core/storage.h"
#include "mycel/core/tensor.h"
#include "mycel/core/tensor_format.h"

namespace mycel {
namespace {

TEST(DType, PromotionFollowsNumpy) {
  // Expected values from numpy.promote_types.
  EXPECT_EQ(promote_types(DType::int32, DType::float32), DType::float64);
  EXPECT_EQ(promote_types(DType::int8, DType::float16), DType::float16);
  EXPECT_EQ(promote_types(DType::int16, DType::float16), DType::float32);
  EXPECT_EQ(promote_types(DType::uint8, DType::int8), DType::int16);
  EXPECT_EQ(promote_types(DType::uint8, DType::int32), DType::int32);
  EXPECT_EQ(promote_types(DType::bool_, DType::int8), DType::int8);
  EXPECT_EQ(promote_types(DType::float16, DType::float64), DType::float64);
  EXPECT_EQ(promote_types(DType::float16, DType::bfloat16), DType::float32);
  EXPECT_EQ(promote_types(DType::int64, DType::int16), DType::int64);
  for (int i = 0; i < kNumDTypes; ++i)
    for (int j = 0; j < kNumDTypes; ++j)
      EXPECT_EQ(promote_types(DType(i), DType(j)), promote_types(DType(j), DType(i)));
}

TEST(DType, Names) {
  for (int i = 0; i < kNumDTypes; ++i) EXPECT_EQ(dtype_from_name(dtype_name(DType(i))), DType(i));
  EXPECT_THROW(dtype_from_name("complex32"),
               TypeError);  // complex64/128 exist; numpy has no complex32
}

TEST(Half, RoundTripsAndRounds) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f})
    EXPECT_EQ(float(Half(f)), f);
  EXPECT_TRUE(std::isinf(float(Half(1e6f))));
  EXPECT_TRUE(std::isnan(float(Half(NAN))));
  EXPECT_EQ(float(Half(1.0f + 1.0f / 4096)), 1.0f);  // ties to even
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(float(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(float(BFloat16(3.140625f)), 3.140625f);
  EXPECT_EQ(float(BFloat16(1.0f + 1.0f / 256)), 1.0f);               // tie -> even (down)
  EXPECT_EQ(float(BFloat16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);  // tie -> even (up)
  EXPECT_TRUE(std::isnan(float(BFloat16(NAN))));
}

TEST(Tensor, ViewsShareStorage) {
  Tensor t = Tensor::zeros({2, 3}, DType::float32);
  Tensor v = t.view({3, 2});
  EXPECT_EQ(v.storage(), t.storage());
  v.data<float>()[5] = 7.0f;
  EXPECT_EQ(t.data<float>()[5], 7.0f);
  Tensor row = t.narrow0(1, 1);
  EXPECT_EQ(row.shape(), (Shape{1, 3}));
  EXPECT_EQ(row.data<float>()[2], 7.0f);
  EXPECT_THROW(t.view({4}), ShapeError);
  EXPECT_THROW(t.narrow0(2, 1), IndexError);
}

template <class T>
Tensor filled(const Shape& shape, DType dtype, std::initializer_list<T> values) {
  Tensor t = Tensor::empty(shape, dtype);
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

// Expected texts are numpy's str(array) (np.array2string with ", " for repr).
TEST(TensorFormat, WritesValuesAsNumpyStr) {
  EXPECT_EQ(format_values(filled<float>({2, 3}, DType::float32, {1.5f, 2, -3.25f, 0.1f, 100, 7})),
            "[[  1.5    2.    -3.25]\n [  0.1  100.     7.  ]]");
  EXPECT_EQ(format_values(filled<float>({4}, DType::float32, {1e-5f, 1, NAN, -INFINITY})),
            "[1.e-05 1.e+00    nan   -inf]");
  EXPECT_EQ(format_values(filled<bool>({1, 2}, DType::bool_, {true, false})), "[[ True False]]");
  EXPECT_EQ(format_values(filled<float>({}, DType::float32, {0.1f})), "0.1");
  EXPECT_EQ(format_values(filled<float>({}, DType::float32, {2.5e-7f})), "2.5e-07");
  EXPECT_EQ(format_values(filled<Half>({2}, DType::float16, {Half(0.1f), Half(65504.0f)})),
            "[1.00e-01 6.55e+04]");
  EXPECT_EQ(format_values(Tensor::zeros({2, 0}, DType::int32)), "[]");
  Tensor r = Tensor::empty({1001}, DType::int32);
  for (int i = 0; i < 1001; ++i) r.data<int32_t>()[i] = i;
  EXPECT_EQ(format_values(r), "[   0    1    2 ...  998  999 1000]");
  EXPECT_EQ(format_repr(r), "Tensor([   0,    1,    2, ...,  998,  999, 1000], dtype=Int32)");
  EXPECT_EQ(format_float(1.0), "1.0");
  EXPECT_EQ(format_float(1e16), "1e+16");
}

TEST(Tensor, ConvertsLikeNumpyAstype) {
  Tensor t = Tensor::empty({4}, DType::float32);
  float* p = t.data<float>();
  p[0] = 1.7f;
  p[1] = -1.7f;
  p[2] = 0.0f;
  p[3] = 300.0f;
  Tensor i = t.to(DType::int32);
  EXPECT_EQ(i.data<int32_t>()[0], 1);
  EXPECT_EQ(i.data<int32_t>()[1], -1);
  Tensor b = t.to(DType::bool_);
  EXPECT_TRUE(b.data<bool>()[0]);
  EXPECT_FALSE(b.data<bool>()[2]);
  Tensor h = t.to(DType::float16);
  EXPECT_EQ(float(h.data<Half>()[3]), 300.0f);
}

TEST(Allocator, ReusesFreedBlocks) {
  empty_cache();
  size_t before = allocator_stats().num_system_allocs;
  for (int k = 0; k < 100; ++k) Tensor t = Tensor::empty({1000}, DType::float32);
  EXPECT_LE(allocator_stats().num_system_allocs - before, 1u);
  Tensor t = Tensor::empty({17}, DType::float64);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
}

}  // namespace
}  // namespace mycel
