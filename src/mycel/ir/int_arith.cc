#include "mycel/ir/int_arith.h"

#include "mycel/core/error.h"

namespace mycel::ir {

namespace {
[[noreturn]] void overflow(Prim p, int64_t a, int64_t b) {
  MYCEL_THROW(ValueError, "[", prim_name(p), "] integer overflow: the result of ", a, " and ", b,
              " does not fit in 64 bits (compiled code keeps Python ints in int64)");
}
}  // namespace

int64_t int_arith(Prim p, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (p) {
    case Prim::kScalarAdd:
      if (__builtin_add_overflow(a, b, &r)) overflow(p, a, b);
      return r;
    case Prim::kScalarSub:
      if (__builtin_sub_overflow(a, b, &r)) overflow(p, a, b);
      return r;
    case Prim::kScalarMul:
      if (__builtin_mul_overflow(a, b, &r)) overflow(p, a, b);
      return r;
    case Prim::kScalarNeg:
      if (__builtin_sub_overflow(int64_t{0}, a, &r)) overflow(p, a, b);
      return r;
    case Prim::kScalarFloorDiv:
    case Prim::kScalarMod: {
      if (b == 0)
        MYCEL_THROW(ValueError, "[", prim_name(p), "] integer division or modulo by zero");
      if (b == -1) {  // INT64_MIN // -1 overflows; x % -1 is 0
        if (p == Prim::kScalarMod) return 0;
        if (__builtin_sub_overflow(int64_t{0}, a, &r)) overflow(p, a, b);
        return r;
      }
      int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {
        --q;
        m += b;
      }
      return p == Prim::kScalarFloorDiv ? q : m;
    }
    case Prim::kScalarPow: {
      if (b < 0)
        MYCEL_THROW(ValueError, "[", prim_name(p), "] a negative int exponent makes a float");
      int64_t result = 1, base = a;
      for (int64_t e = b; e > 0; e >>= 1) {  // by squaring: at most 63 rounds, however large b is
        if ((e & 1) && __builtin_mul_overflow(result, base, &result)) overflow(p, a, b);
        if (e > 1 && __builtin_mul_overflow(base, base, &base)) {
          // base no longer fits, so any further factor overflows unless the result is 0 or +-1
          if (a == 0 || a == 1) return a == 0 ? 0 : 1;
          if (a == -1) return (b & 1) ? -1 : 1;
          overflow(p, a, b);
        }
      }
      return result;
    }
    default:
      MYCEL_THROW(RuntimeError, "[", prim_name(p), "] is not an integer arithmetic prim");
  }
}

}  // namespace mycel::ir
