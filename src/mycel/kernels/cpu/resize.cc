#include "mycel/kernels/cpu/resize.h"

#include <algorithm>
#include <cmath>

#include "mycel/core/parallel.h"

namespace mycel::cpu {

double source_coord(int64_t i, int64_t in_size, int64_t out_size, CoordMode mode) {
  switch (mode) {
    case CoordMode::kAlignCorners:
      return out_size > 1 ? static_cast<double>(i) * (in_size - 1) / (out_size - 1) : 0.0;
    case CoordMode::kHalfPixel:
      return std::max(0.0, (i + 0.5) * in_size / out_size - 0.5);
    case CoordMode::kAsymmetric:
      break;
  }
  return static_cast<double>(i) * in_size / out_size;
}

namespace {
// Per output index along one axis: the two source indices and the weight of the second.
struct Lerp {
  std::vector<int64_t> lo, hi;
  std::vector<float> w;
};

Lerp lerp_table(int64_t in, int64_t out, CoordMode mode) {
  Lerp t{std::vector<int64_t>(out), std::vector<int64_t>(out), std::vector<float>(out)};
  for (int64_t i = 0; i < out; ++i) {
    double s = source_coord(i, in, out, mode);
    int64_t l = std::min<int64_t>(static_cast<int64_t>(std::floor(s)), in - 1);
    t.lo[i] = l;
    t.hi[i] = std::min(l + 1, in - 1);
    t.w[i] = static_cast<float>(s - l);
  }
  return t;
}
}  // namespace

void resize_bilinear(const Tensor& x, Tensor& out, CoordMode mode) {
  const Shape& s = x.shape();
  const int64_t nc = s[0] * s[1], h = s[2], w = s[3];
  const int64_t oh = out.shape()[2], ow = out.shape()[3];
  if (out.numel() == 0) return;
  Lerp th = lerp_table(h, oh, mode), tw = lerp_table(w, ow, mode);
  visit_float_dtype(x.dtype(), "resize_bilinear", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    parallel_for(nc * oh, ow * 4, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t plane = r / oh, i = r % oh;
        const T* p0 = src + (plane * h + th.lo[i]) * w;
        const T* p1 = src + (plane * h + th.hi[i]) * w;
        const C wy = static_cast<C>(th.w[i]);
        T* y = dst + r * ow;
        for (int64_t j = 0; j < ow; ++j) {
          const C wx = static_cast<C>(tw.w[j]);
          const int64_t a = tw.lo[j], c = tw.hi[j];
          C top = C(p0[a]) + (C(p0[c]) - C(p0[a])) * wx;
          C bot = C(p1[a]) + (C(p1[c]) - C(p1[a])) * wx;
          y[j] = static_cast<T>(top + (bot - top) * wy);
        }
      }
    });
  });
}

void resize_bilinear_backward(const Tensor& dy, Tensor& dx, CoordMode mode) {
  const Shape& s = dx.shape();
  const int64_t nc = s[0] * s[1], h = s[2], w = s[3];
  const int64_t oh = dy.shape()[2], ow = dy.shape()[3];
  visit_float_dtype(dx.dtype(), "resize_bilinear_grad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    T* dst = dx.data<T>();
    std::fill(dst, dst + dx.numel(), T(0));
    if (dy.numel() == 0 || dx.numel() == 0) return;
    Lerp th = lerp_table(h, oh, mode), tw = lerp_table(w, ow, mode);
    const T* src = dy.data<T>();
    // One plane per task: the four corners an output reads lie in its own plane.
    parallel_for(nc, oh * ow * 4, [&](int64_t b, int64_t e) {
      std::vector<C> acc(static_cast<size_t>(h * w));
      for (int64_t plane = b; plane < e; ++plane) {
        std::fill(acc.begin(), acc.end(), C(0));
        for (int64_t i = 0; i < oh; ++i) {
          const C wy = static_cast<C>(th.w[i]);
          C* r0 = acc.data() + th.lo[i] * w;
          C* r1 = acc.data() + th.hi[i] * w;
          const T* g = src + (plane * oh + i) * ow;
          for (int64_t j = 0; j < ow; ++j) {
            const C wx = static_cast<C>(tw.w[j]), v = C(g[j]);
            const int64_t a = tw.lo[j], c = tw.hi[j];
            r0[a] += v * (C(1) - wy) * (C(1) - wx);
            r0[c] += v * (C(1) - wy) * wx;
            r1[a] += v * wy * (C(1) - wx);
            r1[c] += v * wy * wx;
          }
        }
        T* out = dst + plane * h * w;
        for (int64_t k = 0; k < h * w; ++k) out[k] = static_cast<T>(acc[k]);
      }
    });
  });
}

}  // namespace mycel::cpu
