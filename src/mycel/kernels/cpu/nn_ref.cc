#include "mycel/kernels/cpu/nn_ref.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>
#include <vector>

#include "mycel/core/parallel.h"

namespace mycel::cpu {
namespace {

// Elementwise math type: double for float64, float otherwise. Sums always accumulate in double.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

int64_t capped(int64_t cost) {
  return std::min<int64_t>(std::max<int64_t>(cost, 1), kParallelGrain);
}

// Element offsets of each batch matrix of an operand broadcast over `batch`.
std::vector<int64_t> batch_offsets(const Shape& batch, const Shape& operand_batch, int64_t mat) {
  const int64_t nd = static_cast<int64_t>(batch.size());
  std::vector<int64_t> stride(nd);
  for (int64_t d = nd - 1, s = mat; d >= 0; --d) {
    stride[d] = operand_batch[d] == 1 ? 0 : s;
    s *= operand_batch[d];
  }
  std::vector<int64_t> off(numel(batch));
  for (int64_t i = 0; i < static_cast<int64_t>(off.size()); ++i) {
    int64_t rem = i, o = 0;
    for (int64_t d = nd - 1; d >= 0; --d) {
      o += (rem % batch[d]) * stride[d];
      rem /= batch[d];
    }
    off[i] = o;
  }
  return off;
}

}  // namespace

template <class T>
void matmul_ref(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                const MatmulGeom& g) {
  const int64_t M = g.m, K = g.k, N = g.n, nb = g.batch_count();
  if (c.numel() == 0) return;
  const std::vector<int64_t> aoff = batch_offsets(g.batch, g.a_batch, M * K);
  const std::vector<int64_t> boff = batch_offsets(g.batch, g.b_batch, K * N);
  // Rows of B must be contiguous for the inner loop: transpose a transposed B once.
  const T* B = b.data<T>();
  std::vector<T> bt;
  if (g.trans_b) {
    bt.resize(b.numel());
    const int64_t mats = b.numel() / std::max<int64_t>(K * N, 1);
    parallel_for(mats * N, K, [&](int64_t s, int64_t e) {
      for (int64_t t = s; t < e; ++t) {
        const int64_t mat = t / N, j = t % N;
        const T* src = B + mat * K * N + j * K;  // row j of the stored (N, K) matrix
        T* dst = bt.data() + mat * K * N + j;
        for (int64_t k = 0; k < K; ++k) dst[k * N] = src[k];
      }
    });
    B = bt.data();
  }
  const T* A = a.data<T>();
  const T* bias_p = bias ? bias->data<T>() : nullptr;
  T* C = c.data<T>();
  constexpr int64_t MB = 32, KB = 128, NB = 512;
  const int64_t mblocks = (M + MB - 1) / MB;
  parallel_for(nb * mblocks, capped(MB * K * N), [&](int64_t s, int64_t e) {
    for (int64_t t = s; t < e; ++t) {
      const int64_t bi = t / mblocks, i0 = (t % mblocks) * MB, i1 = std::min(M, i0 + MB);
      const T* Am = A + aoff[bi];
      const T* Bm = B + boff[bi];
      T* Cm = C + bi * M * N;
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = 0; j < N; ++j) Cm[i * N + j] = bias_p ? bias_p[j] : T(0);
      for (int64_t j0 = 0; j0 < N; j0 += NB) {
        const int64_t j1 = std::min(N, j0 + NB);
        for (int64_t k0 = 0; k0 < K; k0 += KB) {
          const int64_t k1 = std::min(K, k0 + KB);
          for (int64_t i = i0; i < i1; ++i) {
            T* row = Cm + i * N;
            for (int64_t k = k0; k < k1; ++k) {
              const T aik = g.trans_a ? Am[k * M + i] : Am[i * K + k];
              const T* brow = Bm + k * N;
              for (int64_t j = j0; j < j1; ++j) row[j] += aik * brow[j];
            }
          }
        }
      }
    }
  });
}

