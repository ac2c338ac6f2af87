// Channels-last (NHWC) kernels for the non-convolution ops that touch a ResNet's 4-D activations:
// batch norm forward and backward, the global mean pool over H, W and its gradient (a broadcast
// back over H, W). An NHWC activation is a (rows = N*H*W, C) matrix with C contiguous: every loop
// runs over rows with the channels in vector lanes, which suits small planes (ResNet-18's 4x4
// stage: the NCHW loops walk 16 elements per plane and per channel). Tensors keep their logical
// NCHW shape; only their buffer is NHWC (the graph backend's layout step, backend/
// assign_layouts.cc, says so through KernelParams). Activations float32 or bfloat16, parameters
// and statistics float32, as norm_fast.h's NCHW loops, whose formulas these repeat.
// Per launch, bf16, one core, minima (tests/cpp/norm_nhwc_test.cc DISABLED_Timings, load 2-3),
// NCHW loop -> NHWC: batch_norm (32,64,32,32) 0.97 -> 0.67 ms, (32,512,4,4) 0.25 -> 0.09;
// batch_norm_grad 1.36 -> 0.81 and 0.29 -> 0.10; the mean over 4x4 0.12 -> 0.02 (0.53 before
// reduce.cc's short runs). Two threads with a free second core: 0.35 and 0.05 ms forward.
#pragma once
#include <cstdint>

#include "mycel/core/tensor.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// Whether the graph backend's "blocked" activation layout for `dtype` is NHWC here (bf16: NHWC
/// on AVX512-BF16 CPUs; float32: NHWC where oneDNN picks it, nChw8c on Zen 4), i.e. whether a
/// launch with src_blocked/dst_blocked hands these kernels NHWC buffers.
bool nhwc_activations(DType dtype);

/// batch_norm_f32's contract (norm_fast.h) on an NHWC x and y: `rows` = N*H*W rows of c channels.
/// Training: batch statistics in two passes (sum, then the squared deviations), the running
/// statistics updated as batch_norm_loop does; inference: the running ones. Sums per thread in
/// float over blocks of 16 rows, then in double, added in thread order (deterministic for a
/// given thread count); one OpenMP region with barriers between the passes, each thread
/// normalizing the rows it summed. False (nothing written) outside the contract.
bool batch_norm_nhwc(const Tensor& x, const Tensor& scale, const Tensor& bias, Tensor& running_mean,
                     Tensor& running_var, Tensor& y, Tensor& saved_mean, Tensor& saved_invstd,
                     int64_t rows, int64_t c, bool training, double eps, double momentum);

/// batch_norm_grad_f32's contract on NHWC dy, x and dx (`rows` = N*H*W).
bool batch_norm_grad_nhwc(const Tensor& dy, const Tensor& x, const Tensor& scale,
                          const Tensor& mean, const Tensor& invstd, const Tensor& dmean,
                          const Tensor& dinvstd, Tensor& dx, Tensor& dscale, Tensor& dbias,
                          int64_t rows, int64_t c, bool training);

/// y (n, c) := the mean over the hw positions of NHWC x (n, hw, c); float32 or bfloat16 (one
/// dtype). Each output sums its positions in order in float and divides by hw, as the NCHW
/// `mean` does for planes under 32 positions (bit for bit there).
bool mean_hw_nhwc(const Tensor& x, Tensor& y, int64_t n, int64_t hw, int64_t c);

/// y (n, hw, c) NHWC := x (n, c) repeated over the hw positions (mean's gradient after its
/// division); any 1-, 2- or 4-byte dtype.
bool broadcast_hw_nhwc(const Tensor& x, Tensor& y, int64_t n, int64_t hw, int64_t c);

/// The launches: `mean` over axes (2, 3) of a 4-D input, `broadcast_like`/`broadcast_to` of an
/// (N, C, 1, 1) (or (N, C) where that broadcasts) input to a 4-D output, when the launch's
/// KernelParams mark its 4-D activations laid out by the layout step (src_blocked or
/// dst_blocked) and that layout is NHWC for the dtype. They run the NHWC kernel, set
/// params->layout_taken and return true; false (nothing written) otherwise.
bool mean_hw_nhwc_launch(const KernelContext& c);
bool broadcast_hw_nhwc_launch(const KernelContext& c);

}  // namespace mycel::cpu
