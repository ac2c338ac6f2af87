// Reference CPU loops for the nn family: what oneDNN does not cover (float64, integer matmul) and
// the memory-bound ops (pooling, normalization, softmax) for every float dtype. Templated over the
// element type; callers dispatch once with visit_dtype.
#pragma once
#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/nn_geom.h"

namespace mycel::cpu {

/// c = a @ b per geometry (blocked loops; integer types wrap like numpy).
template <class T>
void matmul_ref(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                const MatmulGeom& g);
/// Direct convolution (groups, stride, dilation, padding); bias may be null.
template <class T>
void conv2d_ref(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                const WindowGeom& g);
/// Max pooling (padding never wins).
template <class T>
void max_pool2d_ref(const Tensor& x, Tensor& y, const WindowGeom& g);
/// Average pooling; count_include_pad counts padded positions in the divisor.
template <class T>
void avg_pool2d_ref(const Tensor& x, Tensor& y, const WindowGeom& g, bool count_include_pad);
/// PyTorch-style adaptive average pooling over the last two dims of x viewed as (planes, H, W).
template <class T>
void adaptive_avg_pool2d_ref(const Tensor& x, Tensor& y, int64_t planes, int64_t h, int64_t w,
                             int64_t oh, int64_t ow);
/// Softmax (or log-softmax) over the middle dim of x viewed as (outer, len, inner).
template <class T>
void softmax_ref(const Tensor& x, Tensor& y, int64_t outer, int64_t len, int64_t inner, bool log);
/// The softmax gradient over the middle dim of (outer, len, inner): dx = y * (dy - sum(dy * y)),
/// one pass over each row (the bprop's mul, sum, sub and mul in one kernel).
template <class T>
void softmax_grad_ref(const Tensor& y, const Tensor& dy, Tensor& dx, int64_t outer, int64_t len,
                      int64_t inner);
/// Layer norm over rows of x viewed as (outer, inner); gamma/beta index = flat index % their size.
template <class T>
void layer_norm_ref(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                    Tensor& mean, Tensor& rstd, int64_t outer, int64_t inner, double eps);
/// Batch norm over x viewed as (N, C, spatial). Training normalizes with batch statistics and
/// updates running mean/var in place (unbiased variance); outputs saved mean and 1/sqrt(var+eps).
void batch_norm_ref(const Tensor& x, const Tensor& scale, const Tensor& bias, Tensor& running_mean,
                    Tensor& running_var, Tensor& y, Tensor& saved_mean, Tensor& saved_invstd,
                    int64_t n, int64_t c, int64_t spatial, bool training, double eps,
                    double momentum);

}  // namespace mycel::cpu
