// CPU kernels of the CTC loss (Graves et al. 2006): the forward (alpha) recursion in log space and
// the gradient from the alpha-beta products, one batch item per task.
#pragma once
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// (loss, log_alpha) of log_probs (T, N, C), padded targets (N, S) and lengths (N,) each.
void ctc_loss_kernel(const KernelContext& ctx);
/// d loss / d log_probs (T, N, C) for dout of ctc_loss's loss (inputs: dout, then ctc_loss's).
void ctc_loss_grad_kernel(const KernelContext& ctx);

}  // namespace mycel::cpu
