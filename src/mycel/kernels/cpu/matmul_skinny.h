// float32 matmuls with one dimension of at most 16 (a classifier's 10 outputs, the gradients
// through it) as plain AVX2 loops: oneDNN 2.6's sgemm ran them at 7-27% of the FMA peak inside
// the MLP's training step (docs/perf_mlp.md).
#pragma once
#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/nn_geom.h"

namespace mycel::cpu {

/// Whether matmul_skinny takes this float32 matmul: no batch dims, one of M, N, K at most 16,
/// at most 8M multiply-adds, and a layout its loops read along contiguous rows.
bool matmul_skinny_fits(const MatmulGeom& g);
/// c = a @ b (+ bias of shape (N,)), a and b contiguous float32 stored as g says.
void matmul_skinny(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                   const MatmulGeom& g);

}  // namespace mycel::cpu
