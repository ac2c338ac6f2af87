// The 3-d windowed kernels: reference loops (float64, and float32 where oneDNN has no
// implementation) and the dtype dispatch in front of them and of dnnl_nn3d.cc.
#include "mycel/kernels/cpu/nn3d.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "mycel/core/parallel.h"

namespace mycel::cpu {
namespace {

int64_t capped(int64_t cost) {
  return std::min<int64_t>(std::max<int64_t>(cost, 1), kParallelGrain);
}

// Input coordinate of tap t along axis a for output coordinate o (may fall in the padding).
inline int64_t tap(const Window3Geom& g, int a, int64_t o, int64_t t) {
  return o * g.s[a] - g.p0[a] + t * g.d[a];
}

// Calls fn(input_offset, tap_index) for each tap of output position (od, oh, ow) that lies inside
// the input (offsets within one D*H*W plane; tap_index in the kernel's row-major order).
template <class Fn>
inline void for_each_tap(const Window3Geom& g, int64_t od, int64_t oh, int64_t ow, Fn fn) {
  for (int64_t a = 0; a < g.k[0]; ++a) {
    const int64_t id = tap(g, 0, od, a);
    if (id < 0 || id >= g.in[0]) continue;
    for (int64_t b = 0; b < g.k[1]; ++b) {
      const int64_t ih = tap(g, 1, oh, b);
      if (ih < 0 || ih >= g.in[1]) continue;
      for (int64_t c = 0; c < g.k[2]; ++c) {
        const int64_t iw = tap(g, 2, ow, c);
        if (iw >= 0 && iw < g.in[2])
          fn((id * g.in[1] + ih) * g.in[2] + iw, (a * g.k[1] + b) * g.k[2] + c);
      }
    }
  }
}

// Calls fn(output_offset, od, oh, ow) for every output position of one plane.
template <class Fn>
inline void for_each_out(const Window3Geom& g, Fn fn) {
  for (int64_t od = 0; od < g.out[0]; ++od)
    for (int64_t oh = 0; oh < g.out[1]; ++oh)
      for (int64_t ow = 0; ow < g.out[2]; ++ow)
        fn((od * g.out[1] + oh) * g.out[2] + ow, od, oh, ow);
}

template <class T>
void conv3d_ref(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                const Window3Geom& g) {
  const int64_t icg = g.c / g.groups, ocg = g.oc / g.groups, kv = g.k_volume();
  const int64_t iv = g.in_volume(), ov = g.out_volume();
  const T *X = x.data<T>(), *W = w.data<T>(), *B = bias ? bias->data<T>() : nullptr;
  T* Y = y.data<T>();
  parallel_for(g.n * g.oc, capped(ov * icg * kv), [&](int64_t s, int64_t e) {
    for (int64_t t = s; t < e; ++t) {
      const int64_t n = t / g.oc, o = t % g.oc, grp = o / ocg;
      for_each_out(g, [&](int64_t off, int64_t od, int64_t oh, int64_t ow) {
        double acc = B ? double(B[o]) : 0.0;
        for (int64_t ic = 0; ic < icg; ++ic) {
          const T* xp = X + (n * g.c + grp * icg + ic) * iv;
          const T* wp = W + (o * icg + ic) * kv;
          for_each_tap(g, od, oh, ow,
                       [&](int64_t i, int64_t k) { acc += double(xp[i]) * double(wp[k]); });
        }
        Y[t * ov + off] = static_cast<T>(acc);
      });
    }
  });
}

// Each thread owns whole input planes (n, channel), so the scatter needs no atomics.
template <class T>
void conv3d_backprop_input_ref(const Tensor& dy, const Tensor& w, Tensor& dx,
                               const Window3Geom& g) {
  const int64_t icg = g.c / g.groups, ocg = g.oc / g.groups, kv = g.k_volume();
  const int64_t iv = g.in_volume(), ov = g.out_volume();
  const T *DY = dy.data<T>(), *W = w.data<T>();
  T* DX = dx.data<T>();
  parallel_for(g.n * g.c, capped(ov * ocg * kv), [&](int64_t s, int64_t e) {
    std::vector<double> acc(iv);
    for (int64_t t = s; t < e; ++t) {
      const int64_t n = t / g.c, ci = t % g.c, grp = ci / icg, ic = ci % icg;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t o = grp * ocg; o < (grp + 1) * ocg; ++o) {
        const T* dyp = DY + (n * g.oc + o) * ov;
        const T* wp = W + (o * icg + ic) * kv;
        for_each_out(g, [&](int64_t off, int64_t od, int64_t oh, int64_t ow) {
          const double v = double(dyp[off]);
          for_each_tap(g, od, oh, ow, [&](int64_t i, int64_t k) { acc[i] += v * double(wp[k]); });
        });
      }
      for (int64_t i = 0; i < iv; ++i) DX[t * iv + i] = static_cast<T>(acc[i]);
    }
  });
}

// Each thread owns whole filters (o, input channel of its group).
template <class T>
void conv3d_backprop_filter_ref(const Tensor& dy, const Tensor& x, Tensor& dw,
                                const Window3Geom& g) {
  const int64_t icg = g.c / g.groups, ocg = g.oc / g.groups, kv = g.k_volume();
  const int64_t iv = g.in_volume(), ov = g.out_volume();
  const T *DY = dy.data<T>(), *X = x.data<T>();
  T* DW = dw.data<T>();
  parallel_for(g.oc * icg, capped(g.n * ov * kv), [&](int64_t s, int64_t e) {
    std::vector<double> acc(kv);
    for (int64_t t = s; t < e; ++t) {
      const int64_t o = t / icg, ic = t % icg, grp = o / ocg;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t n = 0; n < g.n; ++n) {
        const T* dyp = DY + (n * g.oc + o) * ov;
        const T* xp = X + (n * g.c + grp * icg + ic) * iv;
        for_each_out(g, [&](int64_t off, int64_t od, int64_t oh, int64_t ow) {
          const double v = double(dyp[off]);
          for_each_tap(g, od, oh, ow, [&](int64_t i, int64_t k) { acc[k] += v * double(xp[i]); });
        });
      }
      for (int64_t k = 0; k < kv; ++k) DW[t * kv + k] = static_cast<T>(acc[k]);
    }
  });
}

