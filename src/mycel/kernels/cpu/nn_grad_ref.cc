#include "mycel/kernels/cpu/nn_grad_ref.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "mycel/core/parallel.h"

namespace mycel::cpu {
namespace {

int64_t capped(int64_t cost) {
  return std::min<int64_t>(std::max<int64_t>(cost, 1), kParallelGrain);
}

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(t.numel());
  convert_elements(t.data(), t.dtype(), v.data(), DType::float64, t.numel());
  return v;
}

void from_doubles(const std::vector<double>& v, Tensor& t) {
  convert_elements(v.data(), DType::float64, t.data(), t.dtype(), t.numel());
}

// Runs fn(plane, acc) for each of `planes` planes of `size` elements with a zeroed double
// accumulator, then stores acc into out's plane (so each thread owns the planes it writes).
template <class T, class Fn>
void accumulate_planes(Tensor& out, int64_t planes, int64_t size, int64_t cost, Fn fn) {
  T* O = out.data<T>();
  parallel_for(planes, capped(cost), [&](int64_t s, int64_t e) {
    std::vector<double> acc(size);
    for (int64_t p = s; p < e; ++p) {
      std::fill(acc.begin(), acc.end(), 0.0);
      fn(p, acc.data());
      for (int64_t i = 0; i < size; ++i) O[p * size + i] = static_cast<T>(acc[i]);
    }
  });
}

}  // namespace

template <class T>
void conv2d_backprop_input_ref(const Tensor& dy, const Tensor& w, Tensor& dx, const WindowGeom& g) {
  const int64_t icg = g.c / g.groups, ocg = g.oc / g.groups, H = g.h, W = g.w;
  const T* DY = dy.data<T>();
  const T* Wt = w.data<T>();
  const int64_t cost = ocg * g.oh * g.ow * g.kh * g.kw;
  accumulate_planes<T>(dx, g.n * g.c, H * W, cost, [&](int64_t p, double* acc) {
    const int64_t n = p / g.c, c = p % g.c, grp = c / icg, ic = c % icg;
    for (int64_t o = grp * ocg; o < (grp + 1) * ocg; ++o) {
      const T* wp = Wt + (o * icg + ic) * g.kh * g.kw;
      const T* dyp = DY + (n * g.oc + o) * g.oh * g.ow;
      for (int64_t oh = 0; oh < g.oh; ++oh)
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const double v = double(dyp[oh * g.ow + ow]);
          for (int64_t i = 0; i < g.kh; ++i) {
            const int64_t ih = oh * g.sh - g.pt + i * g.dh;
            if (ih < 0 || ih >= H) continue;
            for (int64_t j = 0; j < g.kw; ++j) {
              const int64_t iw = ow * g.sw - g.pl + j * g.dw;
              if (iw >= 0 && iw < W) acc[ih * W + iw] += v * double(wp[i * g.kw + j]);
            }
          }
        }
    }
  });
}

template <class T>
void conv2d_backprop_filter_ref(const Tensor& dy, const Tensor& x, Tensor& dw,
                                const WindowGeom& g) {
  const int64_t icg = g.c / g.groups, ocg = g.oc / g.groups, H = g.h, W = g.w;
  const T* DY = dy.data<T>();
  const T* X = x.data<T>();
  const int64_t cost = g.n * g.oh * g.ow * g.kh * g.kw;
  accumulate_planes<T>(dw, g.oc * icg, g.kh * g.kw, cost, [&](int64_t p, double* acc) {
    const int64_t o = p / icg, ic = p % icg, c = (o / ocg) * icg + ic;
    for (int64_t n = 0; n < g.n; ++n) {
      const T* xp = X + (n * g.c + c) * H * W;
      const T* dyp = DY + (n * g.oc + o) * g.oh * g.ow;
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          double s = 0;
          for (int64_t oh = 0; oh < g.oh; ++oh) {
            const int64_t ih = oh * g.sh - g.pt + i * g.dh;
            if (ih < 0 || ih >= H) continue;
            for (int64_t ow = 0; ow < g.ow; ++ow) {
              const int64_t iw = ow * g.sw - g.pl + j * g.dw;
              if (iw >= 0 && iw < W) s += double(dyp[oh * g.ow + ow]) * double(xp[ih * W + iw]);
            }
          }
          acc[i * g.kw + j] += s;
        }
    }
  });
}

