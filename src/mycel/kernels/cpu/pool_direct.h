// 2x2, stride 2 max pooling of NCHW float32 (LeNet's and most CNNs' pooling) and its gradient, as
// AVX-512 loops where the CPU has it and plain loops the compiler vectorizes elsewhere (AVX2):
// oneDNN's plain-layout pooling runs at a fraction of memory speed (its kernels want
// channel-blocked layouts; 1.2-5 ms for LeNet5's first pooling on a 2-core EPYC), and its
// backward recomputes a workspace first. Same
// semantics as nn_ref's loops: the first maximum of each window in scan order, a NaN wins.
#pragma once
#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/nn_geom.h"

namespace mycel::cpu {

/// Whether max_pool_2x2 / max_pool_2x2_grad take this pooling: float32, a 2x2 window, stride 2,
/// no padding.
bool max_pool_2x2_fits(DType dtype, const WindowGeom& g);
/// y = max_pool2d(x) with x NCHW (n, c, h, w) and y (n, c, h / 2, w / 2).
void max_pool_2x2(const Tensor& x, Tensor& y, const WindowGeom& g);
/// dx: dy at each window's maximum, 0 elsewhere (also in a last odd row or column).
void max_pool_2x2_grad(const Tensor& x, const Tensor& dy, Tensor& dx, const WindowGeom& g);

}  // namespace mycel::cpu
