// The oneDNN primitive cache: a repeated call with the same shapes, dtype and attributes builds
// nothing; a new shape builds once.
#include <gtest/gtest.h>

#include <cmath>

#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/ops/registry.h"

namespace mycel {
namespace {

Tensor filled(Shape s, float v) {
  Tensor t = Tensor::empty(s, DType::float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
  return t;
}

// 0, 1, 2, ... (mod 7), so pooling and normalization see distinct values.
Tensor ramp(Shape s, DType dtype = DType::float32) {
  Tensor t = Tensor::empty(s, DType::float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i % 7);
  return t.to(dtype);
}

float at(const Tensor& t, int64_t i) { return t.to(DType::float32).data<float>()[i]; }

// Calls `call` twice on the oneDNN backend (forced, so the ops that default to their loops are
// covered too): the first call builds exactly one primitive, the second builds nothing.
template <class Fn>
void expect_cached(Fn call) {
  cpu::set_nn_backend(cpu::NnBackend::kDnnl);
  const int64_t before = cpu::dnnl_util::build_count();
  call();
  EXPECT_EQ(cpu::dnnl_util::build_count(), before + 1);
  call();
  EXPECT_EQ(cpu::dnnl_util::build_count(), before + 1);
  cpu::set_nn_backend(cpu::NnBackend::kAuto);
}

TEST(DnnlCache, RepeatedMatmulBuildsNothing) {
  // Every dimension over 16: a skinny matmul (kernels/cpu/matmul_skinny.h) builds no primitive.
  Tensor a = filled({20, 24}, 1.f), b = filled({24, 32}, 2.f);
  call_op("matmul", {a, b});
  const int64_t builds = cpu::dnnl_util::build_count();
  Tensor c = call_op("matmul", {a, b})[0];
  EXPECT_EQ(cpu::dnnl_util::build_count(), builds);
  EXPECT_FLOAT_EQ(c.data<float>()[0], 48.f);
  call_op("matmul", {a, b}, {{"transpose_a", false}, {"transpose_b", false}});
  EXPECT_EQ(cpu::dnnl_util::build_count(), builds);
  call_op("matmul", {filled({18, 24}, 1.f), b});  // new shape: one build
  EXPECT_EQ(cpu::dnnl_util::build_count(), builds + 1);
}

TEST(DnnlCache, ThreadCountIsPartOfTheKey) {
  // A primitive built for one thread count is not reused for another: oneDNN fixes its work
  // split at creation. Same shapes, another count: one build; back to the first: none. (A
  // matmul above serial_work_threshold(): smaller ones always run on one thread.)
  cpu::set_nn_backend(cpu::NnBackend::kDnnl);
  const int saved = num_threads();
  const int64_t n = 128;
  ASSERT_GE(n * n * n, serial_work_threshold());
  Tensor a = filled({n, n}, 1.f), b = filled({n, n}, 2.f);
  set_num_threads(1);
  call_op("matmul", {a, b});
  const int64_t builds = cpu::dnnl_util::build_count();
  set_num_threads(2);
  Tensor c = call_op("matmul", {a, b})[0];
  EXPECT_EQ(cpu::dnnl_util::build_count(), builds + 1);
  EXPECT_FLOAT_EQ(c.data<float>()[0], 2.f * n);
  set_num_threads(1);
  call_op("matmul", {a, b});
  EXPECT_EQ(cpu::dnnl_util::build_count(), builds + 1);
  set_num_threads(saved);
  cpu::set_nn_backend(cpu::NnBackend::kAuto);
}

TEST(DnnlCache, SmallPrimitivesRunOnOneThread) {
  // Below serial_work_threshold() a primitive is built and keyed for one thread whatever the pool
  // size, so a small matmul under 2 threads reuses the 1-thread build (SerialScope).
  cpu::set_nn_backend(cpu::NnBackend::kDnnl);
  const int saved = num_threads();
  Tensor a = filled({6, 7}, 1.f), b = filled({7, 9}, 2.f);
  ASSERT_LT(6 * 7 * 9, serial_work_threshold());
  set_num_threads(1);
  call_op("matmul", {a, b});
  const int64_t builds = cpu::dnnl_util::build_count();
  set_num_threads(2);
  Tensor c = call_op("matmul", {a, b})[0];
  EXPECT_EQ(cpu::dnnl_util::build_count(), builds);
  EXPECT_FLOAT_EQ(c.data<float>()[0], 14.f);
  EXPECT_EQ(num_threads(), 2);  // the scope restored the pool size
  {
    SerialScope small(10);
    EXPECT_EQ(num_threads(), 1);
    EXPECT_EQ(omp_get_max_threads(), 1);
    SerialScope big(int64_t(1) << 40);  // nested: stays serial
    EXPECT_EQ(num_threads(), 1);
  }
  EXPECT_EQ(num_threads(), 2);
  EXPECT_EQ(omp_get_max_threads(), 2);
  set_num_threads(saved);
  cpu::set_nn_backend(cpu::NnBackend::kAuto);
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

TEST(DnnlCache, RepeatedPoolingBuildsNothing) {
  for (DType dt : {DType::float32, DType::bfloat16}) {
    const float tol = dt == DType::float32 ? 1e-6f : 1e-2f;
    Tensor x = ramp({1, 2, 5, 5}, dt), y;
    std::map<std::string, AttrValue> same{{"kernel_size", std::vector<int64_t>{3}},
                                          {"strides", std::vector<int64_t>{2}},
                                          {"pad_mode", std::string("same")}};
    expect_cached([&] { y = call_op("max_pool2d", {x}, same)[0]; });
    EXPECT_EQ(y.shape(), (Shape{1, 2, 3, 3}));
    EXPECT_NEAR(at(y, 0), 6.f, tol);  // rows 0-1, cols 0-1 of the ramp: 0 1 / 5 6
    expect_cached([&] { y = call_op("avg_pool2d", {x}, same)[0]; });
    EXPECT_NEAR(at(y, 0), 3.f, tol);  // padding excluded: (0 + 1 + 5 + 6) / 4
    std::map<std::string, AttrValue> pad{{"kernel_size", std::vector<int64_t>{3}},
                                         {"pad_mode", std::string("pad")},
                                         {"pad", std::vector<int64_t>{1}},
                                         {"count_include_pad", true}};
    expect_cached([&] { y = call_op("avg_pool2d", {x}, pad)[0]; });
    EXPECT_NEAR(at(y, 0), 12.f / 9.f, tol);  // padding counted: (0 + 1 + 5 + 6) / 9
  }
}

TEST(DnnlCache, RepeatedSoftmaxBuildsNothing) {
  Tensor x = ramp({2, 3, 4}), y;
  for (int64_t axis : {-1, 1}) {  // the last axis, and a middle one (strided)
    expect_cached([&] { y = call_op("softmax", {x}, {{"axis", axis}})[0]; });
    float sum = 0;  // over the softmax axis through element 0
    for (int64_t l = 0; l < (axis == -1 ? 4 : 3); ++l) sum += at(y, axis == -1 ? l : 4 * l);
    EXPECT_NEAR(sum, 1.f, 1e-6f);
    expect_cached([&] { y = call_op("log_softmax", {x}, {{"axis", axis}})[0]; });
    EXPECT_LT(at(y, 0), 0.f);
  }
  Tensor row = ramp({1, 3});  // 0 1 2
  expect_cached([&] { y = call_op("softmax", {row})[0]; });
  const float z = 1.f + std::exp(1.f) + std::exp(2.f);
  EXPECT_NEAR(at(y, 2), std::exp(2.f) / z, 1e-6f);
}

TEST(DnnlCache, RepeatedLayerNormBuildsNothing) {
  Tensor x = ramp({4, 6}), gamma = filled({6}, 2.f), beta = filled({6}, 1.f);
  std::vector<Tensor> out;
  expect_cached([&] { out = call_op("layer_norm", {x, gamma, beta}, {{"epsilon", 1e-5}}); });
  // Row 0 is 0..5: mean 2.5, variance 35/12.
  const double rstd = 1.0 / std::sqrt(35.0 / 12.0 + 1e-5);
  EXPECT_NEAR(at(out[1], 0), 2.5f, 1e-5f);
  EXPECT_NEAR(at(out[2], 0), rstd, 1e-5);
  EXPECT_NEAR(at(out[0], 0), 2.0 * (0 - 2.5) * rstd + 1.0, 1e-5);
}

TEST(DnnlCache, RepeatedBatchNormBuildsNothing) {
  Tensor x = ramp({2, 3, 2, 2}), scale = filled({3}, 1.f), bias = filled({3}, 0.f);
  for (bool training : {true, false}) {
    Tensor mean = filled({3}, 0.f), var = filled({3}, 1.f);
    std::vector<Tensor> out;
    expect_cached([&] {
      out = call_op("batch_norm", {x, scale, bias, mean, var},
                    {{"is_training", training}, {"momentum", 0.5}});
    });
    if (training) {
      // Channel 0 holds 0 1 2 3 and 5 6 0 1 (mean 2.25); the running mean saw it twice.
      EXPECT_NEAR(at(out[1], 0), 2.25f, 1e-6f);
      EXPECT_NEAR(at(mean, 0), 0.75 * 2.25, 1e-5);
    } else {
      EXPECT_NEAR(at(out[0], 5), 5.f / std::sqrt(1.f + 1e-5f), 1e-5f);
      EXPECT_FLOAT_EQ(at(mean, 0), 0.f);
    }
  }
}

}  // namespace
}  // namespace mycel