// Calls fn(h0, h1, w0, w1, hs, ws, dy) for each output position of plane p: the window clipped to
// the input, its unclipped start, and the output's sensitivity.
template <class T, class Fn>
void for_each_output(const T* dyp, const WindowGeom& g, Fn fn) {
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    const int64_t hs = oh * g.sh - g.pt, h0 = std::max<int64_t>(hs, 0),
                  h1 = std::min<int64_t>(hs + g.kh, g.h);
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      const int64_t ws = ow * g.sw - g.pl, w0 = std::max<int64_t>(ws, 0),
                    w1 = std::min<int64_t>(ws + g.kw, g.w);
      fn(h0, h1, w0, w1, hs, ws, double(dyp[oh * g.ow + ow]));
    }
  }
}

template <class T>
void max_pool2d_grad_ref(const Tensor& x, const Tensor& dy, Tensor& dx, const WindowGeom& g) {
  const T* X = x.data<T>();
  const T* DY = dy.data<T>();
  const int64_t W = g.w;
  accumulate_planes<T>(
      dx, g.n * g.c, g.h * g.w, g.oh * g.ow * g.kh * g.kw, [&](int64_t p, double* acc) {
        const T* xp = X + p * g.h * g.w;
        for_each_output(
            DY + p * g.oh * g.ow, g,
            [&](int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t, int64_t, double d) {
              int64_t best = -1;
              double m = 0;
              for (int64_t h = h0; h < h1 && !std::isnan(m); ++h)
                for (int64_t w = w0; w < w1; ++w) {
                  const double v = double(xp[h * W + w]);
                  if (best < 0 || v > m || std::isnan(v)) {
                    m = v, best = h * W + w;
                    if (std::isnan(v)) break;
                  }
                }
              if (best >= 0) acc[best] += d;
            });
      });
}

template <class T>
void avg_pool2d_grad_ref(const Tensor& dy, Tensor& dx, const WindowGeom& g,
                         bool count_include_pad) {
  const T* DY = dy.data<T>();
  const int64_t W = g.w;
  accumulate_planes<T>(
      dx, g.n * g.c, g.h * g.w, g.oh * g.ow * g.kh * g.kw, [&](int64_t p, double* acc) {
        for_each_output(
            DY + p * g.oh * g.ow, g,
            [&](int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t hs, int64_t ws, double d) {
              int64_t count = (h1 - h0) * (w1 - w0);
              if (count_include_pad)  // the window clipped to the padded input, as the forward
                                      // divides
                count = (std::min(hs + g.kh, g.h + g.pb) - std::max(hs, -g.pt)) *
                        (std::min(ws + g.kw, g.w + g.pr) - std::max(ws, -g.pl));
              if (count <= 0) return;
              const double share = d / double(count);
              for (int64_t h = h0; h < h1; ++h)
                for (int64_t w = w0; w < w1; ++w) acc[h * W + w] += share;
            });
      });
}

void batch_norm_grad_ref(const Tensor& dy, const Tensor& x, const Tensor& scale, const Tensor& mean,
                         const Tensor& invstd, const Tensor& dmean, const Tensor& dinvstd,
                         Tensor& dx, Tensor& dscale, Tensor& dbias, int64_t n, int64_t c,
                         int64_t spatial, bool training) {
  const std::vector<double> gamma = to_doubles(scale), mu = to_doubles(mean),
                            inv = to_doubles(invstd), dmu = to_doubles(dmean),
                            dinv = to_doubles(dinvstd);
  std::vector<double> dg(c), db(c);
  const int64_t count = n * spatial;
  visit_float_dtype(x.dtype(), "batch_norm_grad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* X = x.data<T>();
    const T* DY = dy.data<T>();
    T* DX = dx.data<T>();
    parallel_for(c, capped(count * 6), [&](int64_t s, int64_t e) {
      for (int64_t ch = s; ch < e; ++ch) {
        double sum_dy = 0, sum_dy_xhat = 0;
        for (int64_t b = 0; b < n; ++b) {
          const T* xp = X + (b * c + ch) * spatial;
          const T* dp = DY + (b * c + ch) * spatial;
          for (int64_t i = 0; i < spatial; ++i) {
            sum_dy += double(dp[i]);
            sum_dy_xhat += double(dp[i]) * (double(xp[i]) - mu[ch]);
          }
        }
        sum_dy_xhat *= inv[ch];
        db[ch] = sum_dy, dg[ch] = sum_dy_xhat;
        // dx = a * dy + b * xhat + k, per channel (k, b = 0 in inference).
        double a = gamma[ch] * inv[ch], bx = 0, k = 0;
        if (training && count > 0) {
          const double m = double(count);
          bx = -a * sum_dy_xhat / m - dinv[ch] * inv[ch] * inv[ch] / m;
          k = -a * sum_dy / m + dmu[ch] / m;
        }
        for (int64_t b = 0; b < n; ++b) {
          const T* xp = X + (b * c + ch) * spatial;
          const T* dp = DY + (b * c + ch) * spatial;
          T* out = DX + (b * c + ch) * spatial;
          for (int64_t i = 0; i < spatial; ++i) {
            const double xhat = (double(xp[i]) - mu[ch]) * inv[ch];
            out[i] = static_cast<T>(a * double(dp[i]) + bx * xhat + k);
          }
        }
      }
    });
  });
  from_doubles(dg, dscale);
  from_doubles(db, dbias);
}

