// norm_nhwc.h's channels-last kernels against the NCHW loops (norm_fast.h) run on the same data
// transposed, and against double-precision references written here: batch norm forward
// (training and inference) and backward (nonzero dmean/dinvstd), the mean over H, W and its
// broadcast back; odd channel counts, 1x1 and 4x4 planes, batch 1 and 32, one to three
// threads, float32 and bf16 (bf16 results within one bf16 ulp of the NCHW kernel's). The op
// launches (batch_norm, mean, broadcast_like with KernelParams) take the NHWC path only where
// the layout step's layout is NHWC. DISABLED_Timings prints the per-launch minima of the NCHW
// and NHWC kernels at ResNet-18's CIFAR shapes (--gtest_also_run_disabled_tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "mycel/core/half.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/norm_fast.h"
#include "mycel/kernels/cpu/norm_nhwc.h"
#include "mycel/ops/registry.h"

namespace mycel {
namespace {

using cpu::batch_norm_f32;
using cpu::batch_norm_grad_f32;
using Named = std::map<std::string, AttrValue>;

// Values rounded to dtype, as stored.
Tensor make(const Shape& s, DType dt, const std::vector<float>& v) {
  Tensor t = Tensor::empty(s, dt);
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DType::bfloat16)
      t.data<BFloat16>()[i] = BFloat16(v[i]);
    else
      t.data<float>()[i] = v[i];
  }
  return t;
}

std::vector<float> read(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = t.dtype() == DType::bfloat16 ? float(t.data<BFloat16>()[i]) : t.data<float>()[i];
  return v;
}

std::vector<float> stored(const std::vector<float>& v, DType dt) {
  return read(make({static_cast<int64_t>(v.size())}, dt, v));
}

// (n, c, hw) <-> (n, hw, c).
std::vector<float> to_nhwc(const std::vector<float>& v, int64_t n, int64_t c, int64_t hw) {
  std::vector<float> o(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t p = 0; p < hw; ++p) o[(i * hw + p) * c + j] = v[(i * c + j) * hw + p];
  return o;
}
std::vector<float> to_nchw(const std::vector<float>& v, int64_t n, int64_t c, int64_t hw) {
  std::vector<float> o(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t p = 0; p < hw; ++p) o[(i * c + j) * hw + p] = v[(i * hw + p) * c + j];
  return o;
}

std::vector<float> randn(size_t n, std::mt19937& g, float mean = 0, float sd = 1) {
  std::normal_distribution<float> d(mean, sd);
  std::vector<float> v(n);
  for (float& f : v) f = d(g);
  return v;
}

// One bf16 ulp at |v| (the spacing of bf16 values there).
double bf16_ulp(double v) {
  int e;
  std::frexp(std::max(std::abs(v), 1e-30), &e);
  return std::ldexp(1.0, e - 8);
}

struct ThreadsScope {
  int before = num_threads();
  explicit ThreadsScope(int t) { set_num_threads(t); }
  ~ThreadsScope() { set_num_threads(before); }
};

struct Case {
  int64_t n, c, h, w;
  DType dt;
  int threads;
  bool training;
};

std::string name(const Case& k) {
  char b[128];
  std::snprintf(b, sizeof b, "n%ld c%ld %ldx%ld %s threads %d %s", long(k.n), long(k.c), long(k.h),
                long(k.w), k.dt == DType::bfloat16 ? "bf16" : "f32", k.threads,
                k.training ? "training" : "inference");
  return b;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType dt : {DType::float32, DType::bfloat16})
    for (int64_t c : {3, 17, 64, 512})
      for (int64_t hw : {1, 4})
        for (int64_t n : {1, 32})
          for (int threads : {1, 2, 3})
            for (bool training : {true, false}) {
              if (training && n * hw * hw < 2) continue;  // batch_norm's infer refuses it
              out.push_back({n, c, hw, hw, dt, threads, training});
            }
  return out;
}

