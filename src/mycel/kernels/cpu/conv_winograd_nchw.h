// Winograd (conv_winograd.h) for float32 3x3 stride-1 convolutions on plain NCHW tensors whose
// weights change at every call: a training step's forward and backward-data convolutions (graph
// mode keeps the training chain in NCHW, eager mode is NCHW). Each call transforms the weights
// (vectorised float32, winograd_weights_into), reorders the input to nChw8c, runs the Winograd
// kernel and reorders the output back. At a training batch the GEMM in the Winograd domain does
// the work: oneDNN 2.6's AVX2 direct kernels already run near the FMA peak, so 4x (F(4x4)) or
// 2.25x (F(2x2)) fewer multiplies pay for the two reorders (docs/perf_resnet.md has the
// measurements). MYCEL_WINOGRAD=0 turns it off (oneDNN then), as for the inference kernels.
#pragma once
#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/conv_winograd.h"
#include "mycel/kernels/cpu/nn_geom.h"

namespace mycel::cpu {

/// The tile conv2d on NCHW with per-call weights runs Winograd with, 0 for none (then oneDNN):
/// winograd_fits, from a batch of 4 (below it the per-call weight transform and reorders are
/// not amortised, and small eager calls keep oneDNN's rounding); F(4x4) from 8x8 outputs, F(2x2)
/// from 6x6, transformed weights of at most 16 MiB; MYCEL_WINOGRAD=0/2/4 as winograd_tile, and
/// MYCEL_WINOGRAD_NCHW=0 (read at every call) turns off this path only.
int winograd_nchw_tile(DType dtype, const WindowGeom& g);

/// The same for conv2d_backprop_input of the forward geometry g: the backward-data convolution is
/// the forward one of dy with the flipped, transposed weights and padding 2 - pad (needs pads of
/// at most 2).
int winograd_nchw_bwd_data_tile(DType dtype, const WindowGeom& g);

/// y = act(conv2d(x, w) + bias), x, y NCHW float32, w OIHW, bias (g.oc) or null.
void conv2d_winograd_nchw(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                          const WindowGeom& g, int m, WinogradAct act);

/// dx = conv2d_backprop_input(dy, w) of the forward geometry g, NCHW float32.
void conv2d_backprop_input_winograd_nchw(const Tensor& dy, const Tensor& w, Tensor& dx,
                                         const WindowGeom& g, int m);

}  // namespace mycel::cpu
