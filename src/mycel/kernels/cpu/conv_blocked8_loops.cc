#include "mycel/kernels/cpu/conv_blocked8_loops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "mycel/kernels/cpu/relu_clamp.h"

namespace mycel::cpu {

void blocked8_to_nhwc(const float* x, float* y, int64_t n, int64_t c, int64_t hw) {
  const int64_t cb = (c + 7) / 8;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t b = 0; b < cb; ++b) {
      const int64_t lanes = std::min<int64_t>(8, c - b * 8);
      const float* xs = x + (i * cb + b) * hw * 8;
      float* ys = y + i * hw * c + b * 8;
      if (lanes == 8) {  // a fixed size: one 32-byte move, not a call to memcpy
        for (int64_t s = 0; s < hw; ++s) std::memcpy(ys + s * c, xs + s * 8, 8 * sizeof(float));
      } else {
        for (int64_t s = 0; s < hw; ++s)
          std::memcpy(ys + s * c, xs + s * 8, static_cast<size_t>(lanes) * sizeof(float));
      }
    }
}

void nhwc_to_blocked8(const float* x, float* y, int64_t n, int64_t c, int64_t hw) {
  const int64_t cb = (c + 7) / 8;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t b = 0; b < cb; ++b) {
      const int64_t lanes = std::min<int64_t>(8, c - b * 8);
      const float* xs = x + i * hw * c + b * 8;
      float* ys = y + (i * cb + b) * hw * 8;
      if (lanes == 8) {
        for (int64_t s = 0; s < hw; ++s) std::memcpy(ys + s * 8, xs + s * c, 8 * sizeof(float));
        continue;
      }
      for (int64_t s = 0; s < hw; ++s) {
        std::memcpy(ys + s * 8, xs + s * c, static_cast<size_t>(lanes) * sizeof(float));
        std::memset(ys + s * 8 + lanes, 0, (8 - lanes) * sizeof(float));
      }
    }
}

void nhwc_to_blocked8_residual(const float* x, const float* residual, float* y, int64_t n,
                               int64_t c, int64_t hw, WinogradAct act) {
  nhwc_to_blocked8(x, y, n, c, hw);
  const int64_t len = n * ((c + 7) / 8) * hw * 8;
  const float hi = act == WinogradAct::kRelu6 ? 6.f : INFINITY;
  if (act == WinogradAct::kNone) {
    for (int64_t i = 0; i < len; ++i) y[i] = y[i] + residual[i];
  } else {
    for (int64_t i = 0; i < len; ++i) y[i] = relu_clamp(y[i] + residual[i], hi);
  }
}

}  // namespace mycel::cpu
