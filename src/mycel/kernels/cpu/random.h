// CPU kernels of the random ops. Each draws a fixed number of Philox blocks per element group
// from op_stream(seed, seed2), so results do not depend on the thread count.
#pragma once
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// out ~ U[minval, maxval) (attrs minval, maxval, seed, seed2).
void uniform_kernel(const KernelContext& ctx);
/// out ~ N(mean, stddev^2) by Box-Muller (attrs mean, stddev, seed, seed2).
void normal_kernel(const KernelContext& ctx);
/// out ~ uniform integers in [low, high), unbiased by rejection (attrs low, high, seed, seed2).
void randint_kernel(const KernelContext& ctx);
/// out = 1 with probability p else 0, shaped and typed like input 0 (attrs p, seed, seed2).
void bernoulli_kernel(const KernelContext& ctx);
/// mask = 1 with probability keep_prob; y = x * mask / keep_prob (outputs y, mask).
void dropout_kernel(const KernelContext& ctx);

}  // namespace mycel::cpu
