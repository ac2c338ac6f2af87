#include "mycel/kernels/cpu/random_dist.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "mycel/core/parallel.h"
#include "mycel/core/random.h"
#include "mycel/kernels/cpu/random_draws.h"

namespace mycel::cpu {
namespace {

PhiloxStream stream(const KernelContext& ctx, int64_t n) { return draw_stream(ctx, n); }

// Gamma(a, 1): Marsaglia and Tsang (2000) for a >= 1; for a < 1, Gamma(a + 1) * u^(1/a).
double gamma_draw(Draws& d, double a) {
  if (!(a > 0)) return std::numeric_limits<double>::quiet_NaN();
  double boost = 1.0;
  if (a < 1.0) {
    boost = std::pow(d.open(), 1.0 / a);
    a += 1.0;
  }
  const double dd = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * dd);
  for (;;) {
    double x, v;
    do {
      x = d.normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = d.open();
    if (u < 1.0 - 0.0331 * x * x * x * x) return dd * v * boost;
    if (std::log(u) < 0.5 * x * x + dd * (1.0 - v + std::log(v))) return dd * v * boost;
  }
}

// Poisson(lam): Knuth's product of uniforms below 10 (a few draws), else Hormann's transformed
// rejection with squeeze, PTRS ("The transformed rejection method for generating Poisson random
// variables", 1993).
double poisson_draw(Draws& d, double lam) {
  if (!(lam >= 0) || !std::isfinite(lam)) return std::numeric_limits<double>::quiet_NaN();
  if (lam == 0) return 0;
  if (lam < 10) {
    const double limit = std::exp(-lam);
    double prod = d.open(), k = 0;
    while (prod > limit) {
      prod *= d.open();
      k += 1;
    }
    return k;
  }
  const double slam = std::sqrt(lam), loglam = std::log(lam);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double u = d.open() - 0.5, v = d.open(), us = 0.5 - std::fabs(u);
    const double k = std::floor((2 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <=
        -lam + k * loglam - std::lgamma(k + 1))
      return k;
  }
}

// Writes f(draws of element i, parameter index) for out[i], i over (repeat, params) row-major.
template <class Fn>
void fill_param(const KernelContext& ctx, const Tensor& param, Tensor& out, int64_t cost, Fn f) {
  const int64_t n = out.numel(), m = param.numel();
  if (n == 0) return;
  const PhiloxStream s = stream(ctx, n);
  Tensor p = param.to(DType::float64);
  const double* pp = p.data<double>();
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    T* o = out.data<T>();
    parallel_for(n, cost, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        Draws d(s, uint64_t(i));
        const double v = f(d, pp[i % m]);
        if constexpr (std::is_integral_v<T>)  // counts saturate at the type's largest value
          o[i] = v < double(std::numeric_limits<T>::max()) ? T(v) : std::numeric_limits<T>::max();
        else
          o[i] = T(C(v));
      }
    });
  });
}

// Row r's inverse CDF: index of the first cumulative weight above u * total.
int64_t pick(const std::vector<double>& cdf, double u) {
  const double target = u * cdf.back();
  auto it = std::upper_bound(cdf.begin(), cdf.end(), target);
  int64_t k = std::min<int64_t>(it - cdf.begin(), int64_t(cdf.size()) - 1);
  while (k > 0 && cdf[k] == cdf[k - 1]) --k;  // never a zero-weight class
  return k;
}

// out[i] = v for the index dtypes the ops take (int16, int32, int64).
void write_index(Tensor& out, int64_t i, int64_t v) {
  switch (out.dtype()) {
    case DType::int16:
      out.data<int16_t>()[i] = static_cast<int16_t>(v);
      return;
    case DType::int32:
      out.data<int32_t>()[i] = static_cast<int32_t>(v);
      return;
    default:
      out.data<int64_t>()[i] = v;
  }
}

}  // namespace

void standard_laplace_kernel(const KernelContext& ctx) {
  Tensor& out = ctx.out(0);
  const int64_t n = out.numel();
  if (n == 0) return;
  const PhiloxStream s = stream(ctx, n);
  visit_float_dtype(out.dtype(), ctx.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    T* o = out.data<T>();
    parallel_for(n, 20, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        Draws d(s, uint64_t(i));
        const double u = d.open() - 0.5;  // (-1/2, 1/2): the CDF's inverse is finite
        o[i] = T(C(u < 0 ? std::log1p(2 * u) : -std::log1p(-2 * u)));
      }
    });
  });
}

