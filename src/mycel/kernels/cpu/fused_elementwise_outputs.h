// A fused elementwise chain with several outputs (the graph backend's merge of an optimizer's
// state and weight updates, backend/fuse_elementwise.cc). Apart from fused_elementwise.h, which
// the op registry includes, so that this entry point rebuilds only its two users.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "mycel/kernels/cpu/fused_elementwise.h"

namespace mycel::cpu {

/// float -> bfloat16 bits, the bits of detail::float_to_bf16_bits (nearest even, NaN quieted)
/// without its branch, so that loops calling it vectorize (8x here).
inline uint16_t bf16_round_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, q = (u >> 16) | 0x40u;
  const uint32_t nan = 0u - static_cast<uint32_t>((u & 0x7fffffffu) > 0x7f800000u);
  return static_cast<uint16_t>((q & nan) | (r & ~nan));
}
/// bfloat16 bits -> float (exact).
inline float bf16_widen(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// outs[j] = the result of step out_steps[j] (the last step's among them), all of one element
/// count. Each block's results are stored after every step of the block has read its operands,
/// so any output may share its buffer with an input of its size (an optimizer's chain writing
/// its state and its weight in one pass).
void run_fused_elementwise(const EwProgram& p, const std::vector<Tensor>& inputs,
                           const std::vector<int>& out_steps, const std::vector<Tensor>& outs);

/// The same over raw buffers: input k at base[k], n elements when full[k], else one (broadcast);
/// outs[j] = step out_steps[j]'s results. Runs on the calling thread inside a parallel region
/// (matmul_chain.cc: one row tile of a weight gradient and its optimizer update).
void run_fused_elementwise_ptrs(const EwProgram& p, const float* const* base, const char* full,
                                int64_t n, int nout, const int* out_steps, float* const* outs);

/// The same with bfloat16 ends (graph mode's bf16 master copies, backend/keep_master_copies.cc):
/// input k holds bfloat16 where bf16_in[k] (widened block by block, which is exact), else
/// float32; out16, when not null, also receives the last step's results rounded to bfloat16 (the
/// bits a cast of that output gives), stored while the block is in cache.
void run_fused_elementwise_bf16_ends(const EwProgram& p, const void* const* base, const char* full,
                                     const char* bf16_in, int64_t n, int nout, const int* out_steps,
                                     float* const* outs, uint16_t* out16);

}  // namespace mycel::cpu
