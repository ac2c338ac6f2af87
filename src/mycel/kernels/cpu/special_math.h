// Scalar special functions in float64 (Bessel, digamma/polygamma, regularized incomplete gamma),
// with the edge values scipy.special gives; kernels of lower precision compute in float64 and
// round once. The Bessel functions of moderate arguments come from the C++17 special math of
// the standard library; large arguments of the scaled forms use their asymptotic series (the
// unscaled values overflow there).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

namespace mycel::cpu::special {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kPi = 3.14159265358979323846;
inline constexpr double kEulerGamma = 0.57721566490153286061;
/// Below this the leading terms of the small-argument expansions of Y and K are exact to double
/// precision (the next terms are O(x^2) relative); the library calls reject subnormal arguments.
inline constexpr double kTinyArg = 1e-8;

/// Hankel's asymptotic series of e^-x I_nu(x) (sign = -1) or e^x K_nu(x) sqrt(2x/pi) (sign = 1)
/// without the leading factor: sum_k sign^k a_k(nu) / x^k; accurate to double for x >= 30, where
/// the terms keep shrinking past the 40th.
inline double hankel_sum(int nu, double x, double sign) {
  const double mu = 4.0 * nu * nu;
  double term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    const double odd = 2.0 * k - 1;
    term *= sign * (mu - odd * odd) / (8.0 * k * x);
    sum += term;
    if (std::fabs(term) < 1e-17 * std::fabs(sum)) break;
  }
  return sum;
}

/// e^-|x| I_nu(|x|), nu = 0 or 1 (the sign of odd nu applied by the caller).
inline double scaled_i(int nu, double ax) {
  if (ax == kInf) return 0;
  if (ax >= 30) return hankel_sum(nu, ax, -1) / std::sqrt(2 * kPi * ax);
  return std::cyl_bessel_i(double(nu), ax) * std::exp(-ax);
}

/// K_nu(x) for 0 < x < 30: K0 ~ -log(x/2) - gamma and K1 ~ 1/x below kTinyArg.
inline double unscaled_small_k(int nu, double x) {
  if (x < kTinyArg) return nu == 0 ? -std::log(x / 2) - kEulerGamma : 1 / x;
  return std::cyl_bessel_k(double(nu), x);
}

/// e^x K_nu(x), nu = 0 or 1, x > 0.
inline double scaled_k(int nu, double x) {
  if (x == kInf) return 0;
  if (x >= 30) return hankel_sum(nu, x, 1) * std::sqrt(kPi / (2 * x));
  return unscaled_small_k(nu, x) * std::exp(x);
}

/// I_nu(|x|): large arguments as the scaled value times e^|x| in two halves, so values up to
/// the largest double (|x| ~ 713.9) stay finite.
inline double unscaled_i(int nu, double ax) {
  if (ax < 30) return std::cyl_bessel_i(double(nu), ax);
  if (ax == kInf) return kInf;
  const double h = std::exp(ax / 2);
  return scaled_i(nu, ax) * h * h;
}

inline double bessel_i0(double x) {
  if (std::isnan(x)) return x;
  return unscaled_i(0, std::fabs(x));
}
inline double bessel_i0e(double x) { return std::isnan(x) ? x : scaled_i(0, std::fabs(x)); }
inline double bessel_i1(double x) {
  if (std::isnan(x)) return x;
  const double v = unscaled_i(1, std::fabs(x));
  return x < 0 ? -v : v;
}
inline double bessel_i1e(double x) {
  if (std::isnan(x)) return x;
  const double v = scaled_i(1, std::fabs(x));
  return x < 0 ? -v : v;
}
inline double bessel_j0(double x) {
  if (std::isnan(x)) return x;
  const double ax = std::fabs(x);
  return ax == kInf ? 0.0 : std::cyl_bessel_j(0.0, ax);
}
inline double bessel_j1(double x) {
  if (std::isnan(x)) return x;
  const double ax = std::fabs(x), v = ax == kInf ? 0.0 : std::cyl_bessel_j(1.0, ax);
  return x < 0 ? -v : v;
}
/// Y_nu: NaN for x < 0, -inf at 0.
inline double bessel_y(int nu, double x) {
  if (std::isnan(x) || x < 0) return kNaN;
  if (x == 0) return -kInf;
  if (x < kTinyArg) return nu == 0 ? 2 / kPi * (std::log(x / 2) + kEulerGamma) : -2 / (kPi * x);
  return x == kInf ? 0.0 : std::cyl_neumann(double(nu), x);
}
/// K_nu and e^x K_nu: NaN for x < 0, inf at 0.
inline double bessel_k(int nu, double x) {
  if (std::isnan(x) || x < 0) return kNaN;
  if (x == 0) return kInf;
  if (x >= 30) {
    const double h = std::exp(-x / 2);
    return scaled_k(nu, x) * h * h;
  }
  return unscaled_small_k(nu, x);
}
inline double bessel_ke(int nu, double x) {
  if (std::isnan(x) || x < 0) return kNaN;
  if (x == 0) return kInf;
  return scaled_k(nu, x);
}