void random_gamma_kernel(const KernelContext& ctx) {
  fill_param(ctx, ctx.in(0), ctx.out(0), 60, [](Draws& d, double a) { return gamma_draw(d, a); });
}

void random_poisson_kernel(const KernelContext& ctx) {
  // Rates are data: checked before the parallel loop (which must not throw); the bound keeps
  // every count exact in float64 and inside int64.
  const Tensor rate = ctx.in(0).to(DType::float64);
  for (int64_t i = 0; i < rate.numel(); ++i) {
    const double v = rate.data<double>()[i];
    if (!(v >= 0 && v <= 0x1.0p50))
      MYCEL_THROW(ValueError, "[random_poisson] rates must be in [0, 2^50], got ", v);
  }
  fill_param(ctx, ctx.in(0), ctx.out(0), 60,
             [](Draws& d, double lam) { return poisson_draw(d, lam); });
}

namespace {

// MindSpore's CPU RandomCategorical for an op seed s (so that a seeded call draws MindSpore's
// samples): a minstd_rand0 engine seeded with Philox4x32-10 of (0, s) under MindSpore's mixing
// key, one uniform per sample column shared by every row, and the CDF summed in the logits'
// own dtype (exp in float), searched for the first entry not below total * u.
template <class T>
void categorical_like_mindspore(const Tensor& logits, int64_t k, int64_t seed, Tensor& out) {
  const int64_t rows = logits.shape()[0], c = logits.shape()[1];
  const auto mix = philox4x32_10({0, 0, uint32_t(uint64_t(seed)), uint32_t(uint64_t(seed) >> 32)},
                                 {0x3ec8f720u, 0x02461e29u});
  std::minstd_rand0 engine((uint64_t(mix[1]) << 32) | mix[0]);
  std::uniform_real_distribution<> dist(0, 1);
  std::vector<T> u(static_cast<size_t>(k));
  for (T& v : u) v = static_cast<T>(static_cast<float>(dist(engine)));
  const T* lp = logits.data<T>();
  std::vector<T> cdf(static_cast<size_t>(c));
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = lp + r * c;
    T mx = row[0];
    for (int64_t j = 1; j < c; ++j)
      if (row[j] > mx) mx = row[j];
    for (int64_t j = 0; j < c; ++j) {
      const T e = static_cast<T>(std::exp(static_cast<float>(row[j] - mx)));
      cdf[j] = j == 0 ? e : static_cast<T>(cdf[j - 1] + e);
    }
    for (int64_t t = 0; t < k; ++t) {
      const T target = static_cast<T>(cdf[c - 1] * u[t]);
      int64_t idx = 0;
      while (idx < c - 1 && cdf[idx] < target) ++idx;
      write_index(out, r * k + t, idx);
    }
  }
}

}  // namespace

void random_categorical_kernel(const KernelContext& ctx) {
  Tensor& out = ctx.out(0);
  const int64_t rows = ctx.in(0).shape()[0], c = ctx.in(0).shape()[1];
  const int64_t k = ctx.attrs.get_int("num_sample");
  if (rows * k == 0) return;
  if (ctx.attrs.get_int("seed") != 0 && ctx.attrs.get_int("seed2") == 0)
    return visit_float_dtype(ctx.in(0).dtype(), "random_categorical", [&](auto tag) {
      using T = typename decltype(tag)::type;
      categorical_like_mindspore<T>(ctx.in(0), k, ctx.attrs.get_int("seed"), out);
    });
  const Tensor logits = ctx.in(0).to(DType::float64);
  const PhiloxStream s = stream(ctx, rows * k);
  const double* lp = logits.data<double>();
  parallel_for(rows, c + k * 20, [&](int64_t b, int64_t e) {
    std::vector<double> cdf(static_cast<size_t>(c));
    for (int64_t r = b; r < e; ++r) {
      const double* row = lp + r * c;
      const double mx = *std::max_element(row, row + c);
      double acc = 0;
      for (int64_t j = 0; j < c; ++j) cdf[j] = acc += std::exp(row[j] - mx);
      for (int64_t t = 0; t < k; ++t) {
        Draws d(s, uint64_t(r * k + t));
        write_index(out, r * k + t, pick(cdf, d.open()));
      }
    }
  });
}