// The average's divisor at one output position: the taps inside the input, or with
// count_include_pad those inside the padded input.
int64_t avg_divisor(const Window3Geom& g, int64_t od, int64_t oh, int64_t ow, bool include_pad) {
  const int64_t o[3] = {od, oh, ow};
  int64_t count = 1;
  for (int a = 0; a < 3; ++a) {
    const int64_t lo = include_pad ? -g.p0[a] : 0, hi = g.in[a] + (include_pad ? g.p1[a] : 0);
    const int64_t first = tap(g, a, o[a], 0);
    const int64_t b = std::max(first, lo), e = std::min(first + g.k[a], hi);
    count *= std::max<int64_t>(e - b, 0);
  }
  return count;
}

// Offset (within the plane) of the first maximum of a window, NaN winning; -1 if the window is
// all padding.
template <class T>
int64_t argmax_of(const Window3Geom& g, const T* xp, int64_t od, int64_t oh, int64_t ow) {
  int64_t best = -1;
  double bv = -std::numeric_limits<double>::infinity();
  for_each_tap(g, od, oh, ow, [&](int64_t i, int64_t) {
    const double v = double(xp[i]);
    if (best < 0 || (!std::isnan(bv) && (v > bv || std::isnan(v)))) best = i, bv = v;
  });
  return best;
}

template <class T>
void pool3d_ref(const Tensor& x, Tensor& y, const Window3Geom& g, bool max, bool include_pad) {
  const int64_t iv = g.in_volume(), ov = g.out_volume();
  const T* X = x.data<T>();
  T* Y = y.data<T>();
  parallel_for(g.n * g.c, capped(ov * g.k_volume()), [&](int64_t s, int64_t e) {
    for (int64_t t = s; t < e; ++t) {
      const T* xp = X + t * iv;
      for_each_out(g, [&](int64_t off, int64_t od, int64_t oh, int64_t ow) {
        if (max) {
          const int64_t i = argmax_of<T>(g, xp, od, oh, ow);
          Y[t * ov + off] =
              i < 0 ? static_cast<T>(-std::numeric_limits<double>::infinity()) : xp[i];
          return;
        }
        double sum = 0;
        for_each_tap(g, od, oh, ow, [&](int64_t i, int64_t) { sum += double(xp[i]); });
        const int64_t div = avg_divisor(g, od, oh, ow, include_pad);
        Y[t * ov + off] = static_cast<T>(div > 0 ? sum / double(div) : 0.0);
      });
    }
  });
}

template <class T>
void pool3d_grad_ref(const Tensor& x, const Tensor& dy, Tensor& dx, const Window3Geom& g, bool max,
                     bool include_pad) {
  const int64_t iv = g.in_volume(), ov = g.out_volume();
  const T *X = x.data<T>(), *DY = dy.data<T>();
  T* DX = dx.data<T>();
  parallel_for(g.n * g.c, capped(ov * g.k_volume()), [&](int64_t s, int64_t e) {
    std::vector<double> acc(iv);
    for (int64_t t = s; t < e; ++t) {
      const T* xp = X + t * iv;
      std::fill(acc.begin(), acc.end(), 0.0);
      for_each_out(g, [&](int64_t off, int64_t od, int64_t oh, int64_t ow) {
        const double v = double(DY[t * ov + off]);
        if (max) {
          const int64_t i = argmax_of<T>(g, xp, od, oh, ow);
          if (i >= 0) acc[i] += v;
          return;
        }
        const int64_t div = avg_divisor(g, od, oh, ow, include_pad);
        if (div > 0)
          for_each_tap(g, od, oh, ow, [&](int64_t i, int64_t) { acc[i] += v / double(div); });
      });
      for (int64_t i = 0; i < iv; ++i) DX[t * iv + i] = static_cast<T>(acc[i]);
    }
  });
}

