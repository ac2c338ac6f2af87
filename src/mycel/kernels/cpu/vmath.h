// Branch-free float32 exp, log, tanh, sigmoid and erf, written once for two users: the op kernels
// (unary.h's fast_exp / fast_tanh, the fused-elementwise interpreter) compile it, and the TE code
// generator pastes its text (kVmathSource) into every generated kernel. Loops over these functions
// auto-vectorize (no branches, no library calls), and both users get the same bits: every
// multiply-add is an explicit std::fma, so the compiler's contraction choices (-ffp-contract,
// which differs between the library and generated code) cannot change a result. With FMA hardware
// (x86-64-v3, the default build and -march=native here) std::fma is one instruction.
//
// Maximum errors against the exactly rounded result, measured over every 16th float32 and
// densely over each range by tests/python/test_te_vmath.py (numpy float64 as the reference):
//   vm_exp      1.02 ulp (subnormal results included); inf above 88.72, 0 below -103.9
//   vm_log      0.83 ulp; log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, subnormals included
//   vm_tanh     4.8 ulp (a rational function; |x| < 4e-4 returns x, |x| >= 9.1 returns +-1)
//   vm_sigmoid  2.4 ulp (e**-|x| / (1 + e**-|x|) for x < 0, 1 / (1 + e**-|x|) else)
//   vm_erf      1.01 ulp (Python's math.erf as the reference); +-1 from |x| = 3.93 on
// NaN inputs give NaN from each.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

// The definitions are the macro's argument, so the same tokens become both the code and its text
// (no preprocessor directives or commas outside parentheses may appear in them). Every operation
// is evaluated unconditionally and results are picked by vm_select, so loops stay free of
// branches and vectorize.
#define MYCEL_VMATH_DEFINE(...) \
  __VA_ARGS__                   \
  inline constexpr const char* kVmathSource = #__VA_ARGS__;