template <class T>
void conv2d_ref(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                const WindowGeom& g) {
  using A = acc_t<T>;
  const int64_t icg = g.c / g.groups, ocg = g.oc / g.groups, H = g.h, W = g.w;
  const T* X = x.data<T>();
  const T* Wt = w.data<T>();
  const T* Bs = bias ? bias->data<T>() : nullptr;
  T* Y = y.data<T>();
  parallel_for(g.n * g.oc, capped(g.oh * g.ow * icg * g.kh * g.kw), [&](int64_t s, int64_t e) {
    for (int64_t t = s; t < e; ++t) {
      const int64_t n = t / g.oc, o = t % g.oc, grp = o / ocg;
      const T* wo = Wt + o * icg * g.kh * g.kw;
      T* yo = Y + t * g.oh * g.ow;
      for (int64_t oh = 0; oh < g.oh; ++oh)
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          A acc = Bs ? A(Bs[o]) : A(0);
          for (int64_t ic = 0; ic < icg; ++ic) {
            const T* xp = X + (n * g.c + grp * icg + ic) * H * W;
            const T* wp = wo + ic * g.kh * g.kw;
            for (int64_t i = 0; i < g.kh; ++i) {
              const int64_t ih = oh * g.sh - g.pt + i * g.dh;
              if (ih < 0 || ih >= H) continue;
              for (int64_t j = 0; j < g.kw; ++j) {
                const int64_t iw = ow * g.sw - g.pl + j * g.dw;
                if (iw >= 0 && iw < W) acc += A(xp[ih * W + iw]) * A(wp[i * g.kw + j]);
              }
            }
          }
          yo[oh * g.ow + ow] = static_cast<T>(acc);
        }
    }
  });
}

// Runs fn(plane_in, plane_out, h0, h1, w0, w1, oh, ow) for every output position, where [h0, h1) x
// [w0, w1) is the window clipped to the input.
template <class T, class Fn>
void for_each_window(const Tensor& x, Tensor& y, const WindowGeom& g, Fn fn) {
  const T* X = x.data<T>();
  T* Y = y.data<T>();
  parallel_for(g.n * g.c, capped(g.oh * g.ow * g.kh * g.kw), [&](int64_t s, int64_t e) {
    for (int64_t p = s; p < e; ++p) {
      const T* xp = X + p * g.h * g.w;
      T* yp = Y + p * g.oh * g.ow;
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const int64_t hs = oh * g.sh - g.pt, h0 = std::max<int64_t>(hs, 0),
                      h1 = std::min<int64_t>(hs + g.kh, g.h);
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const int64_t ws = ow * g.sw - g.pl, w0 = std::max<int64_t>(ws, 0),
                        w1 = std::min<int64_t>(ws + g.kw, g.w);
          yp[oh * g.ow + ow] = static_cast<T>(fn(xp, h0, h1, w0, w1, hs, ws));
        }
      }
    }
  });
}

template <class T>
void max_pool2d_ref(const Tensor& x, Tensor& y, const WindowGeom& g) {
  using A = acc_t<T>;
  const int64_t W = g.w;
  for_each_window<T>(
      x, y, g, [&](const T* xp, int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t, int64_t) {
        A m = -std::numeric_limits<A>::infinity();
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) {
            const A v = A(xp[h * W + w]);
            if (v > m || std::isnan(v)) m = v;
            if (std::isnan(m)) return m;
          }
        return m;
      });
}

template <class T>
void avg_pool2d_ref(const Tensor& x, Tensor& y, const WindowGeom& g, bool count_include_pad) {
  using A = acc_t<T>;
  const int64_t W = g.w;
  for_each_window<T>(
      x, y, g,
      [&](const T* xp, int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t hs, int64_t ws) {
        double sum = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) sum += double(A(xp[h * W + w]));
        int64_t count = (h1 - h0) * (w1 - w0);
        if (count_include_pad)  // the window clipped to the padded input
          count = (std::min(hs + g.kh, g.h + g.pb) - std::max(hs, -g.pt)) *
                  (std::min(ws + g.kw, g.w + g.pr) - std::max(ws, -g.pl));
        return count > 0 ? A(sum / double(count)) : A(0);
      });
}

template <class T>
void adaptive_avg_pool2d_ref(const Tensor& x, Tensor& y, int64_t planes, int64_t h, int64_t w,
                             int64_t oh, int64_t ow) {
  using A = acc_t<T>;
  const T* X = x.data<T>();
  T* Y = y.data<T>();
  parallel_for(planes, capped(h * w), [&](int64_t s, int64_t e) {
    for (int64_t p = s; p < e; ++p) {
      const T* xp = X + p * h * w;
      T* yp = Y + p * oh * ow;
      for (int64_t i = 0; i < oh; ++i) {
        const int64_t h0 = i * h / oh, h1 = ((i + 1) * h + oh - 1) / oh;
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t w0 = j * w / ow, w1 = ((j + 1) * w + ow - 1) / ow;
          double sum = 0;
          for (int64_t a = h0; a < h1; ++a)
            for (int64_t b = w0; b < w1; ++b) sum += double(A(xp[a * w + b]));
          yp[i * ow + j] = static_cast<T>(A(sum / double((h1 - h0) * (w1 - w0))));
        }
      }
    }
  });
}