// Runs fn on float32 copies of `ins`, writing a float32 `out`, then rounds back to out's dtype
// (bfloat16 and float16 compute in float32: oneDNN on AVX2 has no bf16 convolution).
template <class Fn>
void via_float32(std::initializer_list<const Tensor*> ins, Tensor& out, Fn fn) {
  std::vector<Tensor> conv;
  for (const Tensor* t : ins) conv.push_back(t ? t->to(DType::float32) : Tensor());
  Tensor out32 = Tensor::empty(out.shape(), DType::float32);
  fn(conv, out32);
  convert_elements(out32.data(), DType::float32, out.data(), out.dtype(), out.numel());
}

}  // namespace

void conv3d(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const Window3Geom& g) {
  if (y.numel() == 0) return;
  switch (y.dtype()) {
    case DType::float64:
      return conv3d_ref<double>(x, w, bias, y, g);
    case DType::float32:
      if (x.numel() > 0 && w.numel() > 0 && detail::conv3d_dnnl(x, w, bias, y, g)) return;
      return conv3d_ref<float>(x, w, bias, y, g);
    default:
      return via_float32({&x, &w, bias}, y, [&](std::vector<Tensor>& in, Tensor& out) {
        conv3d(in[0], in[1], bias ? &in[2] : nullptr, out, g);
      });
  }
}

void conv3d_backprop_input(const Tensor& dy, const Tensor& w, Tensor& dx, const Window3Geom& g) {
  if (dx.numel() == 0) return;
  switch (dx.dtype()) {
    case DType::float64:
      return conv3d_backprop_input_ref<double>(dy, w, dx, g);
    case DType::float32:
      if (dy.numel() > 0 && w.numel() > 0 && detail::conv3d_bwd_dnnl(dy, w, dx, g, false)) return;
      return conv3d_backprop_input_ref<float>(dy, w, dx, g);
    default:
      return via_float32({&dy, &w}, dx, [&](std::vector<Tensor>& in, Tensor& out) {
        conv3d_backprop_input(in[0], in[1], out, g);
      });
  }
}

void conv3d_backprop_filter(const Tensor& dy, const Tensor& x, Tensor& dw, const Window3Geom& g) {
  if (dw.numel() == 0) return;
  switch (dw.dtype()) {
    case DType::float64:
      return conv3d_backprop_filter_ref<double>(dy, x, dw, g);
    case DType::float32:
      if (dy.numel() > 0 && x.numel() > 0 && detail::conv3d_bwd_dnnl(dy, x, dw, g, true)) return;
      return conv3d_backprop_filter_ref<float>(dy, x, dw, g);
    default:
      return via_float32({&dy, &x}, dw, [&](std::vector<Tensor>& in, Tensor& out) {
        conv3d_backprop_filter(in[0], in[1], out, g);
      });
  }
}

void pool3d(const Tensor& x, Tensor& y, const Window3Geom& g, bool max, bool count_include_pad) {
  if (y.numel() == 0) return;
  switch (y.dtype()) {
    case DType::float64:
      return pool3d_ref<double>(x, y, g, max, count_include_pad);
    case DType::float32:
      if (detail::pool3d_dnnl(x, y, g, max, count_include_pad)) return;
      return pool3d_ref<float>(x, y, g, max, count_include_pad);
    default:
      return via_float32({&x}, y, [&](std::vector<Tensor>& in, Tensor& out) {
        pool3d(in[0], out, g, max, count_include_pad);
      });
  }
}

void pool3d_grad(const Tensor& x, const Tensor& dy, Tensor& dx, const Window3Geom& g, bool max,
                 bool count_include_pad) {
  if (dx.numel() == 0) return;
  switch (dx.dtype()) {
    case DType::float64:
      return pool3d_grad_ref<double>(x, dy, dx, g, max, count_include_pad);
    case DType::float32:
      if (detail::pool3d_grad_dnnl(x, dy, dx, g, max, count_include_pad)) return;
      return pool3d_grad_ref<float>(x, dy, dx, g, max, count_include_pad);
    default:
      return via_float32({&x, &dy}, dx, [&](std::vector<Tensor>& in, Tensor& out) {
        pool3d_grad(in[0], in[1], out, g, max, count_include_pad);
      });
  }
}

}  // namespace mycel::cpu
