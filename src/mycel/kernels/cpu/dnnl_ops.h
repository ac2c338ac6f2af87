// oneDNN-backed dense kernels (float32 and bfloat16; the caller routes other dtypes to nn_ref.h).
// Primitives are cached by shapes, dtype and attributes; where oneDNN cannot run bfloat16 on this
// CPU the kernel converts to float32, computes and rounds back.
#pragma once
#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/nn_geom.h"

namespace mycel::cpu {

/// c = op(a) @ op(b) (+ bias broadcast over the last dim) per geometry.
void matmul_dnnl(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                 const MatmulGeom& g);
/// y = conv2d(x, w) (+ bias), NCHW, weights (OC, C/groups, KH, KW).
void conv2d_dnnl(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                 const WindowGeom& g);

}  // namespace mycel::cpu