// Activation comparison: float32 within float rounding of the magnitude `mag` of the terms that
// made the value; bf16 within one ulp of the other's value (plus that float slack: the two
// kernels' per-channel coefficients differ in their last float bits).
void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  const std::vector<double>& mag, DType dt, const std::string& what) {
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    double tol = 2e-5 * mag[i] + 1e-6;
    if (dt == DType::bfloat16) tol += bf16_ulp(std::max(std::abs(got[i]), std::abs(want[i])));
    if (!(std::abs(double(got[i]) - want[i]) <= tol)) {
      ADD_FAILURE() << what << " [" << i << "]: " << got[i] << " vs " << want[i];
      ++bad;
    }
  }
}

void expect_close_stats(const float* got, const std::vector<double>& want,
                        const std::vector<double>& mag, int64_t c, const std::string& what) {
  for (int64_t j = 0; j < c; ++j)
    EXPECT_NEAR(got[j], want[j], 2e-5 * mag[j] + 1e-6) << what << " channel " << j;
}

TEST(NormNhwc, BatchNormForwardMatchesNchwAndDouble) {
  for (const Case& k : cases()) {
    SCOPED_TRACE(name(k));
    ThreadsScope threads(k.threads);
    std::mt19937 g(static_cast<unsigned>(k.c * 131 + k.n * 7 + k.h));
    const int64_t hw = k.h * k.w, count = k.n * hw, total = count * k.c;
    const std::vector<float> xs = stored(randn(total, g, 0.5f, 2.0f), k.dt);
    const std::vector<float> gs = randn(k.c, g, 1.0f, 0.3f), bs = randn(k.c, g),
                             rm = randn(k.c, g, 0.2f, 0.5f);
    std::vector<float> rv(k.c);
    for (float& v : rv) v = 0.5f + std::abs(randn(1, g)[0]);
    const double eps = 1e-5, momentum = 0.1;
    const Shape xshape{k.n, k.c, k.h, k.w};
    Tensor x = make(xshape, k.dt, xs), xn = make(xshape, k.dt, to_nhwc(xs, k.n, k.c, hw));
    Tensor scale = make({k.c}, DType::float32, gs), bias = make({k.c}, DType::float32, bs);
    auto stat = [&](const std::vector<float>& v) { return make({k.c}, DType::float32, v); };
    Tensor rm1 = stat(rm), rv1 = stat(rv), rm2 = stat(rm), rv2 = stat(rv);
    Tensor y1 = Tensor::empty(xshape, k.dt), y2 = Tensor::empty(xshape, k.dt);
    Tensor sm1 = stat(rm), si1 = stat(rm), sm2 = stat(rm), si2 = stat(rm);
    ASSERT_TRUE(batch_norm_f32(x, scale, bias, rm1, rv1, y1, sm1, si1, k.n, k.c, hw, k.training,
                               eps, momentum));
    ASSERT_TRUE(cpu::batch_norm_nhwc(xn, scale, bias, rm2, rv2, y2, sm2, si2, count, k.c,
                                     k.training, eps, momentum));
    // The double reference.
    std::vector<double> mu(k.c), inv(k.c), nrm(k.c), nrv(k.c), smag(k.c);
    for (int64_t j = 0; j < k.c; ++j) {
      double s = 0, sq = 0, m = 0;
      for (int64_t i = 0; i < k.n; ++i)
        for (int64_t p = 0; p < hw; ++p) s += xs[(i * k.c + j) * hw + p];
      m = s / count;
      for (int64_t i = 0; i < k.n; ++i)
        for (int64_t p = 0; p < hw; ++p) {
          const double d = xs[(i * k.c + j) * hw + p] - m;
          sq += d * d;
        }
      mu[j] = k.training ? m : rm[j];
      const double var = k.training ? sq / count : rv[j];
      inv[j] = 1 / std::sqrt(var + eps);
      nrm[j] = k.training ? 0.9 * rm[j] + 0.1 * m : rm[j];
      nrv[j] = k.training ? 0.9 * rv[j] + 0.1 * sq / (count - 1) : rv[j];
      smag[j] = std::abs(mu[j]) + inv[j] + std::abs(nrm[j]) + std::abs(nrv[j]) + 1;
    }
    std::vector<float> want(total);
    std::vector<double> mag(total);
    for (int64_t i = 0; i < total; ++i) {
      const int64_t j = i / hw % k.c;
      want[i] = static_cast<float>((xs[i] - mu[j]) * inv[j] * gs[j] + bs[j]);
      mag[i] =
          std::abs(xs[i] * inv[j] * gs[j]) + std::abs(mu[j] * inv[j] * gs[j]) + std::abs(bs[j]);
    }
    const std::vector<float> got = to_nchw(read(y2), k.n, k.c, hw);
    expect_close(got, read(y1), mag, k.dt, "y vs NCHW");
    expect_close(got, want, mag, k.dt, "y vs double");
    expect_close_stats(sm2.data<float>(), mu, smag, k.c, "saved mean");
    expect_close_stats(si2.data<float>(), inv, smag, k.c, "saved invstd");
    expect_close_stats(rm2.data<float>(), nrm, smag, k.c, "running mean");
    expect_close_stats(rv2.data<float>(), nrv, smag, k.c, "running var");
    for (int64_t j = 0; j < k.c; ++j) {
      EXPECT_NEAR(sm2.data<float>()[j], sm1.data<float>()[j], 2e-5 * smag[j]);
      EXPECT_NEAR(si2.data<float>()[j], si1.data<float>()[j], 2e-5 * smag[j]);
      EXPECT_NEAR(rv2.data<float>()[j], rv1.data<float>()[j], 2e-5 * smag[j]);
    }
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(NormNhwc, BatchNormBackwardMatchesNchwAndDouble) {
  for (const Case& k : cases()) {
    SCOPED_TRACE(name(k));
    ThreadsScope threads(k.threads);
    std::mt19937 g(static_cast<unsigned>(k.c * 17 + k.n * 3 + k.h));
    const int64_t hw = k.h * k.w, count = k.n * hw, total = count * k.c;
    const std::vector<float> xs = stored(randn(total, g, 0.5f, 2.0f), k.dt),
                             dys = stored(randn(total, g), k.dt);
    const std::vector<float> gs = randn(k.c, g, 1.0f, 0.3f), mus = randn(k.c, g, 0.5f, 0.1f),
                             dmu = randn(k.c, g), dinv = randn(k.c, g);
    std::vector<float> invs(k.c);
    for (float& v : invs) v = 0.3f + std::abs(randn(1, g)[0]);
    const Shape xshape{k.n, k.c, k.h, k.w};
    auto stat = [&](const std::vector<float>& v) { return make({k.c}, DType::float32, v); };
    Tensor x = make(xshape, k.dt, xs), dy = make(xshape, k.dt, dys);
    Tensor xn = make(xshape, k.dt, to_nhwc(xs, k.n, k.c, hw)),
           dyn = make(xshape, k.dt, to_nhwc(dys, k.n, k.c, hw));
    Tensor scale = stat(gs), mean = stat(mus), invstd = stat(invs), dmean = stat(dmu),
           dinvstd = stat(dinv);
    Tensor dx1 = Tensor::empty(xshape, k.dt), dx2 = Tensor::empty(xshape, k.dt);
    Tensor dg1 = stat(gs), db1 = stat(gs), dg2 = stat(gs), db2 = stat(gs);
    ASSERT_TRUE(batch_norm_grad_f32(dy, x, scale, mean, invstd, dmean, dinvstd, dx1, dg1, db1, k.n,
                                    k.c, hw, k.training));
    ASSERT_TRUE(cpu::batch_norm_grad_nhwc(dyn, xn, scale, mean, invstd, dmean, dinvstd, dx2, dg2,
                                          db2, count, k.c, k.training));
    // The double reference: dx = a dy + bx xhat + k with the batch sums in double.
    std::vector<double> sdy(k.c), sxh(k.c), mdy(k.c), mxh(k.c), a(k.c), bx(k.c), kk(k.c);
    for (int64_t i = 0; i < total; ++i) {
      const int64_t j = i / hw % k.c;
      const double xh = (double(xs[i]) - mus[j]) * invs[j];
      sdy[j] += dys[i];
      sxh[j] += dys[i] * xh;
      mdy[j] += std::abs(dys[i]);
      mxh[j] += std::abs(dys[i] * xh);
    }
    for (int64_t j = 0; j < k.c; ++j) {
      a[j] = double(gs[j]) * invs[j];
      if (k.training) {
        bx[j] = -a[j] * sxh[j] / count - double(dinv[j]) * invs[j] * invs[j] / count;
        kk[j] = -a[j] * sdy[j] / count + double(dmu[j]) / count;
      }
      EXPECT_NEAR(db2.data<float>()[j], sdy[j], 2e-5 * mdy[j] + 1e-6) << "dbias " << j;
      EXPECT_NEAR(dg2.data<float>()[j], sxh[j], 2e-5 * mxh[j] + 1e-6) << "dscale " << j;
      EXPECT_NEAR(db2.data<float>()[j], db1.data<float>()[j], 2e-5 * mdy[j] + 1e-6);
      EXPECT_NEAR(dg2.data<float>()[j], dg1.data<float>()[j], 2e-5 * mxh[j] + 1e-6);
    }
    std::vector<float> want(total);
    std::vector<double> mag(total);
    for (int64_t i = 0; i < total; ++i) {
      const int64_t j = i / hw % k.c;
      const double xh = (double(xs[i]) - mus[j]) * invs[j];
      want[i] = static_cast<float>(a[j] * dys[i] + bx[j] * xh + kk[j]);
      mag[i] = std::abs(a[j] * dys[i]) + std::abs(bx[j] * xh) + std::abs(kk[j]);
    }
    const std::vector<float> got = to_nchw(read(dx2), k.n, k.c, hw);
    expect_close(got, read(dx1), mag, k.dt, "dx vs NCHW");
    expect_close(got, want, mag, k.dt, "dx vs double");
    if (::testing::Test::HasFailure()) return;
  }
}

// The same thread count gives the same bits (sums added in chunk order, not finishing order).
TEST(NormNhwc, DeterministicForAThreadCount) {
  ThreadsScope threads(3);
  std::mt19937 g(5);
  const int64_t n = 32, c = 64, hw = 16, total = n * c * hw;
  const Shape s{n, c, 4, 4};
  Tensor x = make(s, DType::bfloat16, randn(total, g)),
         dy = make(s, DType::bfloat16, randn(total, g));
  Tensor p = make({c}, DType::float32, randn(c, g, 1, 0.1f));
  auto run = [&] {
    Tensor rm = make({c}, DType::float32, std::vector<float>(c, 0.f)),
           rv = make({c}, DType::float32, std::vector<float>(c, 1.f));
    Tensor y = Tensor::empty(s, DType::bfloat16), sm = Tensor::empty({c}, DType::float32),
           si = Tensor::empty({c}, DType::float32), dx = Tensor::empty(s, DType::bfloat16),
           dg = Tensor::empty({c}, DType::float32), db = Tensor::empty({c}, DType::float32);
    EXPECT_TRUE(cpu::batch_norm_nhwc(x, p, p, rm, rv, y, sm, si, n * hw, c, true, 1e-5, 0.1));
    EXPECT_TRUE(cpu::batch_norm_grad_nhwc(dy, x, p, sm, si, p, p, dx, dg, db, n * hw, c, true));
    std::vector<float> all = read(y);
    for (const Tensor* t : {&sm, &si, &rm, &rv, &dx, &dg, &db}) {
      const std::vector<float> v = read(*t);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  const std::vector<float> first = run();
  for (int i = 0; i < 3; ++i) {
    const std::vector<float> again = run();
    ASSERT_EQ(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)), 0);
  }
}

TEST(NormNhwc, RefusesOtherDtypesAndShapes) {
  const Shape s{2, 3, 2, 2};
  Tensor x = Tensor::empty(s, DType::float64), y = Tensor::empty(s, DType::float64);
  Tensor p = make({3}, DType::float32, {1, 1, 1});
  Tensor rm = make({3}, DType::float32, {0, 0, 0}), rv = make({3}, DType::float32, {1, 1, 1});
  EXPECT_FALSE(cpu::batch_norm_nhwc(x, p, p, rm, rv, y, rm, rv, 8, 3, true, 1e-5, 0.1));
  Tensor xf = Tensor::empty(s, DType::float32), yf = Tensor::empty(s, DType::float32);
  EXPECT_FALSE(cpu::batch_norm_nhwc(xf, p, p, rm, rv, yf, rm, rv, 8, 4, true, 1e-5, 0.1));
  Tensor p4 = make({4}, DType::float32, {1, 1, 1, 1});
  EXPECT_FALSE(cpu::batch_norm_nhwc(xf, p4, p, rm, rv, yf, rm, rv, 8, 3, true, 1e-5, 0.1));
  Tensor m = Tensor::empty({2, 3}, DType::float64);
  EXPECT_FALSE(cpu::mean_hw_nhwc(x, m, 2, 4, 3));
}

TEST(NormNhwc, MeanOverHwAndItsBroadcast) {
  for (DType dt : {DType::float32, DType::bfloat16})
    for (int64_t n : {1, 32})
      for (int64_t c : {3, 17, 64, 100, 512})
        for (int64_t hw : {1, 16, 64})
          for (int threads : {1, 2}) {
            SCOPED_TRACE(::testing::Message() << "n " << n << " c " << c << " hw " << hw << " "
                                              << dtype_name(dt) << " threads " << threads);
            ThreadsScope ts(threads);
            std::mt19937 g(static_cast<unsigned>(n + c + hw));
            const std::vector<float> xs = stored(randn(n * hw * c, g, 0.3f, 1.0f), dt);  // NHWC
            Tensor x = make({n, c, 1, hw}, dt, xs), y = Tensor::empty({n, c}, dt);
            ASSERT_TRUE(cpu::mean_hw_nhwc(x, y, n, hw, c));
            const std::vector<float> got = read(y);
            std::vector<float> in_order(n * c);
            for (int64_t i = 0; i < n; ++i)
              for (int64_t j = 0; j < c; ++j) {
                float s = 0;  // the NCHW mean's order for short planes: in order, in float
                double d = 0, mag = 0;
                for (int64_t p = 0; p < hw; ++p) {
                  s += xs[(i * hw + p) * c + j];
                  d += xs[(i * hw + p) * c + j];
                  mag += std::abs(xs[(i * hw + p) * c + j]);
                }
                in_order[i * c + j] = s / static_cast<float>(hw);
                double tol = 1e-6 * mag / hw + 1e-7;
                if (dt == DType::bfloat16) tol += bf16_ulp(d / hw) / 2;
                EXPECT_NEAR(got[i * c + j], d / hw, tol) << i << "," << j;
              }
            const std::vector<float> want = stored(in_order, dt);
            EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
            // The broadcast: each (i, j) value at every position of image i, channel j.
            Tensor b = Tensor::empty({n, c, 1, hw}, dt);
            ASSERT_TRUE(cpu::broadcast_hw_nhwc(y, b, n, hw, c));
            const std::vector<float> bv = read(b);
            for (int64_t i = 0; i < n; ++i)
              for (int64_t p = 0; p < hw; ++p)
                for (int64_t j = 0; j < c; ++j) ASSERT_EQ(bv[(i * hw + p) * c + j], got[i * c + j]);
          }
}

// The ops' kernels with the layout step's KernelParams: NHWC where that layout is NHWC for the
// dtype (layout_taken set), the NCHW kernels otherwise (plain launches, other axes).
TEST(NormNhwc, OpLaunchesTakeNhwcOnlyWhereTheLayoutIsNhwc) {
  std::mt19937 g(11);
  const int64_t n = 2, c = 5, h = 3, w = 2, hw = h * w;
  for (DType dt : {DType::float32, DType::bfloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const bool nhwc = cpu::nhwc_activations(dt);
    const std::vector<float> xs = stored(randn(n * c * hw, g), dt);  // NHWC bytes
    Tensor x = make({n, c, h, w}, dt, xs);
    // mean over (2, 3), keep_dims
    const OpDef& mean = Registry::get().at("mean");
    Attrs attrs =
        make_attrs(mean, Named{{"axis", std::vector<int64_t>{-1, 2}}, {"keep_dims", true}});
    std::vector<Tensor> ins{x}, outs{Tensor::empty({n, c, 1, 1}, dt)};
    KernelParams params;
    params.src_blocked = true;
    mean.kernel(KernelContext{mean, ins, outs, attrs, nullptr, &params});
    EXPECT_EQ(params.layout_taken, nhwc);
    const std::vector<float> got = read(outs[0]);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < c; ++j) {
        double s = 0;
        for (int64_t p = 0; p < hw; ++p)
          s += nhwc ? xs[(i * hw + p) * c + j] : xs[(i * c + j) * hw + p];
        EXPECT_NEAR(got[i * c + j], s / hw, 1e-2 * (1 + std::abs(s / hw)));
      }
    Attrs other =
        make_attrs(mean, Named{{"axis", std::vector<int64_t>{1, 2}}, {"keep_dims", true}});
    std::vector<Tensor> outs2{Tensor::empty({n, 1, 1, w}, dt)};
    KernelParams p2;
    p2.src_blocked = true;
    mean.kernel(KernelContext{mean, ins, outs2, other, nullptr, &p2});
    EXPECT_FALSE(p2.layout_taken);
    // broadcast_like of the mean back to x's shape
    const OpDef& bl = Registry::get().at("broadcast_like");
    Attrs none = make_attrs(bl, Named{});
    std::vector<Tensor> bins{outs[0], x}, bouts{Tensor::empty({n, c, h, w}, dt)};
    KernelParams p3;
    p3.dst_blocked = true;
    bl.kernel(KernelContext{bl, bins, bouts, none, nullptr, &p3});
    EXPECT_EQ(p3.layout_taken, nhwc);
    const std::vector<float> bv = read(bouts[0]);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < c; ++j)
        for (int64_t p = 0; p < hw; ++p)
          EXPECT_EQ(bv[nhwc ? (i * hw + p) * c + j : (i * c + j) * hw + p], got[i * c + j]);
    // batch_norm in training: the NHWC statistics of the NHWC bytes.
    const OpDef& bn = Registry::get().at("batch_norm");
    Attrs bna = make_attrs(bn, Named{{"is_training", true}, {"epsilon", 1e-5}, {"momentum", 0.1}});
    auto vec = [&](float v) { return make({c}, DType::float32, std::vector<float>(c, v)); };
    std::vector<Tensor> bnin{x, vec(1), vec(0), vec(0), vec(1)};
    std::vector<Tensor> bnout{Tensor::empty({n, c, h, w}, dt), vec(0), vec(0)};
    KernelParams p4;
    p4.src_blocked = p4.dst_blocked = true;
    bn.kernel(KernelContext{bn, bnin, bnout, bna, nullptr, &p4});
    EXPECT_EQ(p4.layout_taken, nhwc);
    for (int64_t j = 0; j < c; ++j) {
      double s = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t p = 0; p < hw; ++p)
          s += nhwc ? xs[(i * hw + p) * c + j] : xs[(i * c + j) * hw + p];
      EXPECT_NEAR(bnout[1].data<float>()[j], s / (n * hw), 1e-5);
    }
  }
}

