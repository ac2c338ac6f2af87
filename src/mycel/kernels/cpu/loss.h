// CPU kernels of the loss ops. 16-bit floats compute in float32; reductions sum in double over
// fixed-size chunks, so results do not depend on the thread count.
#pragma once
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// (loss (N,), backprop (N, C)) from logits and dense labels, via log-sum-exp.
void softmax_cross_entropy_kernel(const KernelContext& ctx);
/// Reduced cross entropy of logits (N, C) and class indices (N,); IndexError on a bad label.
void sparse_softmax_cross_entropy_kernel(const KernelContext& ctx);
/// (loss, total_weight) of log-probabilities (N, C), targets (N,) and optional weight (C,).
void nll_loss_kernel(const KernelContext& ctx);
/// Binary cross entropy of probabilities and labels, optional weight; logs clamped at -100.
void binary_cross_entropy_kernel(const KernelContext& ctx);
/// Numerically stable binary cross entropy of logits, optional weight and pos_weight.
void bce_with_logits_kernel(const KernelContext& ctx);
/// (x - y)**2 with broadcasting, reduced.
void mse_loss_kernel(const KernelContext& ctx);

}  // namespace mycel::cpu
