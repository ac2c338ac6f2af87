// CPU kernels of the samplers added for MindSpore compatibility: truncated normal, log-normal,
// exponential, binomial and beta. Deterministic for given seeds (random_draws.h).
#pragma once
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// out ~ N(0, 1) restricted to [-2, 2] (MindSpore's TruncatedNormal), of attribute `shape`.
void truncated_normal_kernel(const KernelContext& ctx);
/// out ~ exp(N(mean, std^2)), shaped like x (MindSpore's LogNormalReverse).
void log_normal_kernel(const KernelContext& ctx);
/// out ~ Exp(lambd) (density lambd e^(-lambd x)), shaped like x.
void exponential_kernel(const KernelContext& ctx);
/// out ~ Binomial(count, probs) elementwise (inversion for small means, Hormann's BTRS above);
/// a count that is not a whole number >= 0 or a probability outside [0, 1] throws ValueError.
void binomial_kernel(const KernelContext& ctx);
/// out[s..., a...] ~ Beta(alpha[a...], beta[a...]) as G_a / (G_a + G_b), in log space so that
/// tiny parameters keep their mass at 0 and 1 instead of dividing 0 by 0.
void random_beta_kernel(const KernelContext& ctx);

}  // namespace mycel::cpu