template <class T>
void softmax_ref(const Tensor& x, Tensor& y, int64_t outer, int64_t len, int64_t inner, bool log) {
  using A = acc_t<T>;
  const T* X = x.data<T>();
  T* Y = y.data<T>();
  parallel_for(outer * inner, capped(len * 4), [&](int64_t s, int64_t e) {
    for (int64_t t = s; t < e; ++t) {
      const int64_t o = t / inner, in = t % inner;
      const T* xp = X + o * len * inner + in;
      T* yp = Y + o * len * inner + in;
      A m = -std::numeric_limits<A>::infinity();
      for (int64_t l = 0; l < len; ++l) m = std::max(m, A(xp[l * inner]));
      double sum = 0;
      for (int64_t l = 0; l < len; ++l) sum += double(std::exp(A(xp[l * inner]) - m));
      if (log) {
        const A lse = A(std::log(sum));
        for (int64_t l = 0; l < len; ++l)
          yp[l * inner] = static_cast<T>(A(xp[l * inner]) - m - lse);
      } else {
        const A inv = A(1.0 / sum);
        for (int64_t l = 0; l < len; ++l)
          yp[l * inner] = static_cast<T>(std::exp(A(xp[l * inner]) - m) * inv);
      }
    }
  });
}

template <class T>
void softmax_grad_ref(const Tensor& y, const Tensor& dy, Tensor& dx, int64_t outer, int64_t len,
                      int64_t inner) {
  using A = acc_t<T>;
  const T* Y = y.data<T>();
  const T* D = dy.data<T>();
  T* X = dx.data<T>();
  constexpr int kLanes = 8;  // independent partial sums: the row's sum vectorizes
  parallel_for(outer * inner, capped(len * 3), [&](int64_t s, int64_t e) {
    for (int64_t t = s; t < e; ++t) {
      const int64_t base = t / inner * len * inner + t % inner;
      const T* yp = Y + base;
      const T* dp = D + base;
      T* xp = X + base;
      A part[kLanes] = {};
      int64_t l = 0;
      if (inner == 1)
        for (; l + kLanes <= len; l += kLanes)
          for (int k = 0; k < kLanes; ++k) part[k] += A(yp[l + k]) * A(dp[l + k]);
      for (; l < len; ++l) part[0] += A(yp[l * inner]) * A(dp[l * inner]);
      A sum = 0;
      for (int k = 0; k < kLanes; ++k) sum += part[k];
      for (l = 0; l < len; ++l)
        xp[l * inner] = static_cast<T>(A(yp[l * inner]) * (A(dp[l * inner]) - sum));
    }
  });
}

template <class T>
void layer_norm_ref(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                    Tensor& mean, Tensor& rstd, int64_t outer, int64_t inner, double eps) {
  using A = acc_t<T>;
  const T* X = x.data<T>();
  const T* G = gamma.data<T>();
  const T* Bt = beta.data<T>();
  T* Y = y.data<T>();
  const int64_t gn = std::max<int64_t>(gamma.numel(), 1);
  parallel_for(outer, capped(inner * 4), [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      const T* xr = X + r * inner;
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < inner; ++i) sum += double(A(xr[i]));
      const double mu = inner > 0 ? sum / double(inner) : 0.0;
      for (int64_t i = 0; i < inner; ++i) {
        const double d = double(A(xr[i])) - mu;
        sq += d * d;
      }
      const double rs = 1.0 / std::sqrt((inner > 0 ? sq / double(inner) : 0.0) + eps);
      mean.data<T>()[r] = static_cast<T>(A(mu));
      rstd.data<T>()[r] = static_cast<T>(A(rs));
      const int64_t base = r * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t gi = (base + i) % gn;
        Y[base + i] = static_cast<T>(A((double(A(xr[i])) - mu) * rs) * A(G[gi]) + A(Bt[gi]));
      }
    }
  });
}

namespace {
std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(t.numel());
  convert_elements(t.data(), t.dtype(), v.data(), DType::float64, t.numel());
  return v;
}
void from_doubles(const std::vector<double>& v, Tensor& t) {
  convert_elements(v.data(), DType::float64, t.data(), t.dtype(), t.numel());
}
}  // namespace

