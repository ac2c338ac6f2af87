// int8 inference kernels: quantize / dequantize, and convolution and dense over uint8 activations
// and int8 per-output-channel weights with int32 accumulation (oneDNN's int8 primitives, or the
// exact reference loops where oneDNN could not be exact: see int8_weights_safe).
//
// The arithmetic every path implements (q: stored integers, zp: zero points):
//   acc[o]  = sum (x_q - x_zp) * w_q[o]                      (int32, exact)
//   y_f[o]  = acc[o] * x_scale * w_scale[o] + b[o]           (float32), then relu or relu6
//   y       = y_f                       when the output is float32
//   y       = clamp(round(y_f / y_scale) + y_zp, 0, 255)     when it is uint8 (ties to even)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/nn_geom.h"

namespace mycel::cpu {

/// Quantization parameters of one qconv2d / qdense call.
struct QuantSpec {
  float x_scale = 1;
  int32_t x_zp = 0;
  std::vector<float> w_scale;  // one per output channel
  float y_scale = 1;           // uint8 output only
  int32_t y_zp = 0;
  bool relu = false;
  bool relu6 = false;  // clip to [0, 6] (MobileNetV2's activation); sets relu too
};

/// y = clamp(round(x / scale) + zp) into y's dtype (uint8 or int8); x float32.
void quantize_linear(const Tensor& x, Tensor& y, float scale, int32_t zp);
/// y = (x - zp) * scale; x uint8 or int8, y float32.
void dequantize_linear(const Tensor& x, Tensor& y, float scale, int32_t zp);

/// Whether the CPU multiplies u8 x s8 exactly (VNNI: vpdpbusd). Without it oneDNN's AVX2/AVX-512
/// kernels add pairs of u8*s8 products in int16 with saturation (vpmaddubsw), and oneDNN leaves
/// it to the user to keep weights in [-64, 63] ("s7") so no pair can saturate.
bool cpu_has_vnni();
/// True when oneDNN's u8 x s8 kernels are exact for these int8 weights on this CPU.
bool int8_weights_safe(const Tensor& w);

/// Which implementation a qconv2d / qdense call ran (the kernels report it through their `path`
/// argument when one is given; tests read it).
struct Int8Path {
  // kRows: dense over <= 4 rows; kSmall: a small convolution; kDirect: a one-input-channel
  // convolution over rows of pixels (LeNet5's first layer); all exact int16-pair loops
  enum class Kind { kNone, kOneDnn, kRows, kSmall, kDirect, kReference } kind = Kind::kNone;
  std::string impl;  // kOneDnn: oneDNN's implementation name
  /// "onednn:<impl>", "rows", "small", "direct", "reference" (or "none").
  std::string name() const;
};

/// Where qconv2d's activations are stored: NCHW, or NHWC (channels last: oneDNN's int8
/// convolutions read and write it on AVX2 and AVX-512, so uint8 activations kept so between int8
/// convolutions need no reorder; the lite runtime's layout step chooses it).
struct Int8Layout {
  bool src_nhwc = false;
  bool dst_nhwc = false;
};

/// y := x (both of logical shape (N, C, H, W), 1- or 4-byte elements) moved from NHWC storage to
/// NCHW, or the reverse with `to_nhwc`.
void relayout_nhwc(const Tensor& x, Tensor& y, bool to_nhwc);

/// Quantized convolution, NCHW uint8 x, int8 w (OC, C/groups, KH, KW), float32 bias; y float32
/// or uint8 (NCHW). `const_weights`: w never changes while its buffer lives (the lite runtime's
/// constants), so its reorder to the primitive's layout is kept. `path`, when given, is set to the
/// implementation that ran.
void qconv2d(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const WindowGeom& g,
             const QuantSpec& q, bool const_weights, Int8Path* path = nullptr,
             Int8Layout layout = {});
/// Quantized dense: uint8 x (M, K), int8 w (N, K), float32 bias (N); y (M, N) float32 or uint8.
void qdense(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int64_t m, int64_t k,
            int64_t n, const QuantSpec& q, bool const_weights, Int8Path* path = nullptr);
/// The exact reference loops (always int32, no oneDNN): the fallback and the tests' reference.
void qconv2d_ref(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                 const WindowGeom& g, const QuantSpec& q);
void qdense_ref(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int64_t m,
                int64_t k, int64_t n, const QuantSpec& q);
/// Quantization parameters of one qadd call (an input's scale and zero point apply when it is
/// uint8; a float32 input is taken as it is).
struct QAddSpec {
  float a_scale = 1, b_scale = 1, y_scale = 1;
  int32_t a_zp = 0, b_zp = 0, y_zp = 0;
  bool relu = false;
};

/// Quantized add (a residual block's): y = clamp(round(act(a_f + b_f) / y_scale) + y_zp, 0, 255)
/// with a_f = (a - a_zp) * a_scale for uint8 a (float32 a as it is), likewise b; act: relu or
/// none. Elementwise over y.numel() elements: a, b and y in any one layout (NCHW or NHWC alike).
/// The same float operations as dequantize_linear, add, relu and quantize_linear in a row.
void qadd(const Tensor& a, const Tensor& b, Tensor& y, const QAddSpec& q);

/// Quantization parameters of one qavg_pool2d call.
struct QPoolSpec {
  float x_scale = 1, y_scale = 1;
  int32_t x_zp = 0, y_zp = 0;
  bool count_include_pad = false;  // divide by kh * kw (oneDNN's include-padding average)
};

/// Average pooling of uint8 data, requantized: per window the exact int32 sum of (x - x_zp) over
/// its valid positions, avg = float(sum) * (x_scale / count), y = clamp(round(avg / y_scale) +
/// y_zp, 0, 255) (ties to even); count is the valid positions, or kh * kw with
/// count_include_pad. x and y both NCHW, or both NHWC with `nhwc`.
void qavg_pool2d(const Tensor& x, Tensor& y, const WindowGeom& g, const QPoolSpec& q, bool nhwc);

/// Max pooling of uint8 NCHW data (order-preserving, so it commutes with quantization).
void max_pool2d_u8(const Tensor& x, Tensor& y, const WindowGeom& g);

}  // namespace mycel::cpu
