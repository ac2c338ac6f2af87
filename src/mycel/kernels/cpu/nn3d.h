// 3-d windowed kernels over NCDHW tensors: conv3d (forward, backward data, backward weights) and
// max/avg pooling with their backward. float32 runs on oneDNN's 3-d primitives; float64 runs the
// reference loops (also oneDNN's fallback); bfloat16 computes in float32 and rounds back.
#pragma once
#include <array>
#include <cstdint>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// A 3-d sliding window over NCDHW input; per-axis arrays are in (depth, height, width) order.
struct Window3Geom {
  int64_t n = 0, c = 0, oc = 0, groups = 1;                   // batch, input and output channels
  std::array<int64_t, 3> in{}, out{};                         // spatial sizes
  std::array<int64_t, 3> k{1, 1, 1}, s{1, 1, 1}, d{1, 1, 1};  // kernel, stride, dilation
  std::array<int64_t, 3> p0{}, p1{};                          // padding before / after
  int64_t in_volume() const { return in[0] * in[1] * in[2]; }
  int64_t out_volume() const { return out[0] * out[1] * out[2]; }
  int64_t k_volume() const { return k[0] * k[1] * k[2]; }
};

/// y = conv3d(x, w) (+ bias): x (N, C, D, H, W), w (OC, C/groups, KD, KH, KW); bias may be null.
void conv3d(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const Window3Geom& g);
/// dx of conv3d from dy and w (the transposed convolution).
void conv3d_backprop_input(const Tensor& dy, const Tensor& w, Tensor& dx, const Window3Geom& g);
/// dw of conv3d from dy and x.
void conv3d_backprop_filter(const Tensor& dy, const Tensor& x, Tensor& dw, const Window3Geom& g);
/// Max pooling (padding never wins), or average pooling (count_include_pad: padded positions
/// count in the divisor; the window is never clipped beyond the padded input).
void pool3d(const Tensor& x, Tensor& y, const Window3Geom& g, bool max, bool count_include_pad);
/// Backward of pool3d: max sends each dy to the first maximum of its window (found again from x).
void pool3d_grad(const Tensor& x, const Tensor& dy, Tensor& dx, const Window3Geom& g, bool max,
                 bool count_include_pad);

namespace detail {
/// The oneDNN versions (float32 only); false when oneDNN has no implementation here.
bool conv3d_dnnl(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                 const Window3Geom& g);
bool conv3d_bwd_dnnl(const Tensor& dy, const Tensor& other, Tensor& out, const Window3Geom& g,
                     bool weights);
bool pool3d_dnnl(const Tensor& x, Tensor& y, const Window3Geom& g, bool max,
                 bool count_include_pad);
bool pool3d_grad_dnnl(const Tensor& x, const Tensor& dy, Tensor& dx, const Window3Geom& g, bool max,
                      bool count_include_pad);
}  // namespace detail

}  // namespace mycel::cpu
