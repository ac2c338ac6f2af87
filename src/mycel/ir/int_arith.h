// Python's integer arithmetic on int64, shared by compile-time folding (analysis) and the VM:
// exact (pow by squaring, not through doubles) and checked, since compiled code cannot grow an
// int past 64 bits as Python would.
#pragma once
#include <cstdint>

#include "mycel/ir/prim.h"

namespace mycel::ir {

/// a <p> b for scalar_add/sub/mul/floordiv/mod/pow (b >= 0 for pow) and scalar_neg (b unused).
/// ValueError naming the prim on division by zero or a result outside int64.
int64_t int_arith(Prim p, int64_t a, int64_t b);

}  // namespace mycel::ir