namespace mycel::cpu::vm {

MYCEL_VMATH_DEFINE(
    inline uint32_t vm_bits(float f) {
      uint32_t u;
      std::memcpy(&u, &f, sizeof u);
      return u;
    }

    inline float vm_float(uint32_t u) {
      float f;
      std::memcpy(&f, &u, sizeof f);
      return f;
    }

    // c ? a : b as a bit blend of two computed values: GCC turns a ?: into a branch, moves
    // the computation of an arm into it, and cannot if-convert it back when that arm may trap
    // (a multiply or division), nor some nested clamps; the loop then does not vectorize.
    inline float vm_select(bool c, float a, float b) {
      const uint32_t m = 0u - static_cast<uint32_t>(c);
      return vm_float((vm_bits(a) & m) | (vm_bits(b) & ~m));
    }

    // e**x: x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, Cody-Waite), a degree-7
    // polynomial for e**r (Cephes' coefficients), times 2**n built in the exponent field as two
    // factors so that n in [-150, 129] never leaves the normal range before the last multiply.
    // e**x = hi * lo: sigmoid adds 1 to the product with one rounding, whatever the compiler's
    // contraction setting.
    inline void vm_exp_parts(float x, float& hi, float& lo) {
      x = vm_select(x > 89.0f, 89.0f, x);  // NaN fails both tests and flows through
      x = vm_select(x < -104.0f, -104.0f, x);
      const float shifter = 12582912.0f;  // 1.5 * 2**23: adding it rounds to an integer
      const float t = std::fma(x, 1.44269504088896341f, shifter);
      const float n = t - shifter;
      const int32_t ni = static_cast<int32_t>(vm_bits(t) & 0x7fffffu) - 0x400000;
      float r = std::fma(n, -0.693359375f, x);
      r = std::fma(n, 2.12194440e-4f, r);
      float p = 1.9875691500e-4f;
      p = std::fma(p, r, 1.3981999507e-3f);
      p = std::fma(p, r, 8.3334519073e-3f);
      p = std::fma(p, r, 4.1665795894e-2f);
      p = std::fma(p, r, 1.6666665459e-1f);
      p = std::fma(p, r, 5.0000001201e-1f);
      p = std::fma(p * r, r, r) + 1.0f;
      const int32_t n1 = ni >> 1, n2 = ni - n1;
      const float s1 = vm_float(static_cast<uint32_t>(n1 + 127) << 23);
      const float s2 = vm_float(static_cast<uint32_t>(n2 + 127) << 23);
      hi = p * s1;
      lo = s2;
    }

    inline float vm_exp(float x) {
      float hi, lo;
      vm_exp_parts(x, hi, lo);
      return hi * lo;
    }

    // log x: x = m 2**e with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2**25 first),
    // f = m - 1, log(1 + f) = f - f**2 / 2 + f**3 P(f) (Cephes' coefficients), plus e ln2 in two
    // parts. Zero, negatives, inf and NaN are selected at the end.
    inline float vm_log(float x) {
      const bool sub = x < 1.17549435e-38f;
      const float xs = x * vm_select(sub, 33554432.0f, 1.0f);
      const uint32_t u = vm_bits(xs);
      float e = static_cast<float>(static_cast<int32_t>((u >> 23) & 0xffu) - 126) -
                vm_select(sub, 25.0f, 0.0f);
      float m = vm_float((u & 0x7fffffu) | 0x3f000000u);  // [0.5, 1)
      const bool low = m < 0.707106781186547524f;
      e = e - vm_select(low, 1.0f, 0.0f);
      const float f = m + vm_select(low, m, 0.0f) - 1.0f;
      const float z = f * f;
      float p = 7.0376836292e-2f;
      p = std::fma(p, f, -1.1514610310e-1f);
      p = std::fma(p, f, 1.1676998740e-1f);
      p = std::fma(p, f, -1.2420140846e-1f);
      p = std::fma(p, f, 1.4249322787e-1f);
      p = std::fma(p, f, -1.6668057665e-1f);
      p = std::fma(p, f, 2.0000714765e-1f);
      p = std::fma(p, f, -2.4999993993e-1f);
      p = std::fma(p, f, 3.3333331174e-1f);
      float y = std::fma(p * f, z, std::fma(e, -2.12194440e-4f, -0.5f * z));
      float r = std::fma(e, 0.693359375f, f + y);
      r = vm_select(x == 0.0f, -__builtin_huge_valf(), r);
      r = vm_select((x < 0.0f) | (x != x), __builtin_nanf(""), r);
      return vm_select(x == __builtin_huge_valf(), x, r);
    }

    // tanh as an odd rational function of x clamped to [-7.9, 7.9] (Eigen's coefficients); +-1
    // from 9.1 on, where tanh rounds to it.
    inline float vm_tanh(float x) {
      const float c = 7.90531110763549805f;
      float xc = vm_select(x > c, c, x);
      xc = vm_select(xc < -c, -c, xc);
      const float x2 = xc * xc;
      float p = -2.76076847742355e-16f;
      p = std::fma(p, x2, 2.00018790482477e-13f);
      p = std::fma(p, x2, -8.60467152213735e-11f);
      p = std::fma(p, x2, 5.12229709037114e-08f);
      p = std::fma(p, x2, 1.48572235717979e-05f);
      p = std::fma(p, x2, 6.37261928875436e-04f);
      p = std::fma(p, x2, 4.89352455891786e-03f);
      p = p * xc;
      float q = 1.19825839466702e-06f;
      q = std::fma(q, x2, 1.18534705686654e-04f);
      q = std::fma(q, x2, 2.26843463243900e-03f);
      q = std::fma(q, x2, 4.89352518554385e-03f);
      const float r = vm_select(std::fabs(x) < 0.0004f, x, p / q);
      return vm_select(std::fabs(x) >= 9.1f, vm_select(x > 0.0f, 1.0f, -1.0f), r);
    }

    // 1 / (1 + e**-x) through t = e**-|x| in (0, 1], which cannot overflow: t / (1 + t) for
    // x < 0 (subnormal results included), 1 / (1 + t) otherwise; 1 + t rounded once.
    inline float vm_sigmoid(float x) {
      float hi, lo;
      vm_exp_parts(-std::fabs(x), hi, lo);
      return vm_select(x < 0.0f, hi * lo, 1.0f) / std::fma(hi, lo, 1.0f);
    }

    // erf x: x (1 + P(x**2)) for |x| < 1; 1 - e**-(x**2) Q(|x| - 2.45) with the sign of x up to
    // 3.93, and +-1 from there on (where erf rounds to it). P and Q are minimax fits made for this
    // file against mpmath (relative errors 1.2e-9 for 1 + P against erf(x) / x, 2.3e-8 for Q
    // against erfc(x) e**(x**2)); both branches are computed and one selected.
    inline float vm_erf(float x) {
      const float t = x * x;
      float p = 7.8539616278e-05f;
      p = std::fma(p, t, -8.0102268480e-04f);
      p = std::fma(p, t, 5.1883319251e-03f);
      p = std::fma(p, t, -2.6853814537e-02f);
      p = std::fma(p, t, 1.1283585226e-01f);
      p = std::fma(p, t, -3.7612625834e-01f);
      p = std::fma(p, t, 1.2837916573e-01f);
      const float small = std::fma(x, p, x);  // x (1 + p): 1 exact, p's rounding small
      float a = std::fabs(x);
      a = vm_select(a > 3.93f, 3.93f, a);  // NaN fails the test and flows through
      const float u = a - 2.45f;
      float q = -4.3460157533e-07f;
      q = std::fma(q, u, 1.8788381690e-06f);
      q = std::fma(q, u, -4.5997846097e-06f);
      q = std::fma(q, u, 1.6379534708e-05f);
      q = std::fma(q, u, -6.5702568258e-05f);
      q = std::fma(q, u, 2.3459474731e-04f);
      q = std::fma(q, u, -8.0022017039e-04f);
      q = std::fma(q, u, 2.6577103933e-03f);
      q = std::fma(q, u, -8.5137775247e-03f);
      q = std::fma(q, u, 2.6176337653e-02f);
      q = std::fma(q, u, -7.6902425700e-02f);
      q = std::fma(q, u, 2.1458708757e-01f);
      float big = std::fma(-vm_exp(-(a * a)), q, 1.0f);
      big = vm_select(a >= 3.93f, 1.0f, big);
      big = vm_float(vm_bits(big) | (vm_bits(x) & 0x80000000u));
      return vm_select(std::fabs(x) < 1.0f, small, big);
    })

}  // namespace mycel::cpu::vm
