// kernels/cpu/sparse.h against dense reference loops: SpMM both ways (serial and threaded
// sizes), SDDMM, the gather/scatter pair, the row conversions, and the ValueError each kernel
// throws for malformed index arrays before reading through them.
#include "mycel/kernels/cpu/sparse.h"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <vector>

#include "mycel/core/error.h"

namespace mycel::cpu {
namespace {

struct Pattern {
  Tensor indptr, indices;
  std::vector<int64_t> rows, cols;
};

Pattern random_pattern(int64_t m, int64_t n, double density, std::mt19937& rng) {
  std::bernoulli_distribution keep(density);
  Pattern p;
  std::vector<int32_t> ptr = {0};
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c)
      if (keep(rng)) {
        p.rows.push_back(r);
        p.cols.push_back(c);
      }
    ptr.push_back(static_cast<int32_t>(p.cols.size()));
  }
  const int64_t nnz = static_cast<int64_t>(p.cols.size());
  p.indptr = Tensor::empty({m + 1}, DType::int32);
  p.indices = Tensor::empty({nnz}, DType::int32);
  for (int64_t r = 0; r <= m; ++r) p.indptr.data<int32_t>()[r] = ptr[r];
  for (int64_t j = 0; j < nnz; ++j) p.indices.data<int32_t>()[j] = static_cast<int32_t>(p.cols[j]);
  return p;
}

Tensor random_tensor(Shape shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(shape, DType::float64);
  std::normal_distribution<double> d;
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = d(rng);
  return t;
}

TEST(Sparse, SpmmBothWaysMatchDense) {
  std::mt19937 rng(11);
  for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{5, 7, 3}, {300, 200, 64}, {4, 0, 2}}) {
    Pattern p = random_pattern(m, n, 0.1, rng);
    const int64_t nnz = static_cast<int64_t>(p.cols.size());
    Tensor v = random_tensor({nnz}, rng), d = random_tensor({n, k}, rng),
           dt = random_tensor({m, k}, rng);
    Tensor out = Tensor::empty({m, k}, DType::float64),
           out_t = Tensor::empty({n, k}, DType::float64);
    csr_spmm(p.indptr, p.indices, v, d, out, false);
    csr_spmm(p.indptr, p.indices, v, dt, out_t, true);
    std::vector<double> want(m * k, 0.0), want_t(n * k, 0.0);
    for (int64_t j = 0; j < nnz; ++j)
      for (int64_t c = 0; c < k; ++c) {
        want[p.rows[j] * k + c] += v.data<double>()[j] * d.data<double>()[p.cols[j] * k + c];
        want_t[p.cols[j] * k + c] += v.data<double>()[j] * dt.data<double>()[p.rows[j] * k + c];
      }
    for (int64_t i = 0; i < m * k; ++i) EXPECT_NEAR(out.data<double>()[i], want[i], 1e-12);
    for (int64_t i = 0; i < n * k; ++i) EXPECT_NEAR(out_t.data<double>()[i], want_t[i], 1e-12);
  }
}

TEST(Sparse, SddmmGatherScatterAndConversions) {
  std::mt19937 rng(12);
  const int64_t m = 6, n = 5, k = 4;
  Pattern p = random_pattern(m, n, 0.5, rng);
  const int64_t nnz = static_cast<int64_t>(p.cols.size());
  Tensor x = random_tensor({m, k}, rng), y = random_tensor({n, k}, rng),
         d = random_tensor({m, n}, rng);
  Tensor s = Tensor::empty({nnz}, DType::float64), g = Tensor::empty({nnz}, DType::float64);
  Tensor back = Tensor::empty({m, n}, DType::float64), rows = Tensor::empty({nnz}, DType::int32);
  Tensor ptr = Tensor::empty({m + 1}, DType::int32);
  csr_sddmm(p.indptr, p.indices, x, y, s);
  csr_gather(p.indptr, p.indices, d, g);
  csr_scatter(p.indptr, p.indices, g, back);
  csr2coo(p.indptr, rows);
  coo2csr(rows, ptr);
  std::vector<double> dense_back(m * n, 0.0);
  for (int64_t j = 0; j < nnz; ++j) {
    double dot = 0;
    for (int64_t c = 0; c < k; ++c)
      dot += x.data<double>()[p.rows[j] * k + c] * y.data<double>()[p.cols[j] * k + c];
    EXPECT_NEAR(s.data<double>()[j], dot, 1e-12);
    EXPECT_EQ(g.data<double>()[j], d.data<double>()[p.rows[j] * n + p.cols[j]]);
    EXPECT_EQ(rows.data<int32_t>()[j], p.rows[j]);
    dense_back[p.rows[j] * n + p.cols[j]] = d.data<double>()[p.rows[j] * n + p.cols[j]];
  }
  for (int64_t i = 0; i < m * n; ++i) EXPECT_EQ(back.data<double>()[i], dense_back[i]);
  for (int64_t r = 0; r <= m; ++r) EXPECT_EQ(ptr.data<int32_t>()[r], p.indptr.data<int32_t>()[r]);
}

TEST(Sparse, MalformedIndexArraysThrowValueError) {
  auto ints = [](std::vector<int32_t> v) {
    Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::int32);
    for (size_t i = 0; i < v.size(); ++i) t.data<int32_t>()[i] = v[i];
    return t;
  };
  Tensor vals = Tensor::zeros({2}, DType::float64), dense = Tensor::zeros({2, 2}, DType::float64);
  Tensor out = Tensor::empty({2, 2}, DType::float64);
  EXPECT_THROW(csr_spmm(ints({0, 2, 1}), ints({0, 1}), vals, dense, out, false), ValueError);
  EXPECT_THROW(csr_spmm(ints({0, 1, 2}), ints({0, 9}), vals, dense, out, false), ValueError);
  EXPECT_THROW(csr_spmm(ints({0, 1, 3}), ints({0, 1}), vals, dense, out, false), ValueError);
  EXPECT_THROW(csr_scatter(ints({1, 1, 2}), ints({0, 1}), vals, out), ValueError);
  Tensor rows = Tensor::empty({2}, DType::int32), ptr = Tensor::empty({3}, DType::int32);
  EXPECT_THROW(csr2coo(ints({0, 2, 1}), rows), ValueError);
  EXPECT_THROW(coo2csr(ints({1, 0}), ptr), ValueError);
  EXPECT_THROW(coo2csr(ints({0, 5}), ptr), ValueError);
  EXPECT_THROW(coo2csr(ints({-1, 0}), ptr), ValueError);
}

}  // namespace
}  // namespace mycel::cpu
