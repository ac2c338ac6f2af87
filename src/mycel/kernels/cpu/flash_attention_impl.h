// What the float32 and the AVX512-BF16 flash attention kernels share: where a (batch, head)'s
// rows live and its attn_mask rows. Internal to kernels/cpu/flash_attention*.cc.
#pragma once
#include <cstdint>

#include "mycel/kernels/cpu/flash_attention.h"

namespace mycel::cpu::flash {

inline constexpr int64_t kRows = 32;  // query rows per block: their scores stay in L1/L2

/// Element offset of (b, h, row 0, 0) and the row stride of a (B, S, N * D) or (B, N, S, D)
/// tensor.
struct HeadView {
  int64_t base, row;
};
inline HeadView head_view(const FlashGeometry& g, int64_t b, int64_t h, int64_t len) {
  if (g.bsh) return {b * len * g.heads * g.dim + h * g.dim, g.heads * g.dim};
  return {(b * g.heads + h) * len * g.dim, g.dim};
}

/// The (b, h) attn_mask rows (row stride g.mask_rows), nullptr without a mask.
inline const uint8_t* head_mask(const Tensor* mask, const FlashGeometry& g, int64_t b, int64_t h) {
  if (!mask || g.mask_rows == 0) return nullptr;
  return static_cast<const uint8_t*>(mask->data()) + b * g.mask_b + h * g.mask_h;
}

/// bfloat16 inputs on a CPU with AVX512-BF16 (and an even head size): products by vdpbf16ps,
/// twice float32 FMA's rate. False: the caller takes the float32 kernel.
bool bf16_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                  const FlashGeometry& g, Tensor& out, Tensor& lse);
bool bf16_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                   const Tensor& dout, const Tensor& lse, const Tensor& dlse, const Tensor* mask,
                   const FlashGeometry& g, Tensor& dq, Tensor& dk, Tensor& dv);

}  // namespace mycel::cpu::flash
