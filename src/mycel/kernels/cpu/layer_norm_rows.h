// layer_norm's forward rows in AVX-512 lanes (float32 or bfloat16 x and y, float32 gamma, beta and
// statistics): where the CPU has AVX-512, faster than oneDNN's primitive and free of its per-launch
// cost (a string cache key, the cache's lock, an argument map and a scratchpad on the heap).
#pragma once
#include <cstdint>

namespace mycel::cpu {

/// y = (x - mean) * rstd * gamma + beta over `outer` rows of `inner`, mean and rstd = 1 /
/// sqrt(var + eps) (biased variance, two passes) per row; bf16: x and y are bfloat16 bits, y
/// rounded once (nearest even). False (nothing written) where the CPU has no AVX-512.
bool layer_norm_rows(const void* x, bool bf16, const float* gamma, const float* beta, void* y,
                     float* mean, float* rstd, int64_t outer, int64_t inner, double eps);

}  // namespace mycel::cpu