template <class T>
void layer_norm_grad_ref(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dmean, const Tensor& drstd, Tensor& dx,
                         Tensor& dgamma, Tensor& dbeta, int64_t outer, int64_t inner) {
  const T* X = x.data<T>();
  const T* DY = dy.data<T>();
  const T* G = gamma.data<T>();
  const T *MU = mean.data<T>(), *RS = rstd.data<T>(), *DMU = dmean.data<T>(),
          *DRS = drstd.data<T>();
  T* DX = dx.data<T>();
  const int64_t gn = std::max<int64_t>(gamma.numel(), 1);
  // Rows split into a few chunks, each with its own dgamma/dbeta partial sums.
  const int64_t chunks = std::min<int64_t>(outer, 64);
  std::vector<std::vector<double>> pg(chunks), pb(chunks);
  parallel_for(
      chunks, capped(outer / std::max<int64_t>(chunks, 1) * inner * 8), [&](int64_t s, int64_t e) {
        for (int64_t ck = s; ck < e; ++ck) {
          std::vector<double>& sg = pg[ck];
          std::vector<double>& sb = pb[ck];
          sg.assign(gn, 0.0), sb.assign(gn, 0.0);
          const int64_t r0 = ck * outer / chunks, r1 = (ck + 1) * outer / chunks;
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t base = r * inner;
            const double mu = double(MU[r]), rs = double(RS[r]);
            double a = 0, b = 0;  // sums of dxhat and dxhat * xhat over the row
            for (int64_t i = 0; i < inner; ++i) {
              const int64_t gi = (base + i) % gn;
              const double d = double(DY[base + i]), xhat = (double(X[base + i]) - mu) * rs;
              const double dxhat = d * double(G[gi]);
              a += dxhat, b += dxhat * xhat;
              sg[gi] += d * xhat, sb[gi] += d;
            }
            const double m = double(inner);
            const double k = (double(DMU[r]) - rs * a) / m,
                         bx = -(rs * b + double(DRS[r]) * rs * rs) / m;
            for (int64_t i = 0; i < inner; ++i) {
              const int64_t gi = (base + i) % gn;
              const double xhat = (double(X[base + i]) - mu) * rs;
              DX[base + i] =
                  static_cast<T>(rs * double(DY[base + i]) * double(G[gi]) + bx * xhat + k);
            }
          }
        }
      });
  std::vector<double> sg(gn, 0.0), sb(gn, 0.0);
  for (int64_t ck = 0; ck < chunks; ++ck)
    for (int64_t j = 0; j < gn; ++j) sg[j] += pg[ck][j], sb[j] += pb[ck][j];
  if (gamma.numel() > 0) {
    from_doubles(sg, dgamma);
    from_doubles(sb, dbeta);
  }
}

#define MYCEL_NN_GRAD_FLOAT_INSTANCES(T)                                                           \
  template void max_pool2d_grad_ref<T>(const Tensor&, const Tensor&, Tensor&, const WindowGeom&);  \
  template void avg_pool2d_grad_ref<T>(const Tensor&, Tensor&, const WindowGeom&, bool);           \
  template void layer_norm_grad_ref<T>(const Tensor&, const Tensor&, const Tensor&, const Tensor&, \
                                       const Tensor&, const Tensor&, const Tensor&, Tensor&,       \
                                       Tensor&, Tensor&, int64_t, int64_t);
MYCEL_NN_GRAD_FLOAT_INSTANCES(Half)
MYCEL_NN_GRAD_FLOAT_INSTANCES(BFloat16)
MYCEL_NN_GRAD_FLOAT_INSTANCES(float)
MYCEL_NN_GRAD_FLOAT_INSTANCES(double)
#undef MYCEL_NN_GRAD_FLOAT_INSTANCES

#define MYCEL_CONV_GRAD_INSTANCES(T)                                                 \
  template void conv2d_backprop_input_ref<T>(const Tensor&, const Tensor&, Tensor&,  \
                                             const WindowGeom&);                     \
  template void conv2d_backprop_filter_ref<T>(const Tensor&, const Tensor&, Tensor&, \
                                              const WindowGeom&);
MYCEL_CONV_GRAD_INSTANCES(float)
MYCEL_CONV_GRAD_INSTANCES(double)
#undef MYCEL_CONV_GRAD_INSTANCES

}  // namespace mycel::cpu
