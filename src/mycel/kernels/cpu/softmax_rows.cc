#include "mycel/kernels/cpu/softmax_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mycel/kernels/cpu/vmath.h"

namespace mycel::cpu {

bool softmax_small_rows(const Tensor& x, Tensor& y, int64_t outer, int64_t len, int64_t inner,
                        bool log) {
  if (x.dtype() != DType::float32 || y.dtype() != DType::float32 || inner != 1 || len < 1 ||
      len > 64 || x.numel() > 4096)
    return false;
  const float* X = x.data<float>();
  float* Y = y.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    const float* xr = X + o * len;
    float* yr = Y + o * len;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < len; ++j) m = std::max(m, xr[j]);
    if (!std::isfinite(m)) {  // all -inf, or an inf: softmax_ref's arithmetic
      double s = 0;
      for (int64_t j = 0; j < len; ++j) s += double(std::exp(xr[j] - m));
      for (int64_t j = 0; j < len; ++j)
        yr[j] = log ? xr[j] - m - float(std::log(s)) : std::exp(xr[j] - m) * float(1.0 / s);
      continue;
    }
    for (int64_t j = 0; j < len; ++j) yr[j] = vm::vm_exp(xr[j] - m);  // vectorizes
    float s = 0;
    for (int64_t j = 0; j < len; ++j) s += yr[j];
    if (log) {
      const float lg = vm::vm_log(s);
      for (int64_t j = 0; j < len; ++j) yr[j] = xr[j] - m - lg;
    } else {
      const float inv = 1.0f / s;
      for (int64_t j = 0; j < len; ++j) yr[j] *= inv;
    }
  }
  return true;
}

}  // namespace mycel::cpu
