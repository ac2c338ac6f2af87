// CPU kernels of the samplers added for MindSpore compatibility: truncated normal, log-normal,
// exponential, binomial, beta, the parameterized truncated normal and the candidate samplers.
// Deterministic for given seeds (random_draws.h), non_deterministic_ints aside.
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
/// out[b, ...] ~ N(mean[b], stdevs[b]^2) restricted to [min[b], max[b]] (MindSpore's
/// ParameterizedTruncatedNormal): each parameter holds one value or one per batch row b (the
/// first dim of attribute `shape`).
void parameterized_truncated_normal_kernel(const KernelContext& ctx);
/// Integers over the whole range of the output's type from a stream seeded by the operating
/// system (std::random_device), so no seed reproduces them (MindSpore's NonDeterministicInts).
void non_deterministic_ints_kernel(const KernelContext& ctx);
/// TensorFlow's/MindSpore's candidate samplers: num_sampled classes of [0, range_max) drawn
/// uniformly or log-uniformly (attribute `distribution`), with or without repeats, and the
/// expected count of each true and sampled class under that sampling.
void candidate_sampler_kernel(const KernelContext& ctx);

}  // namespace mycel::cpu