/// pi / tan(pi x), with the argument reduced to [0, 1) first so large |x| keeps its accuracy.
inline double pi_cot_pi(double x) {
  const double r = x - std::floor(x);
  return kPi / std::tan(kPi * r);
}

/// digamma (psi): recurrence up to x >= 10, then the asymptotic series; reflection below 0.
/// The poles -1, -2, ... give NaN and +-0 gives -+inf, as scipy's digamma.
inline double digamma(double x) {
  if (std::isnan(x) || x == -kInf) return kNaN;
  if (x == kInf) return kInf;
  if (x == 0) return std::signbit(x) ? kInf : -kInf;  // scipy: psi(+-0) = -+inf
  if (x < 0) {
    if (x == std::floor(x)) return kNaN;
    return digamma(1 - x) - pi_cot_pi(x);
  }
  double acc = 0;
  while (x < 10) {
    acc -= 1 / x;
    x += 1;
  }
  const double z = 1 / (x * x);
  // sum B_2k / (2k x^2k), k = 1..7
  const double series =
      z * (1.0 / 12 -
           z * (1.0 / 120 -
                z * (1.0 / 252 -
                     z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z * (1.0 / 12)))))));
  return acc + std::log(x) - 0.5 / x - series;
}

/// Hurwitz zeta(s, a) for integer s >= 2 (what polygamma needs) and any a off the poles
/// 0, -1, -2, ...: the first N terms summed, the tail by Euler-Maclaurin with w = a + N >= s + 15.
inline double hurwitz_zeta(int s, double a) {
  if (a <= 0 && a == std::floor(a)) return kInf;
  // B_2j / (2j)!, j = 1..12
  static constexpr double kB[] = {
      8.333333333333333e-02,  -1.388888888888889e-03,  3.306878306878307e-05,
      -8.267195767195768e-07, 2.08767569878681e-08,    -5.284190138687493e-10,
      1.3382536530684679e-11, -3.3896802963225827e-13, 8.586062056277845e-15,
      -2.174868698558062e-16, 5.5090028283602295e-18,  -1.3954464685812522e-19};
  double sum = 0, w = a;
  if (s > 60 && a > 0 && a < s + 15.0) {
    // Large s: the terms (a + k)^-s fall off at least geometrically once a + k > s / 40, so a
    // direct sum converges in a few dozen terms (the Euler-Maclaurin shift would take ~s).
    for (int k = 0; k < 100000; ++k, w += 1) {
      const double t = std::pow(w, -s);
      sum += t;
      if (t <= 1e-17 * sum) return sum;
    }
  }
  while (w < s + 15.0) {
    sum += std::pow(w, -s);
    w += 1;
  }
  sum += std::pow(w, 1.0 - s) / (s - 1) + 0.5 * std::pow(w, -s);
  // term_j = B_2j / (2j)! * s (s+1) ... (s+2j-2) * w^(-s-2j+1)
  double rising = s, wpow = std::pow(w, -s - 1.0);
  for (int j = 0; j < 12; ++j) {
    const double t = kB[j] * rising * wpow;
    sum += t;
    if (std::fabs(t) < 1e-17 * std::fabs(sum)) break;
    rising *= double(s + 2 * j + 1) * double(s + 2 * j + 2);
    wpow /= w * w;
  }
  return sum;
}

/// polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1; digamma for n == 0.
inline double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  if (std::isnan(x) || n < 0) return kNaN;
  if (x == kInf) return 0.0;
  if (x == -kInf) return kNaN;
  if (x <= 0 && x == std::floor(x)) return n % 2 ? kInf : -kInf;  // (-1)^(n+1) n! zeta(pole)
  // Not computed (NaN): x < -1e6, whose shift to positive arguments would take over a million
  // terms, and n > 100000.
  if (x < -1e6 || n > 100000) return kNaN;
  const double sign = n % 2 ? 1.0 : -1.0;
  const double z = hurwitz_zeta(static_cast<int>(n + 1), x);
  if (n > 170 && z > 0) return sign * std::exp(std::lgamma(double(n) + 1) + std::log(z));
  double fact = 1;
  for (int64_t k = 2; k <= n; ++k) fact *= double(k);
  return sign * fact * z;
}

