// float32 (and bf16-activation) batch_norm forward/backward and layer_norm backward as vectorizable
// loops: float math per element, partial sums in 8 float lanes per plane or row, added into double
// per plane or row (the reference loops, nn_ref.h / nn_grad_ref.h, convert every element to double
// and index gamma with a modulo: 5-10x slower). Scratch lives in grow-only thread-local buffers, so
// a warm launch allocates nothing. Each returns false where it does not apply (the caller runs the
// reference).
#pragma once
#include <cstdint>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// batch_norm_ref's contract: x and y float32 or bfloat16 (amp O2's activations, read into float
/// and rounded once on store), parameters and statistics float32.
bool batch_norm_f32(const Tensor& x, const Tensor& scale, const Tensor& bias, Tensor& running_mean,
                    Tensor& running_var, Tensor& y, Tensor& saved_mean, Tensor& saved_invstd,
                    int64_t n, int64_t c, int64_t spatial, bool training, double eps,
                    double momentum);

/// batch_norm_grad_ref's contract: dy, x and dx float32 or bfloat16 (one dtype), the rest float32.
bool batch_norm_grad_f32(const Tensor& dy, const Tensor& x, const Tensor& scale, const Tensor& mean,
                         const Tensor& invstd, const Tensor& dmean, const Tensor& dinvstd,
                         Tensor& dx, Tensor& dscale, Tensor& dbias, int64_t n, int64_t c,
                         int64_t spatial, bool training);

/// layer_norm_ref's contract with gamma and beta float32 over one row (numel == inner), the
/// statistics float32, x and y float32 or bfloat16 (one dtype: amp O2's activations, rounded once
/// on store), in AVX-512 lanes (layer_norm_rows.h); false where the CPU has none, or with
/// MYCEL_LAYER_NORM_ROWS=0 (oneDNN's primitive then runs: A/B).
bool layer_norm_f32(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                    Tensor& mean, Tensor& rstd, int64_t outer, int64_t inner, double eps);

/// layer_norm_grad_ref's contract, every tensor float32 and gamma covering one row (numel ==
/// inner; its usual form, begin_params_axis == begin_norm_axis) or empty.
bool layer_norm_grad_f32(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dmean, const Tensor& drstd, Tensor& dx,
                         Tensor& dgamma, Tensor& dbeta, int64_t outer, int64_t inner);
/// The same with dy = dy_a + dy_b, bfloat16 activations and a gamma only: each dy element the
/// bf16 sum an add launch stores, read in the same pass (backend/fuse_add_norm_grad.cc). False
/// (nothing written) outside that contract.
bool layer_norm_grad_sum_bf16(const Tensor& dy_a, const Tensor& dy_b, const Tensor& x,
                              const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                              const Tensor& dmean, const Tensor& drstd, Tensor& dx, Tensor& dgamma,
                              Tensor& dbeta, int64_t outer, int64_t inner);

}  // namespace mycel::cpu
