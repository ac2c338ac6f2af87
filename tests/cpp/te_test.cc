// Tensor expressions: the adjoint structure (no Jacobian: one reduction for matmul, none for an
// elementwise chain) and a generated kernel against a brute-force loop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "mycel/te/te.h"

namespace mycel::te {
namespace {

Expr at(const Tensor& t, std::vector<IterVar> ax) {
  std::vector<Expr> idx;
  for (auto& a : ax) idx.push_back(var(a));
  return load(t, idx);
}

int count_reduce_axes(const Expr& e) {
  int n = e->op == Op::Reduce ? static_cast<int>(e->raxes.size()) : 0;
  for (auto& a : e->args) n += count_reduce_axes(a);
  return n;
}

TEST(Te, MatmulAdjointIsOneReductionOverTheOtherAxis) {
  auto a = placeholder({4, 5}, DType::float32, "a");
  auto b = placeholder({5, 3}, DType::float32, "b");
  auto i = make_var("i", 0, 4, false), j = make_var("j", 0, 3, false),
       k = make_var("k", 0, 5, true);
  auto c =
      compute({4, 3}, {i, j},
              reduce(ReduceKind::sum, binary(Op::Mul, at(a, {i, k}), at(b, {k, j})), {k}), "c");
  auto grads = differentiate(c, {a, b}, nullptr, {});
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(grads[0]->shape, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(count_reduce_axes(grads[0]->body), 1);  // sum over j only: i and k were solved
  EXPECT_EQ(grads[0]->body->raxes[0]->hi, 3);
  EXPECT_EQ(count_reduce_axes(grads[1]->body), 1);  // sum over i
  EXPECT_EQ(grads[1]->body->raxes[0]->hi, 4);
}

TEST(Te, ElementwiseAdjointHasNoReductionOrGuard) {
  auto x = placeholder({8}, DType::float64, "x");
  auto i = make_var("i", 0, 8, false);
  auto y = compute({8}, {i},
                   unary(Op::Exp, binary(Op::Mul, at(x, {i}), constant(2, DType::float64))), "y");
  auto g = differentiate(y, {x}, nullptr, {})[0];
  EXPECT_EQ(count_reduce_axes(g->body), 0);
  EXPECT_EQ(to_string(g->body).find("select"), std::string::npos) << to_string(g->body);
}

TEST(Te, ShiftedReadGetsARangeGuard) {
  auto x = placeholder({6}, DType::float32, "x");
  auto i = make_var("i", 0, 5, false);
  auto y = compute({5}, {i}, at(x, {i}), "y");  // reads x[0..4]: x[5] gets no gradient
  auto g = differentiate(y, {x}, nullptr, {})[0];
  EXPECT_NE(to_string(g->body).find("select"), std::string::npos);
}

TEST(Te, GeneratedKernelMatchesBruteForce) {
  setenv("MYCEL_TE_CACHE", (std::filesystem::temp_directory_path() / "mycel_te_cpp_test").c_str(),
         1);
  auto x = placeholder({3, 7}, DType::float64, "x");
  auto i = make_var("i", 0, 3, false), r = make_var("r", 0, 7, true);
  auto y = compute({3}, {i}, reduce(ReduceKind::max, unary(Op::Tanh, at(x, {i, r})), {r}), "y");
  auto k = compile(generate_cpp({x}, {y}));
  double in[21], out[3];
  for (int n = 0; n < 21; ++n) in[n] = std::sin(n * 1.3);
  void* bufs[] = {in, out};
  k->run(bufs);
  for (int row = 0; row < 3; ++row) {
    double m = -INFINITY;
    for (int c = 0; c < 7; ++c) m = std::max(m, std::tanh(in[row * 7 + c]));
    EXPECT_DOUBLE_EQ(out[row], m);
  }
}

// A symbolic row count: one kernel, run at several sizes, bound from the input shape.
TEST(Te, SymbolicSizeKernelRunsAtEverySize) {
  setenv("MYCEL_TE_CACHE", (std::filesystem::temp_directory_path() / "mycel_te_cpp_test").c_str(),
         1);
  const int64_t n = size_var("n");
  auto x = placeholder({n, 5}, DType::float64, "x");
  auto i = make_var("i", 0, n, false), r = make_var("r", 0, 5, true);
  auto y = compute({n}, {i}, reduce(ReduceKind::sum, at(x, {i, r}), {r}), "y");
  auto f = build({x}, {y});
  ASSERT_EQ(f->sizes, std::vector<int64_t>{n});
  const int64_t compiles = compile_count();
  for (int64_t rows : {1, 4, 33}) {
    std::vector<double> in(static_cast<size_t>(rows * 5)), out(static_cast<size_t>(rows));
    for (size_t q = 0; q < in.size(); ++q) in[q] = std::cos(static_cast<double>(q));
    auto values = f->bind({{rows, 5}}, "test");
    EXPECT_EQ(f->resolve(y->shape, values), std::vector<int64_t>{rows});
    f->run({in.data(), out.data()}, values);
    for (int64_t row = 0; row < rows; ++row) {
      double s = 0;
      for (int c = 0; c < 5; ++c) s += in[static_cast<size_t>(row * 5 + c)];
      EXPECT_NEAR(out[static_cast<size_t>(row)], s, 1e-12);
    }
  }
  EXPECT_EQ(compile_count(), compiles);
  EXPECT_THROW(f->bind({{4, 6}}, "test"), std::exception);
  EXPECT_EQ(shape_string({n, 5}), "(n, 5)");
}

}  // namespace
}  // namespace mycel::te
