// Winograd's GEMM step (conv_winograd.cc) in AVX-512 for four 8-channel output blocks at once.
// The AVX2 kernel holds 6 tiles x 2 blocks in 12 ymm accumulators; this one holds 6 tiles x 2
// pairs of blocks in 12 zmm, the same FMAs per loaded byte at twice the width. It pays where
// the CPU has two 512-bit FMA units (an Ice Lake Xeon's FMA loop: 172 GFLOP/s a core in AVX-512
// against 103 in AVX2), not on Zen 4, which splits each 512-bit FMA in two 256-bit halves.
// Each output sums its channels in the AVX2 kernel's order, so the results are bit-identical.
#pragma once
#include <cstdint>

namespace mycel::cpu {

/// Whether winograd_gemm_quad runs here: AVX-512 CPUs other than Zen 4, unless
/// MYCEL_WINOGRAD_AVX512=0 (the AVX2 kernel, for A/B). Read once.
bool winograd_gemm512_on();

/// m[t][o] = sum_c v[t][c] u[c][o] for nt (1 to 6) tiles and 32 output channels, two pairs of
/// 8-channel blocks: each pair's u rows hold 16 floats, the second pair's u starting at
/// u + c8 * 16 (U's layout, conv_winograd.cc); v rows at stride c8, m rows at stride oc8.
void winograd_gemm_quad(int nt, const float* v, const float* u, float* m, int64_t c8, int64_t oc8);

}  // namespace mycel::cpu
