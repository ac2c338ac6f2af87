#include "mycel/kernels/cpu/random_more.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/random_draws.h"

namespace mycel::cpu {
namespace {

// N(0, 1) restricted to [a, b] (Robert, "Simulation of truncated normal variables", 1995): plain
// rejection when the interval holds a wide central part, uniform proposals on short intervals,
// and a shifted exponential proposal for tails.
double truncated_normal_draw(Draws& d, double a, double b) {
  if (a < 0 && b > 0 && b - a >= 2) {  // mass >= 0.47: rejection from N(0, 1)
    for (;;) {
      const double z = d.normal();
      if (z >= a && z <= b) return z;
    }
  }
  const bool flip = b <= 0;  // the left tail mirrors the right one
  if (flip) std::swap(a, b), a = -a, b = -b;
  const double lo2 = a > 0 ? a * a : 0.0;  // the density's peak on [a, b] is exp(-lo2 / 2)
  if (b - a < 1 || a <= 0) {               // uniform proposal, accepted with density / peak
    for (;;) {
      const double z = a + (b - a) * d.open();
      if (std::log(d.open()) <= (lo2 - z * z) / 2) return flip ? -z : z;
    }
  }
  const double rate = (a + std::sqrt(a * a + 4)) / 2;  // Robert's optimal exponential rate
  for (;;) {
    const double z = a - std::log(d.open()) / rate;
    const double t = z - rate;
    if (z <= b && std::log(d.open()) <= -t * t / 2) return flip ? -z : z;
  }
}

// log Gamma(a, 1) sample: Marsaglia and Tsang for a >= 1; for a < 1, log Gamma(a + 1) +
// log(u) / a, kept in log space (the linear value underflows for small a).
double log_gamma_draw(Draws& d, double a) {
  double boost = 0.0;
  if (a < 1.0) {
    boost = std::log(d.open()) / a;
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
    if (u < 1.0 - 0.0331 * x * x * x * x ||
        std::log(u) < 0.5 * x * x + dd * (1.0 - v + std::log(v)))
      return std::log(dd * v) + boost;
  }
}

// Binomial(n, p) for p <= 1/2: the waiting-time (inversion) method while n p < 10, whose cost
// is n p draws, else Hormann's BTRS ("The generation of binomial random variates", 1993).
double binomial_draw(Draws& d, double n, double p) {
  if (n == 0 || p == 0) return 0;
  if (n * p < 10) {
    const double lq = std::log1p(-p);
    double x = 0, sum = 0;
    for (;;) {  // geometric gaps between successes until they pass n trials
      sum += std::ceil(std::log(d.open()) / lq);
      if (sum > n) return x;
      x += 1;
    }
  }
  const double q = 1 - p, spq = std::sqrt(n * p * q);
  const double b = 1.15 + 2.53 * spq, a = -0.0873 + 0.0248 * b + 0.01 * p, c = n * p + 0.5;
  const double vr = 0.92 - 4.2 / b, alpha = (2.83 + 5.1 / b) * spq, lpq = std::log(p / q);
  const double m = std::floor((n + 1) * p);
  const double h = std::lgamma(m + 1) + std::lgamma(n - m + 1);
  for (;;) {
    const double u = d.open() - 0.5, v = d.open(), us = 0.5 - std::fabs(u);
    const double k = std::floor((2 * a / us + b) * u + c);
    if (k < 0 || k > n) continue;
    if (us >= 0.07 && v <= vr) return k;
    if (std::log(v * alpha / (a / (us * us) + b)) <=
        h - std::lgamma(k + 1) - std::lgamma(n - k + 1) + (k - m) * lpq)
      return k;
  }
}

// out[i] = f(draws of element i, i) in out's float dtype, in parallel.
template <class Fn>
void fill(const KernelContext& ctx, Tensor& out, int64_t cost, Fn f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const PhiloxStream s = draw_stream(ctx, n);
  visit_float_dtype(out.dtype(), ctx.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    T* o = out.data<T>();
    parallel_for(n, cost, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        Draws d(s, uint64_t(i));
        o[i] = T(C(f(d, i)));
      }
    });
  });
}

}  // namespace

void truncated_normal_kernel(const KernelContext& ctx) {
  fill(ctx, ctx.out(0), 40, [](Draws& d, int64_t) { return truncated_normal_draw(d, -2.0, 2.0); });
}

void log_normal_kernel(const KernelContext& ctx) {
  const double mean = ctx.attrs.get_float("mean"), sd = ctx.attrs.get_float("std");
  fill(ctx, ctx.out(0), 30, [&](Draws& d, int64_t) { return std::exp(mean + sd * d.normal()); });
}

void exponential_kernel(const KernelContext& ctx) {
  const double rate = ctx.attrs.get_float("lambd");
  fill(ctx, ctx.out(0), 20, [&](Draws& d, int64_t) { return -std::log(d.open()) / rate; });
}

void binomial_kernel(const KernelContext& ctx) {
  const Tensor count = ctx.in(0).to(DType::float64), probs = ctx.in(1).to(DType::float64);
  const double* pn = count.data<double>();
  const double* pp = probs.data<double>();
  // Parameters are data: checked before the parallel loop (which must not throw). The bound on
  // n keeps every count exact in float64.
  for (int64_t i = 0; i < count.numel(); ++i) {
    if (!(pn[i] >= 0 && pn[i] <= 0x1.0p50 && pn[i] == std::floor(pn[i])))
      MYCEL_THROW(ValueError, "[binomial] 'count' must hold whole numbers in [0, 2^50], got ",
                  pn[i]);
    if (!(pp[i] >= 0 && pp[i] <= 1))
      MYCEL_THROW(ValueError, "[binomial] 'probs' must be in [0, 1], got ", pp[i]);
  }
  fill(ctx, ctx.out(0), 60, [&](Draws& d, int64_t i) {
    const double p = pp[i];  // draw for min(p, 1 - p), where both methods are exact and fast
    return p <= 0.5 ? binomial_draw(d, pn[i], p) : pn[i] - binomial_draw(d, pn[i], 1 - p);
  });
}

void random_beta_kernel(const KernelContext& ctx) {
  const Tensor alpha = ctx.in(0).to(DType::float64), beta = ctx.in(1).to(DType::float64);
  const double* pa = alpha.data<double>();
  const double* pb = beta.data<double>();
  const int64_t m = std::max<int64_t>(alpha.numel(), 1);
  fill(ctx, ctx.out(0), 120, [&](Draws& d, int64_t i) {
    const double a = pa[i % m], b = pb[i % m];
    if (!(a > 0) || !(b > 0)) return std::numeric_limits<double>::quiet_NaN();
    const double la = log_gamma_draw(d, a), lb = log_gamma_draw(d, b);
    return 1.0 / (1.0 + std::exp(lb - la));  // G_a / (G_a + G_b)
  });
}

}  // namespace mycel::cpu
