// Fused attention (ops.flash_attention and its gradient): softmax(scale * q k^T) v per (batch,
// head) in blocks of query rows, keeping only the output and each row's logsumexp; the backward
// recomputes the probabilities from the logsumexp instead of storing L_q x L_k scores.
#pragma once
#include <cstdint>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// Where (batch, head, row) of a q/k/v/out tensor lives: 'BSH' (B, S, N * D) or 'BNSD'.
struct FlashGeometry {
  int64_t batch = 0, heads = 0, lq = 0, lk = 0, dim = 0;
  bool bsh = true;     // (B, S, N * D); else (B, N, S, D)
  float scale = 1.0f;  // on q k^T
  // attn_mask (bool / uint8, nonzero = masked out) strides in elements; mask_rows == 0: no mask.
  int64_t mask_rows = 0, mask_b = 0, mask_h = 0;
};

/// out = softmax(scale * q k^T, masked) v and lse = the rows' logsumexp (float32, (B, N, L_q));
/// a fully masked row gives 0 (its lse +inf). float32, bfloat16, float16 (float32 arithmetic).
void flash_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                             const FlashGeometry& g, Tensor& out, Tensor& lse);

/// dq, dk, dv of flash_attention_forward from out, its sensitivity dout, lse and lse's
/// sensitivity dlse (float32, (B, N, L_q)).
void flash_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                              const Tensor& dout, const Tensor& lse, const Tensor& dlse,
                              const Tensor* mask, const FlashGeometry& g, Tensor& dq, Tensor& dk,
                              Tensor& dv);

}  // namespace mycel::cpu
