// A relu's bf16 backward dy * cast(compare(y, t)) over a range of elements (backend/
// fuse_mask_product.cc): in AVX-512 lanes where the CPU has them, else a scalar loop; the same
// bits either way (the product in float, dy * 1 or dy * 0, rounded to bf16 as the mul kernel
// rounds: NaNs quieted, the sign of a zero kept).
#pragma once
#include <cstdint>

namespace mycel::cpu {

/// The operands of one mask product: y (bf16 bits or float32), the threshold t, and the test:
/// y > t (less false) or y < t, or with t on the left (t > y, t < y).
struct MaskOperands {
  const void* y = nullptr;
  bool y_bf16 = true;
  float t = 0;
  bool less = false, t_left = false;
};

/// out[i] = bf16(dy[i] * (test(y[i]) ? 1 : 0)) for b <= i < e; out may be dy (in place).
void bf16_mask_product(const MaskOperands& k, const uint16_t* dy, uint16_t* out, int64_t b,
                       int64_t e);

}  // namespace mycel::cpu
