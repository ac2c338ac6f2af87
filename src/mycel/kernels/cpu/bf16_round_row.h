// float -> bfloat16 for a row the caller computed in float (a norm's output row): the bits of
// bf16_round_bits (nearest even, NaN quieted) in AVX2 lanes. GCC's vectorization of the scalar
// rounding loop packs the 32-bit results into 16 bits poorly: a layer norm row of 128 took
// ~60 ns to store that way against ~30 with this.
#pragma once
#include <cstdint>

namespace mycel::cpu {

/// dst[i] = bf16 bits of src[i], i < n.
void bf16_round_row(const float* src, uint16_t* dst, int64_t n);

/// dst[i] = the bf16 rounding of the sum of the T float32 partials q[u * numel + i] (u < T, added
/// in that order), i0 <= i < i1: a split product's partials, added and rounded once. In blocks of
/// a stack buffer, so that the adds and the rounding run in vector lanes (the one-loop form, an
/// inner loop over T and the scalar rounding, did not vectorize: 45 us of each FFN weight
/// gradient's 790 in the transformer's O2 step against 8.5 this way, and 11.6 -> 2.5 us for
/// each 128x128 projection's; minima, two threads).
void bf16_sum_round_partials(const float* q, int T, int64_t numel, int64_t i0, int64_t i1,
                             uint16_t* dst);

}  // namespace mycel::cpu
