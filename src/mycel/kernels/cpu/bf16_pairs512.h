// bf16 rows packed in K-pairs for vdpbf16ps, in AVX-512 lanes: shared by our bf16 matmul kernels
// (matmul_bf16_atb.cc, matmul_heads_bf16.cc). Include only inside an AVX-512 target region, as
// bf16_lanes512.h asks.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace mycel::cpu::bf16_pairs512 {

/// The low n of 32 lanes (all for n >= 32).
inline __mmask32 mask32(int64_t n) {
  return n >= 32 ? ~__mmask32(0) : static_cast<__mmask32>((uint64_t(1) << n) - 1);
}

/// 32 bf16 of row k (v0) and of row k + 1 (v1) interleaved: lo holds pairs 0..15, hi 16..31.
struct Pairs {
  __m512i lo, hi;
};
inline Pairs interleave(__m512i v0, __m512i v1) {
  alignas(64) static const uint16_t lo_idx[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                  37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                  11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static const uint16_t hi_idx[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                                  53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                                  27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i il = _mm512_load_si512(lo_idx), ih = _mm512_load_si512(hi_idx);
  return {_mm512_permutex2var_epi16(v0, il, v1), _mm512_permutex2var_epi16(v0, ih, v1)};
}

}  // namespace mycel::cpu::bf16_pairs512
