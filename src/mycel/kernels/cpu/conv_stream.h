// Direct float32 convolution on AVX2's nChw8c for batch-1 inference where the weights outweigh
// the activations (ResNet's stride-2 convolutions and its 512 channels at 4x4: 9.4 MB of weights
// for 16 output positions). oneDNN's AVX2 kernel splits such a small plane poorly over threads
// and reads a block's weights again for each output row. Here each thread owns whole groups of
// 32 output channels and streams their weights exactly once: for each 8-channel input block,
// its 32 x 8 x kh x kw weights (9.2 KB for 3x3, in L1) meet every output position of the plane,
// 3 positions x 32 channels in 12 AVX2 accumulators, the partial sums parked in an L1-sized
// buffer between input blocks. Any stride, padding and dilation; bias and relu/relu6 are applied
// before the one store. The weights are repacked once per weight buffer. Sums run in the order
// of a plain loop over input channels and taps.
#pragma once
#include <cstdint>

#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/conv_winograd.h"
#include "mycel/kernels/cpu/nn_geom.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// Weights repacked for conv2d_stream: per group of 32 output channels (the last maybe 8, 16 or
/// 24 wide), [c8 / 8][kh * kw][8][width] float32, channels padded with zeros to multiples of 8:
/// one group's weights are one sequential stream.
struct StreamWeights {
  int64_t c8 = 0, oc8 = 0;  // input / output channels rounded up to 8
  Tensor u;
};

/// Whether conv2d_stream takes a float32 conv2d of geometry g on nChw8c tensors: one image, one
/// group, at least 16 input and output channels, a kernel larger than 1x1 (oneDNN's 1x1 kernels
/// are faster), an AVX2 build whose activation layout is nChw8c, and an output plane of at most
/// 16 positions at stride 1 or 256 at larger strides. Measured per layer in the lite runtime, one
/// thread, weights from memory (bench/bench_conv_stream.py, under load), streamed / oneDNN time:
/// 512 channels at 4x4 0.85, 256 -> 512 stride 2 from 8x8 0.90 and from 14x14 0.92, 128 -> 256
/// from 28x28 0.99; 512 at 7x7, stride 1, was even (1.0) and stays on oneDNN. Off by default on
/// Zen 4 with AVX-512 (oneDNN's brgconv is faster there, conv_stream.cc). MYCEL_CONV_STREAM=0
/// turns it off, =1 on; MYCEL_CONV_STREAM_RULE="s1,s2" sets the largest planes at stride 1 and
/// above.
bool conv_stream_fits(DType dtype, const WindowGeom& g);

/// Whether conv2d (dnnl_conv.cc) runs conv2d_stream for one launch: conv_stream_fits where the
/// launch has a prepared-state slot, constant weights, blocked input and output, and post-ops
/// that are activations only (Winograd, where it fits, is chosen first).
bool conv_stream_for(DType dtype, const WindowGeom& g, const KernelParams* params, bool has_slot);

/// w (OIHW float32, g's shape) repacked for conv2d_stream.
StreamWeights conv_stream_weights(const Tensor& w, const WindowGeom& g);

/// y = act(conv2d(x, w) + bias), x (g.n, g.c, g.h, g.w) and y (g.n, g.oc, g.oh, g.ow) in nChw8c
/// (channels padded to 8; y's padding is written zero). bias (g.oc floats) may be null. Uses
/// staging buffers 0 and 2 of the calling thread and 1 of each worker thread
/// (dnnl_util::staging_data): no heap allocation once warm.
void conv2d_stream(const float* x, const StreamWeights& u, const float* bias, float* y,
                   const WindowGeom& g, WinogradAct act);

}  // namespace mycel::cpu
