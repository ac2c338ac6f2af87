// Direct float32 convolution for layers with few channels: a network's first conv (one to a few
// input channels, up to 16 output channels). oneDNN vectorizes over 16 (AVX-512) or 8 (AVX2)
// output channels and wastes most lanes there (LeNet5's 1->6 5x5 conv ran at ~60 GFLOP/s on two
// cores); this kernel vectorizes over 16 or 8 output columns instead and keeps up to 8 (AVX2: 6)
// output channels' accumulators in registers, with bias and relu applied before the one store.
// One body (conv_direct_impl.inc) is compiled for each ISA; the CPU picks at run time.
#pragma once
#include <cstdint>

#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/nn_geom.h"

namespace mycel::cpu {

/// Whether conv2d_direct takes this convolution: float32, one group, stride and dilation 1, at
/// most 16 output channels and 128 weights per output channel, output rows of 8 to ~1000
/// columns that fill its 16- or 8-wide tiles about as well as the channels would fill oneDNN's
/// (see conv_direct_impl.inc), on a CPU with AVX-512 or AVX2.
bool conv2d_direct_fits(DType dtype, const WindowGeom& g);

/// y = conv2d(x, w) (+ bias) (then relu) with x in NCHW. y is NCHW when `block` is 0, else in
/// oneDNN's blocked layout nChw<block>c (channels padded with zeros to a multiple of block);
/// block == g.oc is NHWC.
void conv2d_direct(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                   const WindowGeom& g, bool relu, int64_t block);

/// conv2d_direct followed by 2x2, stride 2 max pooling (no padding), in one pass: y holds
/// (n, oc, oh / 2, ow / 2); the convolution's rows and columns past an even count are dropped,
/// as the pooling would drop them.
void conv2d_direct_max_pool(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                            const WindowGeom& g, bool relu, int64_t block);

/// Whether conv2d_direct_backprop_input takes this data gradient: float32, one group, stride and
/// dilation 1, padding at most kernel - 1, and the transposed convolution (x's channels as
/// outputs, dy's rows as inputs) within conv2d_direct's geometry, with up to 400 weights per
/// channel. AVX2 CPUs, and AVX-512 ones unless MYCEL_CONV_DIRECT=0 (cpu_prefers_direct_conv;
/// measured against oneDNN on LeNet5's conv2, 6 <- 16 channels, on Zen 4 and Ice Lake).
bool conv2d_direct_bwd_data_fits(DType dtype, const WindowGeom& g);

/// dx = conv2d_backprop_input(dy, w), all NCHW, as the direct convolution of dy with the
/// flipped, channel-swapped weights written to `scratch` (w.numel() floats).
void conv2d_direct_backprop_input(const Tensor& dy, const Tensor& w, Tensor& dx,
                                  const WindowGeom& g, float* scratch);

/// Whether conv2d_direct_backprop_filter takes this weight gradient: float32, one group, stride
/// and dilation 1, kernels up to 7 wide, 8 to 128 output columns, at most 16 x 16 channels; AVX2
/// CPUs, and AVX-512 ones unless MYCEL_CONV_DIRECT=0 (measured against oneDNN on LeNet5's 1 -> 6
/// and 6 -> 16 convolutions on Zen 4 and Ice Lake).
bool conv2d_direct_bwd_filter_fits(DType dtype, const WindowGeom& g);

/// Floats of scratch conv2d_direct_backprop_filter needs for g with num_threads() threads.
int64_t conv2d_direct_bwd_filter_scratch(const WindowGeom& g);

/// dw = conv2d_backprop_filter(dy, x), all NCHW: the batch split over the threads, each summing
/// its images into its own partial sums in `scratch` (conv2d_direct_bwd_filter_scratch floats),
/// then added up. Vectorized over output columns, or over output channels when those fill more
/// of the 8 lanes, with the sums of one kernel row in registers.
void conv2d_direct_backprop_filter(const Tensor& dy, const Tensor& x, Tensor& dw,
                                   const WindowGeom& g, float* scratch);

}  // namespace mycel::cpu
