// The weight gradient of a convolution with small output planes as one GEMM over the whole batch:
// dw (OC, C*KH*KW) = dy' (OC, N*OH*OW) x col (N*OH*OW, C*KH*KW), the columns gathered once.
// oneDNN 2.6's AVX2 direct backward-weights kernel runs at 45-60% of the FMA peak when a plane
// has 16 positions (ResNet-18's last stage at 32x32 input: 512->512 3x3 at 4x4, 42-55 ms on one
// core); the GEMM with its two copies takes 34 ms (bench/bench_conv_small_planes.py). At 8x8 the
// two tie, so larger planes stay with oneDNN.
#pragma once
#include <memory>

#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/nn_geom.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// colT[(c, i, j), (n, oh, ow)] = x[n, c, oh * sh - pt + i * dh, ow * sw - pl + j * dw], 0 outside
/// the input: the columns of x (NCHW) as a (C*KH*KW, N*OH*OW) row-major matrix (the small-plane
/// GEMMs' shared gather: this weight gradient and conv_gemm_forward.h).
void conv_gather_columns(const float* x, float* col, const WindowGeom& g);

/// float32, one group, a kernel larger than 1x1, planes of at most 16 output positions, and
/// gathered columns of at most 32 MiB (a per-thread staging buffer that is kept).
bool conv2d_gemm_bwd_filter_fits(DType dtype, const WindowGeom& g);
/// dw = the weight gradient of conv2d for dy (N, OC, OH, OW) and x (N, C, H, W), all NCHW/OIHW.
void conv2d_gemm_backprop_filter(const Tensor& dy, const Tensor& x, Tensor& dw, const WindowGeom& g,
                                 std::unique_ptr<KernelPrepared>* slot);

}  // namespace mycel::cpu
