// The scalar special functions (kernels/cpu/special_math.h) at closed forms: digamma and
// polygamma at 1 and 1/2 (Euler's gamma, zeta values), P(1, x) = 1 - e^-x, P(1/2, x) =
// erf(sqrt x), dP/da against a central difference, and the scaled Bessel forms across the switch
// from the library call to the asymptotic series.
#include <gtest/gtest.h>

#include <cmath>

#include "mycel/kernels/cpu/special_math.h"

namespace mycel::cpu::special {
namespace {

constexpr double kEuler = 0.57721566490153286061;

TEST(SpecialMath, DigammaAndPolygammaClosedForms) {
  EXPECT_NEAR(digamma(1.0), -kEuler, 1e-15);
  EXPECT_NEAR(digamma(0.5), -kEuler - 2 * std::log(2.0), 1e-15);
  EXPECT_NEAR(digamma(-0.5), digamma(0.5) + 2.0, 1e-14);  // psi(x + 1) = psi(x) + 1 / x
  EXPECT_TRUE(std::isnan(digamma(-2.0)));
  EXPECT_NEAR(polygamma(1, 1.0), kPi * kPi / 6, 1e-14);
  EXPECT_NEAR(polygamma(1, 0.5), kPi * kPi / 2, 1e-13);
  EXPECT_NEAR(polygamma(2, 1.0), -2 * 1.2020569031595942854, 1e-13);  // -2 zeta(3)
  EXPECT_NEAR(polygamma(3, 1.0), 6 * std::pow(kPi, 4) / 90, 1e-12);   // 3! zeta(4)
  // recurrence psi1(x + 1) = psi1(x) - 1 / x^2, negative x included
  for (double x : {-2.5, -0.3, 0.7, 4.2})
    EXPECT_NEAR(polygamma(1, x + 1), polygamma(1, x) - 1 / (x * x),
                1e-10 * std::fabs(polygamma(1, x)));
}

TEST(SpecialMath, IncompleteGammaClosedFormsAndDerivative) {
  for (double x : {0.01, 0.5, 1.0, 2.0, 7.5, 40.0}) {
    EXPECT_NEAR(igamma(1.0, x, true), -std::expm1(-x), 1e-15);
    EXPECT_NEAR(igamma(1.0, x, false), std::exp(-x), 1e-15 + 1e-14 * std::exp(-x));
    EXPECT_NEAR(igamma(0.5, x, true), std::erf(std::sqrt(x)), 1e-14);
    EXPECT_NEAR(igamma(0.5, x, false), std::erfc(std::sqrt(x)),
                1e-14 + 1e-12 * std::erfc(std::sqrt(x)));
  }
  for (double a : {0.3, 1.7, 6.0})
    for (double x : {0.2, 1.9, 8.0}) {
      const double h = 1e-6;
      const double fd = (igamma(a + h, x, true) - igamma(a - h, x, true)) / (2 * h);
      EXPECT_NEAR(igamma_grad_a(a, x), fd, 1e-7) << "a=" << a << " x=" << x;
    }
  EXPECT_TRUE(std::isnan(igamma(-1.0, 1.0, true)));
  EXPECT_EQ(igamma(2.0, 0.0, true), 0.0);
}

TEST(SpecialMath, PolygammaOfLargeOrderIsBoundedWork) {
  // psi^(n)(x) for n = 80 at 1/2: (-1)^(n+1) n! zeta(n+1, 1/2) = -n! (2^(n+1) - 1) zeta(n+1)
  EXPECT_NEAR(polygamma(80, 0.5) / -1.7304432903805694e+143, 1.0, 1e-12);
  EXPECT_NEAR(polygamma(150, 1.5) / -1.4693095234403325e+236, 1.0, 1e-12);
  EXPECT_TRUE(std::isnan(polygamma(1000000000, 2.0)));
  EXPECT_TRUE(std::isnan(polygamma(2, -1e9 + 0.5)));
}

TEST(SpecialMath, ScaledBesselFormsAreContinuousAcrossTheSeriesSwitch) {
  for (double x : {29.999, 30.0, 30.001}) {
    EXPECT_NEAR(bessel_i0e(x), std::cyl_bessel_i(0.0, x) * std::exp(-x), 1e-15);
    EXPECT_NEAR(bessel_i1e(-x), -std::cyl_bessel_i(1.0, x) * std::exp(-x), 1e-15);
    EXPECT_NEAR(bessel_ke(0, x), std::cyl_bessel_k(0.0, x) * std::exp(x), 1e-14);
    EXPECT_NEAR(bessel_ke(1, x), std::cyl_bessel_k(1.0, x) * std::exp(x), 1e-14);
  }
  // near the largest double: I0(x) ~ e^x / sqrt(2 pi x) (1 + 1 / (8x))
  EXPECT_NEAR(std::log(bessel_i0(713.0)),
              713.0 - 0.5 * std::log(2 * kPi * 713.0) + std::log1p(1.0 / (8 * 713.0)), 1e-6);
  EXPECT_TRUE(std::isinf(bessel_i0(714.0)));
  EXPECT_NEAR(bessel_j0(2.404825557695773), 0.0, 1e-15);  // the first zero of J0
  EXPECT_EQ(bessel_y(0, 0.0), -kInf);
  // subnormal arguments (the library calls reject them): the small-argument forms
  EXPECT_NEAR(bessel_y(0, 1e-310), 2 / kPi * (std::log(0.5e-310) + kEulerGamma), 1e-12);
  EXPECT_NEAR(bessel_k(0, 1e-310), -std::log(0.5e-310) - kEulerGamma, 1e-12);
  EXPECT_NEAR(bessel_y(1, 1e-9) * 1e-9, -2 / kPi, 1e-15);
  EXPECT_NEAR(bessel_ke(1, 1e-9) * 1e-9, 1.0, 1e-8);
  EXPECT_NEAR(bessel_y(0, 1.0001e-8), std::cyl_neumann(0.0, 1.0001e-8), 1e-12);
  EXPECT_TRUE(std::isnan(bessel_k(1, -1.0)));
}

}  // namespace
}  // namespace mycel::cpu::special
