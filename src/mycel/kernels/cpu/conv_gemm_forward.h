// The forward convolution of small output planes as one GEMM over the whole batch, the training
// step's NCHW convolutions with changing weights: y' (OC, N*OH*OW) = w (OC, C*KH*KW) x colT
// (C*KH*KW, N*OH*OW), the columns gathered once (conv_gather_columns), then y' scattered back
// to NCHW with the bias. ResNet-18 CIFAR's last stage (512 -> 512 3x3 at 4x4, batch 32) ran
// oneDNN's brgconv at 26.7 ms on one core of an Ice Lake Xeon, where a matmul of the same
// multiply-adds takes 17.2 ms.
#pragma once
#include <memory>

#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/nn_geom.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// float32, one group, a kernel larger than 1x1, output planes of at most 16 positions, enough
/// rows and channels for a GEMM, gathered columns of at most 32 MiB; on AVX-512 CPUs other than
/// Zen 4 (not measured there) unless MYCEL_CONV_GEMM_FWD=0 (oneDNN's: A/B, and references that
/// want oneDNN's direct sums; read at every call).
bool conv2d_gemm_forward_fits(DType dtype, const WindowGeom& g);
/// y = conv2d(x, w) + bias (NCHW, OIHW; bias may be null).
void conv2d_gemm_forward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                         const WindowGeom& g, std::unique_ptr<KernelPrepared>* slot);

}  // namespace mycel::cpu
