// Image resizing kernels on NCHW tensors.
#pragma once
#include <cstdint>
#include <vector>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// How an output coordinate maps to a source coordinate along one axis.
enum class CoordMode { kAsymmetric, kAlignCorners, kHalfPixel };

/// Source coordinate of output index i when resizing in_size -> out_size.
double source_coord(int64_t i, int64_t in_size, int64_t out_size, CoordMode mode);

/// Bilinear resize of x (N, C, H, W) into out (N, C, OH, OW).
void resize_bilinear(const Tensor& x, Tensor& out, CoordMode mode);

/// The adjoint of resize_bilinear: dx (N, C, H, W) = sum over the outputs of dy (N, C, OH, OW)
/// times each output's interpolation weight on that input.
void resize_bilinear_backward(const Tensor& dy, Tensor& dx, CoordMode mode);

}  // namespace mycel::cpu
