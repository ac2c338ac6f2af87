// CPU kernels of the sampled distributions (gamma, Poisson, Laplace, categorical/multinomial).
// Element (or row) i draws from block i of op_stream(seed, seed2) and, for rejection sampling,
// from that block's sub-streams, so results do not depend on the thread count.
#pragma once
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// out ~ Laplace(0, 1) of attribute `shape`, by inverting the CDF.
void standard_laplace_kernel(const KernelContext& ctx);
/// out[s..., a...] ~ Gamma(alpha[a...], 1) (Marsaglia and Tsang; alpha < 1 boosted by u^(1/alpha)).
void random_gamma_kernel(const KernelContext& ctx);
/// out[s..., r...] ~ Poisson(rate[r...]) (Knuth's product below 10, Hormann's PTRS above);
/// a rate outside [0, 2^50] throws ValueError.
void random_poisson_kernel(const KernelContext& ctx);
/// out (batch, num_sample): class indices drawn from softmax(logits[b]) (inverse CDF).
void random_categorical_kernel(const KernelContext& ctx);
/// out (rows, num_samples): indices drawn with probability proportional to the row's weights,
/// with replacement (inverse CDF) or without (Gumbel top-k, equivalent to drawing one at a time).
void multinomial_kernel(const KernelContext& ctx);
/// multinomial_kernel's draws (attributes numsamples, replacement) from the stream keyed by the
/// one-element inputs seed and offset (seed -1 with offset 0: the global generator).
void multinomial_with_replacement_kernel(const KernelContext& ctx);

}  // namespace mycel::cpu
