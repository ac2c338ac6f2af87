// Winograd convolution for float32 3x3, stride-1 convolutions on AVX2's channel-blocked layout
// (nChw8c), for inference with constant weights (the lite runtime, graph mode's folded batch
// norm). oneDNN 2.6 has no AVX2 Winograd: its direct 3x3 kernels run near the FMA peak, so only
// fewer multiplies go faster. F(m x m, 3x3) computes an m x m output tile from an (m+2) x (m+2)
// input tile with (m+2)^2 multiplies per channel pair instead of 9 m^2: F(2x2) 2.25x fewer,
// F(4x4) 4x fewer, at the cost of input/output transforms and of transformed weights
// (m+2)^2 / 9 times larger (4x for F(4x4)): worth it while the GEMM in the Winograd domain has
// enough tiles to reuse them (see winograd_tile for the choice per shape).
//
// Steps of one call: (1) each input tile's transform V = B^T d B, per 8-channel block, into
// V[point][tile][channel]; (2) per point, M[point] = V[point] x U[point] (a GEMM over channels,
// register-blocked 6 tiles x 16 output channels); (3) each output tile's A^T M A, plus bias,
// plus an optional residual, then relu/relu6, stored. The filter transform U = G g G^T runs once
// per weight buffer (winograd_weights, at prepare time).
#pragma once
#include <cstdint>

#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/nn_geom.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// Transformed weights of one convolution: u holds U[point][oc / 16][c8][16] float32 (the last
/// block [c8][8] when oc8 is an odd number of 8s; channels padded with zeros to multiples of 8),
/// point = row * (m + 2) + column: the GEMM reads each point's weights as one sequential stream,
/// which the hardware prefetcher follows (separate 8-channel blocks left it waiting on memory).
struct WinogradWeights {
  int m = 0;                // output tile side: 2 or 4
  int64_t c8 = 0, oc8 = 0;  // input / output channels rounded up to 8
  Tensor u;
};

/// The output tile (2 or 4) a float32 conv2d of geometry g on nChw8c tensors runs Winograd with,
/// or 0 for none (then oneDNN): 3x3, stride and dilation 1, padding at most 2, one group, at
/// least 16 input and output channels, an AVX2 build whose activation layout is nChw8c. The size
/// rule was measured at batch 1 on AVX2 (bench/bench_winograd.py per shape, then whole ResNet-18
/// CIFAR runs in the lite runtime with each rule): F(4x4) from 10x10 outputs, F(2x2) from 6x6,
/// oneDNN below (at 4x4 and 512 channels the GEMM has too few tiles to reuse weights that are
/// 16/9 or 4x larger), and no tile whose transformed weights exceed 8 MiB (they stream from
/// memory at every call: 512 channels at 7x7 ran slower than oneDNN with F(2x2)). For measuring:
/// MYCEL_WINOGRAD=0 turns it off, =2 or =4 forces that tile wherever the geometry fits;
/// MYCEL_WINOGRAD_RULE="f4,f2,mib" sets the smallest output sides for F(4x4) and F(2x2) and the
/// largest transformed weights in MiB (default "10,6,8").
int winograd_tile(DType dtype, const WindowGeom& g);
/// Whether this build's Winograd kernels compute a convolution of geometry g (float32, 3x3,
/// stride and dilation 1, padding at most 2, one group, at least 16 input and output channels),
/// whatever the activation layout; and MYCEL_WINOGRAD's forced tile (0, 2, 4; -1 when unset).
bool winograd_fits(DType dtype, const WindowGeom& g);
int winograd_forced();

/// The tile conv2d (dnnl_conv.cc) runs Winograd with for one launch, 0 for none: winograd_tile's
/// rule where the launch has a prepared-state slot, constant weights, blocked input and output,
/// and post-ops that are activations only, perhaps after a residual add (a first kAddRow whose
/// operand has y's shape and layout; the lite runtime counts its Winograd nodes with it).
int winograd_tile_for(DType dtype, const WindowGeom& g, const KernelParams* params, bool has_slot);

/// U = G w G^T for each (output, input) channel pair of w (OIHW, float32, g's shape), for tile m
/// (2 or 4), computed in float64.
WinogradWeights winograd_weights(const Tensor& w, const WindowGeom& g, int m);

/// winograd_weights for weights that change at every call (training): float32 arithmetic, 16
/// output channels per step (vectorised), parallel over input channels, into r.u (reused when it
/// is large enough: the caller keeps r between calls). g is the geometry of the convolution U
/// serves. With `flip`, w is the OIHW weights of the forward convolution whose backward-data
/// convolution g is: w'[o][c] = rot180(w[c][o]), so w has shape (g.c, g.oc, 3, 3).
void winograd_weights_into(const float* w, const WindowGeom& g, int m, bool flip,
                           WinogradWeights& r);

/// What the output transform applies last.
enum class WinogradAct { kNone, kRelu, kRelu6 };

/// y = act(conv2d(x, w) + bias + residual), where x is (g.n, g.c, g.h, g.w) and y and residual
/// are (g.n, g.oc, g.oh, g.ow), all nChw8c (channels padded to 8; y's padding is written zero
/// when bias's and residual's are). bias (g.oc floats) and residual may be null. Uses staging
/// buffers 0-2 of the calling thread (dnnl_util::staging_data): no heap allocation once warm.
void conv2d_winograd(const float* x, const WinogradWeights& u, const float* bias,
                     const float* residual, float* y, const WindowGeom& g, WinogradAct act);

}  // namespace mycel::cpu
