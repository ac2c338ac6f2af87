// Reference CPU loops for the backward ops of the nn family: convolution backward (data and
// filter; float64 and the float32 fallback), pooling backward, batch_norm and layer_norm
// backward. Templated over the element type like nn_ref.h; sums accumulate in double.
#pragma once
#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/nn_geom.h"

namespace mycel::cpu {

/// dx = the transposed convolution of dy (N, OC, OH, OW) with w (OC, C/groups, KH, KW).
template <class T>
void conv2d_backprop_input_ref(const Tensor& dy, const Tensor& w, Tensor& dx, const WindowGeom& g);
/// dw[o, c, i, j] = sum over batch and output positions of dy * the input under tap (i, j).
template <class T>
void conv2d_backprop_filter_ref(const Tensor& dy, const Tensor& x, Tensor& dw, const WindowGeom& g);
/// Max pooling backward: each dy goes to the first maximum of its window (a NaN wins).
template <class T>
void max_pool2d_grad_ref(const Tensor& x, const Tensor& dy, Tensor& dx, const WindowGeom& g);
/// Average pooling backward with the forward's divisor (count_include_pad as in avg_pool2d_ref).
template <class T>
void avg_pool2d_grad_ref(const Tensor& dy, Tensor& dx, const WindowGeom& g, bool count_include_pad);
/// Batch norm backward over x viewed as (N, C, spatial). Training: the full gradient through the
/// batch statistics, plus the sensitivities dmean/dinvstd of the saved statistics; inference: the
/// statistics are constants. Writes dx, dscale and dbias.
void batch_norm_grad_ref(const Tensor& dy, const Tensor& x, const Tensor& scale, const Tensor& mean,
                         const Tensor& invstd, const Tensor& dmean, const Tensor& dinvstd,
                         Tensor& dx, Tensor& dscale, Tensor& dbias, int64_t n, int64_t c,
                         int64_t spatial, bool training);
/// Layer norm backward over rows of x viewed as (outer, inner), gamma indexed by flat index % its
/// size (as layer_norm_ref); dmean/drstd are the sensitivities of the saved row statistics.
template <class T>
void layer_norm_grad_ref(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dmean, const Tensor& drstd, Tensor& dx,
                         Tensor& dgamma, Tensor& dbeta, int64_t outer, int64_t inner);

}  // namespace mycel::cpu