namespace {

// The draws of multinomial and multinomial_with_replacement: k indices per row of x's weights;
// `streams(n)` gives the Philox stream of n blocks (the op's seeds).
template <class Streams>
void multinomial_rows(const KernelContext& ctx, int64_t k, bool replacement, Streams streams) {
  const Tensor& x = ctx.in(0);
  const Tensor w = x.to(DType::float64);
  Tensor& out = ctx.out(0);
  const int64_t c = x.shape().back(), rows = x.numel() / std::max<int64_t>(c, 1);
  const double* pw = w.data<double>();
  // The weights are data: checked here, before the parallel loop (which must not throw).
  for (int64_t r = 0; r < rows; ++r) {
    int64_t positive = 0;
    double total = 0;
    for (int64_t j = 0; j < c; ++j) {
      const double v = pw[r * c + j];
      if (!(v >= 0) || !std::isfinite(v))
        MYCEL_THROW(ValueError, "[", ctx.op.name, "] weights must be finite and >= 0, got ", v,
                    " in row ", r);
      positive += v > 0;
      total += v;
    }
    if (total <= 0)
      MYCEL_THROW(ValueError, "[", ctx.op.name, "] row ", r, " has no positive weight");
    if (!replacement && positive < k)
      MYCEL_THROW(ValueError, "[", ctx.op.name, "] num_samples (", k,
                  ") without replacement exceeds ", "the ", positive,
                  " classes of positive weight in row ", r);
  }
  if (rows * k == 0) return;
  const PhiloxStream s = streams(rows * std::max(k, c));
  parallel_for(rows, c * 20, [&](int64_t b, int64_t e) {
    std::vector<double> cdf(static_cast<size_t>(c));
    std::vector<std::pair<double, int64_t>> keys;
    for (int64_t r = b; r < e; ++r) {
      const double* row = pw + r * c;
      if (replacement) {
        double acc = 0;
        for (int64_t j = 0; j < c; ++j) cdf[j] = acc += row[j];
        for (int64_t t = 0; t < k; ++t) {
          Draws d(s, uint64_t(r * k + t));
          write_index(out, r * k + t, pick(cdf, d.open()));
        }
        continue;
      }
      // Without replacement: the k largest log(w) + Gumbel noise (zero weights never chosen).
      keys.clear();
      for (int64_t j = 0; j < c; ++j) {
        if (row[j] <= 0) continue;
        Draws d(s, uint64_t(r * c + j));
        keys.push_back({std::log(row[j]) - std::log(-std::log(d.open())), j});
      }
      std::partial_sort(keys.begin(), keys.begin() + k, keys.end(),
                        [](const auto& p, const auto& q) { return p.first > q.first; });
      for (int64_t t = 0; t < k; ++t) write_index(out, r * k + t, keys[size_t(t)].second);
    }
  });
}

// The single value of a one-element int tensor (the seed and offset inputs).
int64_t scalar_input(const KernelContext& ctx, size_t i, const char* name) {
  const Tensor& t = ctx.in(i);
  MYCEL_CHECK(t.numel() == 1, ValueError, "[", ctx.op.name, "] input '", name,
              "' must hold one value, got ", t.numel());
  return t.dtype() == DType::int32 ? int64_t(t.data<int32_t>()[0]) : t.data<int64_t>()[0];
}

}  // namespace

void multinomial_kernel(const KernelContext& ctx) {
  multinomial_rows(ctx, ctx.attrs.get_int("num_samples"), ctx.attrs.get_bool("replacement"),
                   [&](int64_t n) { return stream(ctx, n); });
}

void multinomial_with_replacement_kernel(const KernelContext& ctx) {
  const int64_t seed = scalar_input(ctx, 1, "seed"), offset = scalar_input(ctx, 2, "offset");
  multinomial_rows(ctx, ctx.attrs.get_int("numsamples"), ctx.attrs.get_bool("replacement"),
                   [&](int64_t n) {
                     // seed -1 with offset 0: the global generator (MindSpore's random seed);
                     // otherwise the stream keyed by seed, starting at counter `offset`.
                     if (seed == -1 && offset == 0) return op_stream(0, 0, uint64_t(n));
                     return PhiloxStream{uint64_t(seed), uint64_t(offset)};
                   });
}

}  // namespace mycel::cpu
