// The oneDNN primitive cache: a repeated call with the same shapes, dtype and attributes builds
// nothing; a new shape builds once.
#include <gtest/gtest.h>

#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/ops/registry.h"

namespace mycel {
namespace {

Tensor filled(Shape s, float v) {
  Tensor t = Tensor::empty(s, DType::float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
  return t;
}

TEST(DnnlCache, RepeatedMatmulBuildsNothing) {
  Tensor a = filled({3, 4}, 1.f), b = filled({4, 5}, 2.f);
  call_op("matmul", {a, b});
  const int64_t builds = cpu::dnnl_util::build_count();
  Tensor c = call_op("matmul", {a, b})[0];
  EXPECT_EQ(cpu::dnnl_util::build_count(), builds);
  EXPECT_FLOAT_EQ(c.data<float>()[0], 8.f);
  call_op("matmul", {a, b}, {{"transpose_a", false}, {"transpose_b", false}});
  EXPECT_EQ(cpu::dnnl_util::build_count(), builds);
  call_op("matmul", {filled({2, 4}, 1.f), b});  // new shape: one build
  EXPECT_EQ(cpu::dnnl_util::build_count(), builds + 1);
}

TEST(DnnlCache, RepeatedConvBuildsNothing) {
  Tensor x = filled({1, 2, 6, 6}, 1.f), w = filled({3, 2, 3, 3}, 1.f);
  std::map<std::string, AttrValue> attrs{{"pad_mode", std::string("same")}};
  call_op("conv2d", {x, w, Tensor()}, attrs);
  const int64_t builds = cpu::dnnl_util::build_count();
  Tensor y = call_op("conv2d", {x, w, Tensor()}, attrs)[0];
  EXPECT_EQ(cpu::dnnl_util::build_count(), builds);
  EXPECT_FLOAT_EQ(y.data<float>()[1 * 6 + 1], 18.f);  // an interior point: 2 channels x 9 taps
  EXPECT_FLOAT_EQ(y.data<float>()[0], 8.f);           // a corner: 2 x 4 taps inside
}

}  // namespace
}  // namespace mycel
