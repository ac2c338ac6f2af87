#include "mycel/kernels/cpu/random_more.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <unordered_set>
#include <vector>

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

// ---- parameterized truncated normal ----

void parameterized_truncated_normal_kernel(const KernelContext& ctx) {
  Tensor& out = ctx.out(0);
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t rows = out.shape()[0], per_row = n / rows;
  Tensor p[4];
  for (int k = 0; k < 4; ++k) p[k] = ctx.in(static_cast<size_t>(k)).to(DType::float64);
  // The parameter of row b: one value for every row, or one per row.
  auto at = [&](int k, int64_t b) { return p[k].data<double>()[p[k].numel() == 1 ? 0 : b]; };
  // Parameters are data: checked before the parallel loop (which must not throw).
  for (int64_t b = 0; b < rows; ++b) {
    const double sd = at(1, b), lo = at(2, b), hi = at(3, b);
    if (!(sd > 0) || !std::isfinite(at(0, b)) || !(lo < hi))
      MYCEL_THROW(ValueError, "[parameterized_truncated_normal] row ", b,
                  " needs stdevs > 0, a finite mean and min < max, got mean ", at(0, b),
                  ", stdevs ", sd, ", min ", lo, ", max ", hi);
  }
  fill(ctx, out, 40, [&](Draws& d, int64_t i) {
    const int64_t b = i / per_row;
    const double mean = at(0, b), sd = at(1, b);
    return mean + sd * truncated_normal_draw(d, (at(2, b) - mean) / sd, (at(3, b) - mean) / sd);
  });
}

// ---- non-deterministic integers ----

void non_deterministic_ints_kernel(const KernelContext& ctx) {
  Tensor& out = ctx.out(0);
  const int64_t n = out.numel();
  if (n == 0) return;
  std::random_device rd;  // the operating system's entropy: a fresh key for each call
  const uint64_t key = (uint64_t(rd()) << 32) | rd();
  const PhiloxStream s = op_stream(int64_t(key >> 1) | 1, int64_t(rd()) + 1, uint64_t(n));
  visit_any_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      T* o = out.data<T>();
      parallel_for(n, 4, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const auto w = s.block(uint64_t(i), 0);  // 64 uniform bits, truncated to T's width
          o[i] = static_cast<T>((uint64_t(w[0]) << 32) | w[1]);
        }
      });
    }
  });
}

// ---- candidate samplers ----

namespace {

// The distribution over [0, range_max) the candidates come from (prob is defined beyond it too).
struct Candidates {
  bool log_uniform;
  int64_t range;
  double prob(int64_t k) const {
    if (!log_uniform) return 1.0 / double(range);
    return (std::log(double(k) + 2) - std::log(double(k) + 1)) / std::log(double(range) + 1);
  }
  int64_t draw(Draws& d) const {
    if (!log_uniform) return std::min(range - 1, int64_t(d.open() * double(range)));
    // Inversion: P(K <= k) = log(k + 2) / log(range + 1).
    const double v = std::exp(d.open() * std::log(double(range) + 1)) - 1;
    return std::min(range - 1, std::max(int64_t(0), int64_t(v)));
  }
};

template <class I>
void sample_candidates(const KernelContext& ctx, const Candidates& dist) {
  const int64_t num_sampled = ctx.attrs.get_int("num_sampled");
  const bool unique = ctx.attrs.get_bool("unique");
  const bool remove_hits = ctx.attrs.get_bool("remove_accidental_hits");
  const Tensor& truth = ctx.in(0);
  const I* t = truth.data<I>();
  // A true class may lie outside [0, range_max) (MindSpore and TensorFlow accept it): it is
  // never sampled, and its expected count is still the distribution's formula at that class.
  for (int64_t i = 0; i < truth.numel(); ++i)
    if (t[i] < 0)
      MYCEL_THROW(ValueError, "[", ctx.op.name,
                  "] input 'true_classes' must hold non-negative classes, got ", int64_t(t[i]));
  std::unordered_set<int64_t> excluded;  // the true classes the draws can hit
  if (remove_hits)
    for (int64_t i = 0; i < truth.numel(); ++i)
      if (int64_t(t[i]) < dist.range) excluded.insert(int64_t(t[i]));
  const int64_t open_classes = dist.range - int64_t(excluded.size());
  if ((unique && num_sampled > open_classes) || (num_sampled > 0 && open_classes == 0))
    MYCEL_THROW(ValueError, "[", ctx.op.name, "] cannot draw ", num_sampled,
                unique ? " distinct" : "", " candidates from the ", open_classes,
                " classes of [0, ", dist.range, ")", remove_hits ? " outside true_classes" : "");
  // One sequential stream: the draws of a unique sample depend on each other. A candidate
  // already taken (unique) or among the true classes (remove_accidental_hits) is drawn again;
  // every draw counts as a try (TensorFlow's num_tries).
  Draws d(draw_stream(ctx, 1), 0);
  I* out = ctx.out(0).data<I>();
  std::unordered_set<int64_t> taken;
  int64_t tries = 0;
  // A bound instead of a hang: distinct log-uniform samples of nearly every class of a wide
  // range would need astronomically many draws.
  const int64_t max_tries = std::max<int64_t>(10'000'000, 1000 * num_sampled);
  for (int64_t k = 0; k < num_sampled;) {
    if (tries == max_tries)
      MYCEL_THROW(ValueError, "[", ctx.op.name, "] gave up after ", max_tries, " draws with ", k,
                  " of ", num_sampled, " candidates found; sample fewer or set unique=False");
    const int64_t c = dist.draw(d);
    ++tries;
    if (excluded.count(c) || (unique && !taken.insert(c).second)) continue;
    out[k++] = static_cast<I>(c);
  }
  // Expected count of class c in the sample: p num_sampled with repeats; without them, the
  // chance that c turned up in `tries` draws, 1 - (1 - p)^tries.
  auto expected = [&](int64_t c) {
    const double p = dist.prob(c);
    return unique ? -std::expm1(double(tries) * std::log1p(-p)) : p * double(num_sampled);
  };
  float* te = ctx.out(1).data<float>();
  for (int64_t i = 0; i < truth.numel(); ++i) te[i] = float(expected(int64_t(t[i])));
  float* se = ctx.out(2).data<float>();
  for (int64_t k = 0; k < num_sampled; ++k) se[k] = float(expected(int64_t(out[k])));
}

}  // namespace

void candidate_sampler_kernel(const KernelContext& ctx) {
  const Candidates dist{ctx.attrs.get_str("distribution") == "log_uniform",
                        ctx.attrs.get_int("range_max")};
  if (ctx.in(0).dtype() == DType::int32)
    sample_candidates<int32_t>(ctx, dist);
  else
    sample_candidates<int64_t>(ctx, dist);
}

}  // namespace mycel::cpu