// Per-launch minima (ms) of the NCHW loops and the NHWC kernels at ResNet-18's CIFAR shapes.
TEST(NormNhwc, DISABLED_Timings) {
  const int reps = std::getenv("REPS") ? std::atoi(std::getenv("REPS")) : 20;
  auto min_ms = [&](auto&& fn) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      fn();
      best = std::min(
          best,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  const OpDef& mean = Registry::get().at("mean");
  const OpDef& bl = Registry::get().at("broadcast_like");
  std::mt19937 g(3);
  for (int threads : {1, 2}) {
    ThreadsScope ts(threads);
    for (auto [c, hw] : {std::pair<int64_t, int64_t>{64, 32}, {128, 16}, {256, 8}, {512, 4}}) {
      const int64_t n = 32, total = n * c * hw * hw;
      const Shape s{n, c, hw, hw};
      const DType dt = DType::bfloat16;
      Tensor x = make(s, dt, randn(total, g)), dy = make(s, dt, randn(total, g));
      Tensor y = Tensor::empty(s, dt), dx = Tensor::empty(s, dt);
      auto vec = [&](float v) { return make({c}, DType::float32, std::vector<float>(c, v)); };
      Tensor p = vec(1), rm = vec(0), rv = vec(1), sm = vec(0), si = vec(1), dg = vec(0),
             db = vec(0);
      const int64_t sp = hw * hw;
      const double f_nchw =
          min_ms([&] { batch_norm_f32(x, p, p, rm, rv, y, sm, si, n, c, sp, true, 1e-5, 0.1); });
      const double f_nhwc = min_ms(
          [&] { cpu::batch_norm_nhwc(x, p, p, rm, rv, y, sm, si, n * sp, c, true, 1e-5, 0.1); });
      const double f_inf = min_ms(
          [&] { cpu::batch_norm_nhwc(x, p, p, rm, rv, y, sm, si, n * sp, c, false, 1e-5, 0.1); });
      const double b_inf = min_ms(
          [&] { cpu::batch_norm_grad_nhwc(dy, x, p, sm, si, p, p, dx, dg, db, n * sp, c, false); });
      const double b_nchw =
          min_ms([&] { batch_norm_grad_f32(dy, x, p, sm, si, p, p, dx, dg, db, n, c, sp, true); });
      const double b_nhwc = min_ms(
          [&] { cpu::batch_norm_grad_nhwc(dy, x, p, sm, si, p, p, dx, dg, db, n * sp, c, true); });
      Attrs attrs =
          make_attrs(mean, Named{{"axis", std::vector<int64_t>{2, 3}}, {"keep_dims", true}});
      std::vector<Tensor> ins{x}, outs{Tensor::empty({n, c, 1, 1}, dt)};
      const double m_nchw = min_ms([&] {
        mean.kernel(KernelContext{mean, ins, outs, attrs, nullptr, nullptr});
      });
      const double m_nhwc = min_ms([&] { cpu::mean_hw_nhwc(x, outs[0], n, sp, c); });
      Attrs none = make_attrs(bl, Named{});
      std::vector<Tensor> bins{outs[0], x}, bouts{y};
      const double g_nchw = min_ms([&] {
        bl.kernel(KernelContext{bl, bins, bouts, none, nullptr, nullptr});
      });
      const double g_nhwc = min_ms([&] { cpu::broadcast_hw_nhwc(outs[0], y, n, sp, c); });
      std::printf(
          "threads %d (32,%ld,%ld,%ld) bf16 ms NCHW/NHWC: batch_norm %.3f/%.3f grad %.3f/%.3f "
          "mean %.3f/%.3f broadcast_like %.3f/%.3f; NHWC inference batch_norm %.3f grad %.3f\n",
          threads, long(c), long(hw), long(hw), f_nchw, f_nhwc, b_nchw, b_nhwc, m_nchw, m_nhwc,
          g_nchw, g_nhwc, f_inf, b_inf);
    }
  }
}

}  // namespace
}  // namespace mycel
