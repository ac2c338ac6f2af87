// The data gradient of a few-channel convolution with narrow rows, vectorized over the batch:
// dx = conv2d_backprop_input(dy, w) with images in the vector lanes. The direct kernels
// (conv_direct.h) vectorize over a row's columns; for LeNet5's conv2 (dy rows of 10 columns,
// dx rows of 14 after the kernel-1 padding) half of their lanes multiply padding or nothing.
// Here dy is transposed to (channel, row, column, image) once, every FMA is a useful one, and dx
// is transposed back: LeNet5's conv2 data gradient at batch 64 on a Zen 4 core, 0.51 ms (direct)
// -> 0.30 ms (bench/bench_lenet5_kernels.py --threads 1). The forward convolution is the data
// gradient of the transposed one, so the same kernel runs LeNet5's conv2 forward too.
#pragma once
#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/nn_geom.h"

namespace mycel::cpu {

/// Whether conv2d_backprop_input_batch_lanes takes this data gradient: float32, one group, stride
/// and dilation 1, a batch of at least 16, at most 16 channels on each side, kernels up to 7
/// wide, dy rows narrower than 16 columns, and transposed copies of at most 16 MiB; on AVX-512
/// CPUs (cpu_prefers_direct_conv; measured against the direct kernel and oneDNN on AMD Zen 4 and
/// an Ice Lake Xeon).
bool conv2d_bwd_data_batch_lanes_fits(DType dtype, const WindowGeom& g);

/// dx = conv2d_backprop_input(dy, w), all NCHW (dy (n, oc, oh, ow), w (oc, c, kh, kw)).
void conv2d_backprop_input_batch_lanes(const Tensor& dy, const Tensor& w, Tensor& dx,
                                       const WindowGeom& g);

/// Whether conv2d_batch_lanes takes this convolution: the same kernel with x in dy's place (the
/// forward convolution is the data gradient of the transposed one), so x's rows narrower than 16
/// columns, paddings up to kernel - 1, and the rest as above.
bool conv2d_batch_lanes_fits(DType dtype, const WindowGeom& g);

/// y = conv2d(x, w) (+ bias) (then relu), all NCHW (LeNet5's conv2 at a batch: 0.19 ms with
/// oneDNN's AVX-512 kernel on two Zen 4 cores, see docs/perf_lenet5.md).
void conv2d_batch_lanes(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                        const WindowGeom& g, bool relu);

}  // namespace mycel::cpu