/// A value with its derivative in one variable (forward mode), so that the incomplete gamma's
/// series and continued fraction give d/da next to the value with the same loops.
struct Dual {
  double v, d;
};
inline Dual operator+(Dual a, Dual b) { return {a.v + b.v, a.d + b.d}; }
inline Dual operator-(Dual a, Dual b) { return {a.v - b.v, a.d - b.d}; }
inline Dual operator*(Dual a, Dual b) { return {a.v * b.v, a.d * b.v + a.v * b.d}; }
inline Dual operator/(Dual a, Dual b) { return {a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)}; }
inline Dual dexp(Dual a) {
  const double e = std::exp(a.v);
  return {e, a.d * e};
}

/// P(a, x) (lower = true) or Q(a, x), and their derivatives in a, for a > 0, 0 < x < inf:
/// the power series of P where x < a + 1, else the continued fraction of Q (modified Lentz).
inline Dual igamma_dual(double a_value, double x, bool lower) {
  const Dual a{a_value, 1};
  const Dual cx{x, 0};
  // x^a e^-x / Gamma(a), the common factor; d/da lgamma(a) = digamma(a).
  const Dual log_pref =
      Dual{a_value * std::log(x) - x - std::lgamma(a_value), std::log(x) - digamma(a_value)};
  const Dual pref = dexp(log_pref);
  Dual result;
  bool is_lower;
  if (x < a_value + 1) {  // P = pref * sum_n x^n / (a (a+1) ... (a+n))
    Dual term = Dual{1, 0} / a, sum = term, ap = a;
    for (int n = 0; n < 100000; ++n) {
      ap = ap + Dual{1, 0};
      term = term * cx / ap;
      sum = sum + term;
      if (std::fabs(term.v) < 1e-17 * std::fabs(sum.v) &&
          std::fabs(term.d) <= 1e-17 * std::fabs(sum.d) + 1e-300)
        break;
    }
    result = pref * sum;
    is_lower = true;
  } else {  // Q = pref / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...)), Lentz's evaluation
    const double tiny = 1e-300;
    Dual b = cx + Dual{1, 0} - a, c = Dual{1 / tiny, 0}, d = Dual{1, 0} / b, h = d;
    for (int i = 1; i < 100000; ++i) {
      const Dual an = Dual{-double(i), 0} * (Dual{double(i), 0} - a);
      b = b + Dual{2, 0};
      d = an * d + b;
      if (std::fabs(d.v) < tiny) d.v = tiny;
      c = b + an / c;
      if (std::fabs(c.v) < tiny) c.v = tiny;
      d = Dual{1, 0} / d;
      const Dual del = d * c;
      h = h * del;
      if (std::fabs(del.v - 1) < 1e-16 && std::fabs(del.d) < 1e-16 * (1 + std::fabs(h.d / h.v)))
        break;
    }
    result = pref * h;
    is_lower = false;
  }
  if (is_lower == lower) return result;
  return {1 - result.v, -result.d};
}

/// Regularized lower (lower = true) or upper incomplete gamma, scipy's gammainc/gammaincc:
/// NaN for a < 0 or x < 0; P(0, x > 0) = 1.
inline double igamma(double a, double x, bool lower) {
  if (std::isnan(a) || std::isnan(x) || a < 0 || x < 0) return kNaN;
  if (a == 0) {
    if (x == 0) return kNaN;
    return lower ? 1.0 : 0.0;
  }
  if (x == 0) return lower ? 0.0 : 1.0;
  if (x == kInf) return lower ? 1.0 : 0.0;
  if (a == kInf) return lower ? 0.0 : 1.0;
  return igamma_dual(a, x, lower).v;
}

/// dP(a, x)/da (MindSpore's IgammaGradA); dQ/da is its negative.
inline double igamma_grad_a(double a, double x) {
  if (std::isnan(a) || std::isnan(x) || a <= 0 || x < 0) return kNaN;
  if (x == 0 || x == kInf || a == kInf) return 0.0;
  return igamma_dual(a, x, true).d;
}

}  // namespace mycel::cpu::special
