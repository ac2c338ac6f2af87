// float -> bfloat16 for a row the caller computed in float (a norm's output row): the bits of
// bf16_round_bits (nearest even, NaN quieted) in AVX2 lanes. GCC's vectorization of the scalar
// rounding loop packs the 32-bit results into 16 bits poorly: a layer norm row of 128 took
// ~60 ns to store that way against ~30 with this.
#pragma once
#include <cstdint>

namespace mycel::cpu {

/// dst[i] = bf16 bits of src[i], i < n.
void bf16_round_row(const float* src, uint16_t* dst, int64_t n);

}  // namespace mycel::cpu