void batch_norm_ref(const Tensor& x, const Tensor& scale, const Tensor& bias, Tensor& running_mean,
                    Tensor& running_var, Tensor& y, Tensor& saved_mean, Tensor& saved_invstd,
                    int64_t n, int64_t c, int64_t spatial, bool training, double eps,
                    double momentum) {
  const std::vector<double> gamma = to_doubles(scale), beta = to_doubles(bias);
  std::vector<double> rmean = to_doubles(running_mean), rvar = to_doubles(running_var);
  std::vector<double> mean(c), invstd(c);
  visit_float_dtype(x.dtype(), "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* X = x.data<T>();
    T* Y = y.data<T>();
    const int64_t count = n * spatial;
    parallel_for(c, capped(count * 4), [&](int64_t s, int64_t e) {
      for (int64_t ch = s; ch < e; ++ch) {
        double mu = rmean[ch], var = rvar[ch];
        if (training) {
          double sum = 0, sq = 0;
          for (int64_t b = 0; b < n; ++b) {
            const T* p = X + (b * c + ch) * spatial;
            for (int64_t i = 0; i < spatial; ++i) sum += double(p[i]);
          }
          mu = sum / double(count);
          for (int64_t b = 0; b < n; ++b) {
            const T* p = X + (b * c + ch) * spatial;
            for (int64_t i = 0; i < spatial; ++i) sq += (double(p[i]) - mu) * (double(p[i]) - mu);
          }
          var = sq / double(count);
          rmean[ch] = (1 - momentum) * rmean[ch] + momentum * mu;
          rvar[ch] = (1 - momentum) * rvar[ch] + momentum * sq / double(count - 1);
        }
        mean[ch] = mu;
        invstd[ch] = 1.0 / std::sqrt(var + eps);
        const double a = gamma[ch] * invstd[ch], b0 = beta[ch] - mu * a;
        for (int64_t b = 0; b < n; ++b) {
          const T* p = X + (b * c + ch) * spatial;
          T* q = Y + (b * c + ch) * spatial;
          for (int64_t i = 0; i < spatial; ++i) q[i] = static_cast<T>(double(p[i]) * a + b0);
        }
      }
    });
  });
  from_doubles(mean, saved_mean);
  from_doubles(invstd, saved_invstd);
  if (training) {
    from_doubles(rmean, running_mean);
    from_doubles(rvar, running_var);
  }
}

#define MYCEL_NN_FLOAT_INSTANCES(T)                                                              \
  template void max_pool2d_ref<T>(const Tensor&, Tensor&, const WindowGeom&);                    \
  template void avg_pool2d_ref<T>(const Tensor&, Tensor&, const WindowGeom&, bool);              \
  template void adaptive_avg_pool2d_ref<T>(const Tensor&, Tensor&, int64_t, int64_t, int64_t,    \
                                           int64_t, int64_t);                                    \
  template void softmax_ref<T>(const Tensor&, Tensor&, int64_t, int64_t, int64_t, bool);         \
  template void softmax_grad_ref<T>(const Tensor&, const Tensor&, Tensor&, int64_t, int64_t,     \
                                    int64_t);                                                    \
  template void layer_norm_ref<T>(const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&, \
                                  Tensor&, int64_t, int64_t, double);                            \
  template void conv2d_ref<T>(const Tensor&, const Tensor&, const Tensor*, Tensor&,              \
                              const WindowGeom&);
MYCEL_NN_FLOAT_INSTANCES(Half)
MYCEL_NN_FLOAT_INSTANCES(BFloat16)
MYCEL_NN_FLOAT_INSTANCES(float)
MYCEL_NN_FLOAT_INSTANCES(double)
#undef MYCEL_NN_FLOAT_INSTANCES

#define MYCEL_MATMUL_INSTANCE(T)                                                    \
  template void matmul_ref<T>(const Tensor&, const Tensor&, const Tensor*, Tensor&, \
                              const MatmulGeom&);
MYCEL_MATMUL_INSTANCE(float)
MYCEL_MATMUL_INSTANCE(double)
MYCEL_MATMUL_INSTANCE(int8_t)
MYCEL_MATMUL_INSTANCE(uint8_t)
MYCEL_MATMUL_INSTANCE(int16_t)
MYCEL_MATMUL_INSTANCE(int32_t)
MYCEL_MATMUL_INSTANCE(int64_t)
MYCEL_MATMUL_INSTANCE(uint16_t)
MYCEL_MATMUL_INSTANCE(uint32_t)
MYCEL_MATMUL_INSTANCE(uint64_t)
MYCEL_MATMUL_INSTANCE(std::complex<float>)
MYCEL_MATMUL_INSTANCE(std::complex<double>)
#undef MYCEL_MATMUL_INSTANCE

}  // namespace mycel::cpu
