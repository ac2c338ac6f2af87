#include "mycel/kernels/cpu/norm_fast.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "mycel/core/dtype.h"
#include "mycel/core/half.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/bf16_round_row.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"
#include "mycel/kernels/cpu/layer_norm_grad_row_bf16.h"
#include "mycel/kernels/cpu/layer_norm_rows.h"

namespace mycel::cpu {
namespace {

constexpr int kLanes = 8;  // one AVX2 register of floats: the compiler keeps each lane array in one
constexpr int kFloatRows = 16;  // rows summed in float before their double sum (layer norm grad)

// Sum of f(i) over [0, n) in kLanes float lanes, returned in double (lanes added last).
template <class F>
double lane_sum(int64_t n, F f) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += f(i + j);
  double s = 0;
  for (; i < n; ++i) s += f(i);
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

bool all_f32(std::initializer_list<const Tensor*> ts) {
  return std::all_of(ts.begin(), ts.end(),
                     [](const Tensor* t) { return t->dtype() == DType::float32; });
}

// A grow-only scratch of doubles for this thread (index 0 and 1: two independent uses).
double* scratch(int which, size_t n) {
  thread_local std::vector<double> buf[2];
  if (buf[which].size() < n) buf[which].resize(n);
  return buf[which].data();
}

}  // namespace

namespace {

// The activation element types of the batch norm loops: float32, and bfloat16 (amp O2's
// activations) read into float and rounded once on store; statistics, parameters and sums stay
// float32/double either way, so a bf16 batch norm computes what a float32 one does on the same
// (bf16-valued) input and rounds only its output.
template <class T>
bool act_dtype_ok(const Tensor& t) {
  return t.dtype() == dtype_of<T>::value;
}

// A float result stored as T: for bf16 the bits of BFloat16(f) without its branch, so that the
// store loops vectorize (the layer norm backward's rows: 3x faster on one core).
template <class T>
inline T narrow(float f) {
  if constexpr (std::is_same_v<T, BFloat16>)
    return BFloat16::from_bits(bf16_round_bits(f));
  else
    return T(f);
}

template <class T>
void batch_norm_loop(const Tensor& x, const Tensor& scale, const Tensor& bias, Tensor& running_mean,
                     Tensor& running_var, Tensor& y, Tensor& saved_mean, Tensor& saved_invstd,
                     int64_t n, int64_t c, int64_t spatial, bool training, double eps,
                     double momentum) {
  const T* X = x.data<T>();
  T* Y = y.data<T>();
  const float *G = scale.data<float>(), *B = bias.data<float>();
  float *RM = running_mean.data<float>(), *RV = running_var.data<float>();
  float *SM = saved_mean.data<float>(), *SI = saved_invstd.data<float>();
  const int64_t count = n * spatial;
  parallel_for(c, std::max<int64_t>(count * 3, 1), [&](int64_t s, int64_t e) {
    for (int64_t ch = s; ch < e; ++ch) {
      double mu = RM[ch], var = RV[ch];
      if (training) {
        double sum = 0, sq = 0;
        for (int64_t b = 0; b < n; ++b) {
          const T* p = X + (b * c + ch) * spatial;
          sum += lane_sum(spatial, [p](int64_t i) { return float(p[i]); });
        }
        mu = sum / double(count);  // NaN for an empty batch, as batch_norm_ref
        const float m = static_cast<float>(mu);
        for (int64_t b = 0; b < n; ++b) {  // two passes: no cancellation of sum(x^2) - mean^2
          const T* p = X + (b * c + ch) * spatial;
          sq += lane_sum(spatial, [p, m](int64_t i) {
            const float d = float(p[i]) - m;
            return d * d;
          });
        }
        var = sq / double(count);
        RM[ch] = static_cast<float>((1 - momentum) * double(RM[ch]) + momentum * mu);
        RV[ch] =
            static_cast<float>((1 - momentum) * double(RV[ch]) + momentum * sq / double(count - 1));
      }
      const double inv = 1.0 / std::sqrt(var + eps);
      SM[ch] = static_cast<float>(mu);
      SI[ch] = static_cast<float>(inv);
      const float a = static_cast<float>(double(G[ch]) * inv),
                  b0 = static_cast<float>(double(B[ch]) - mu * double(G[ch]) * inv);
      for (int64_t b = 0; b < n; ++b) {
        const T* p = X + (b * c + ch) * spatial;
        T* q = Y + (b * c + ch) * spatial;
        for (int64_t i = 0; i < spatial; ++i) q[i] = narrow<T>(float(p[i]) * a + b0);
      }
    }
  });
}

template <class T>
void batch_norm_grad_loop(const Tensor& dy, const Tensor& x, const Tensor& scale,
                          const Tensor& mean, const Tensor& invstd, const Tensor& dmean,
                          const Tensor& dinvstd, Tensor& dx, Tensor& dscale, Tensor& dbias,
                          int64_t n, int64_t c, int64_t spatial, bool training) {
  const T *X = x.data<T>(), *DY = dy.data<T>();
  const float *G = scale.data<float>(), *MU = mean.data<float>(), *INV = invstd.data<float>(),
              *DMU = dmean.data<float>(), *DINV = dinvstd.data<float>();
  T* DX = dx.data<T>();
  float *DG = dscale.data<float>(), *DB = dbias.data<float>();
  const int64_t count = n * spatial;
  parallel_for(c, std::max<int64_t>(count * 4, 1), [&](int64_t s, int64_t e) {
    for (int64_t ch = s; ch < e; ++ch) {
      const float mu = MU[ch];
      const double inv = INV[ch];
      double sum_dy = 0, sum_dy_xc = 0;
      for (int64_t b = 0; b < n; ++b) {
        const T* xp = X + (b * c + ch) * spatial;
        const T* dp = DY + (b * c + ch) * spatial;
        sum_dy += lane_sum(spatial, [dp](int64_t i) { return float(dp[i]); });
        sum_dy_xc += lane_sum(
            spatial, [dp, xp, mu](int64_t i) { return float(dp[i]) * (float(xp[i]) - mu); });
      }
      const double sum_dy_xhat = sum_dy_xc * inv;
      DB[ch] = static_cast<float>(sum_dy);
      DG[ch] = static_cast<float>(sum_dy_xhat);
      // dx = a * dy + bx * xhat + k (bx, k = 0 in inference), with xhat = (x - mu) * inv.
      const double a = double(G[ch]) * inv;
      double bx = 0, k = 0;
      if (training && count > 0) {
        const double m = double(count);
        bx = -a * sum_dy_xhat / m - double(DINV[ch]) * inv * inv / m;
        k = -a * sum_dy / m + double(DMU[ch]) / m;
      }
      const float af = static_cast<float>(a), bxf = static_cast<float>(bx * inv),
                  kf = static_cast<float>(k);
      for (int64_t b = 0; b < n; ++b) {
        const T* xp = X + (b * c + ch) * spatial;
        const T* dp = DY + (b * c + ch) * spatial;
        T* out = DX + (b * c + ch) * spatial;
        for (int64_t i = 0; i < spatial; ++i)
          out[i] = narrow<T>(af * float(dp[i]) + bxf * (float(xp[i]) - mu) + kf);
      }
    }
  });
}

}  // namespace

bool batch_norm_f32(const Tensor& x, const Tensor& scale, const Tensor& bias, Tensor& running_mean,
                    Tensor& running_var, Tensor& y, Tensor& saved_mean, Tensor& saved_invstd,
                    int64_t n, int64_t c, int64_t spatial, bool training, double eps,
                    double momentum) {
  if (!all_f32({&scale, &bias, &running_mean, &running_var, &saved_mean, &saved_invstd}) ||
      x.dtype() != y.dtype())
    return false;
  if (act_dtype_ok<float>(x))
    batch_norm_loop<float>(x, scale, bias, running_mean, running_var, y, saved_mean, saved_invstd,
                           n, c, spatial, training, eps, momentum);
  else if (act_dtype_ok<BFloat16>(x))
    batch_norm_loop<BFloat16>(x, scale, bias, running_mean, running_var, y, saved_mean,
                              saved_invstd, n, c, spatial, training, eps, momentum);
  else
    return false;
  return true;
}

bool batch_norm_grad_f32(const Tensor& dy, const Tensor& x, const Tensor& scale, const Tensor& mean,
                         const Tensor& invstd, const Tensor& dmean, const Tensor& dinvstd,
                         Tensor& dx, Tensor& dscale, Tensor& dbias, int64_t n, int64_t c,
                         int64_t spatial, bool training) {
  if (!all_f32({&scale, &mean, &invstd, &dmean, &dinvstd, &dscale, &dbias}) ||
      dy.dtype() != x.dtype() || dx.dtype() != x.dtype())
    return false;
  if (act_dtype_ok<float>(x))
    batch_norm_grad_loop<float>(dy, x, scale, mean, invstd, dmean, dinvstd, dx, dscale, dbias, n, c,
                                spatial, training);
  else if (act_dtype_ok<BFloat16>(x))
    batch_norm_grad_loop<BFloat16>(dy, x, scale, mean, invstd, dmean, dinvstd, dx, dscale, dbias, n,
                                   c, spatial, training);
  else
    return false;
  return true;
}

bool layer_norm_f32(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                    Tensor& mean, Tensor& rstd, int64_t outer, int64_t inner, double eps) {
  if (const char* v = std::getenv("MYCEL_LAYER_NORM_ROWS"); v && std::strcmp(v, "0") == 0)
    return false;
  if (inner <= 0 || outer <= 0 || gamma.numel() != inner || beta.numel() != inner ||
      !all_f32({&gamma, &beta, &mean, &rstd}) || x.dtype() != y.dtype() || !std::isfinite(eps) ||
      (x.dtype() != DType::float32 && x.dtype() != DType::bfloat16))
    return false;
  // AVX-512 rows only: a vectorized loop here (float lanes, widened and rounded rows) ran 2x
  // slower than oneDNN's primitive, which stays where the CPU has no AVX-512.
  return layer_norm_rows(x.data(), x.dtype() == DType::bfloat16, gamma.data<float>(),
                         beta.data<float>(), y.data(), mean.data<float>(), rstd.data<float>(),
                         outer, inner, eps);
}

namespace {

template <class T>
void layer_norm_grad_loop(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                          const Tensor& mean, const Tensor& rstd, const Tensor& dmean,
                          const Tensor& drstd, Tensor& dx, Tensor& dgamma, Tensor& dbeta,
                          int64_t outer, int64_t inner, bool has_gamma,
                          const Tensor* dy_b = nullptr) {
  const T *X = x.data<T>(), *DY = dy.data<T>();
  // dy_b (bf16 only): dy is dy + dy_b, each element rounded to bf16 as the add kernel rounds.
  const uint16_t* DY2 = dy_b ? static_cast<const uint16_t*>(dy_b->data()) : nullptr;
  const float *MU = mean.data<float>(), *RS = rstd.data<float>(), *DMU = dmean.data<float>(),
              *DRS = drstd.data<float>();
  const float* G = has_gamma ? gamma.data<float>() : nullptr;
  T* DX = dx.data<T>();
  bool fast_rows = false;
  if constexpr (std::is_same_v<T, BFloat16>)
    fast_rows = has_gamma && layer_norm_grad_row_bf16_ok(inner);
  // Rows in a few contiguous chunks, each with its own dgamma/dbeta partial sums (double).
  const int64_t chunks = std::max<int64_t>(std::min<int64_t>(outer, num_threads()), 1);
  double* part = scratch(0, static_cast<size_t>(chunks * 2 * inner));
  parallel_for(chunks, std::max<int64_t>(outer / chunks * inner * 8, 1), [&](int64_t s, int64_t e) {
    // The row's xhat, its dy in float (bf16), the dgamma/dbeta block sums, dx's float row (bf16).
    thread_local std::vector<float> xh, dyh, fsum, orow;
    if (static_cast<int64_t>(orow.size()) < inner) orow.resize(static_cast<size_t>(inner));
    if (static_cast<int64_t>(xh.size()) < inner) xh.resize(static_cast<size_t>(inner));
    if (static_cast<int64_t>(dyh.size()) < inner) dyh.resize(static_cast<size_t>(inner));
    // dgamma/dbeta: float partial sums over blocks of kFloatRows rows, added into the chunk's
    // double sums per block (a double add per element and row cost as much as the rest of the
    // row's work).
    if (static_cast<int64_t>(fsum.size()) < 2 * inner) fsum.resize(static_cast<size_t>(2 * inner));
    float* fg = fsum.data();
    float* fb = fg + inner;
    for (int64_t ck = s; ck < e; ++ck) {
      double* sg = part + ck * 2 * inner;
      double* sb = sg + inner;
      std::fill(sg, sg + 2 * inner, 0.0);
      std::fill(fg, fg + 2 * inner, 0.0f);
      int block = 0;
      auto flush = [&] {
        for (int64_t i = 0; i < inner; ++i) {
          sg[i] += double(fg[i]);
          sb[i] += double(fb[i]);
          fg[i] = fb[i] = 0.0f;
        }
        block = 0;
      };
      for (int64_t r = ck * outer / chunks, r1 = (ck + 1) * outer / chunks; r < r1; ++r) {
        const T* xp = X + r * inner;
        const float mu = MU[r], rs = RS[r];
        if (fast_rows) {  // bf16 with gamma: the same bits in two passes
                          // (layer_norm_grad_row_bf16.h)
          layer_norm_grad_row_bf16(
              reinterpret_cast<const uint16_t*>(DY + r * inner), DY2 ? DY2 + r * inner : nullptr,
              reinterpret_cast<const uint16_t*>(xp), G, mu, rs, DMU[r], DRS[r],
              reinterpret_cast<uint16_t*>(DX + r * inner), fg, fb, xh.data(), dyh.data(), inner);
          if (++block == kFloatRows) flush();
          continue;
        }
        float* xhat = xh.data();
        for (int64_t i = 0; i < inner; ++i) xhat[i] = (float(xp[i]) - mu) * rs;
        const float* dp;
        if constexpr (std::is_same_v<T, float>) {
          dp = DY + r * inner;
        } else if (DY2) {  // the sum's bf16 value, as an add launch would have stored it: the
          // float sums, rounded by bf16_round_row's lanes (GCC packs a scalar rounding loop
          // poorly), widened back
          const uint16_t* d1 = reinterpret_cast<const uint16_t*>(DY) + r * inner;
          const uint16_t* d2 = DY2 + r * inner;
          float* t = dyh.data();
          for (int64_t i = 0; i < inner; ++i) t[i] = bf16_widen(d1[i]) + bf16_widen(d2[i]);
          uint16_t* rounded = reinterpret_cast<uint16_t*>(orow.data());
          bf16_round_row(t, rounded, inner);
          for (int64_t i = 0; i < inner; ++i) t[i] = bf16_widen(rounded[i]);
          dp = dyh.data();
        } else {  // widened once: the row's dy is read four times below
          for (int64_t i = 0; i < inner; ++i) dyh[i] = float(DY[r * inner + i]);
          dp = dyh.data();
        }
        // Sums over the row of dxhat = dy * gamma and of dxhat * xhat.
        const double a = G ? lane_sum(inner, [dp, G](int64_t i) { return dp[i] * G[i]; })
                           : lane_sum(inner, [dp](int64_t i) { return dp[i]; });
        const double b =
            G ? lane_sum(inner, [dp, G, xhat](int64_t i) { return dp[i] * G[i] * xhat[i]; })
              : lane_sum(inner, [dp, xhat](int64_t i) { return dp[i] * xhat[i]; });
        const double m = double(inner);
        const float k = static_cast<float>((double(DMU[r]) - double(rs) * a) / m),
                    bx = static_cast<float>(-(double(rs) * b + double(DRS[r]) * rs * rs) / m);
        // bf16: the row in float first, rounded by bf16_round_row.
        T* out = DX + r * inner;
        float* o = orow.data();
        if constexpr (std::is_same_v<T, float>) o = out;
        if (G)
          for (int64_t i = 0; i < inner; ++i) o[i] = rs * dp[i] * G[i] + bx * xhat[i] + k;
        else
          for (int64_t i = 0; i < inner; ++i) o[i] = rs * dp[i] + bx * xhat[i] + k;
        if constexpr (!std::is_same_v<T, float>)
          bf16_round_row(o, reinterpret_cast<uint16_t*>(out), inner);
        if (G) {
          for (int64_t i = 0; i < inner; ++i) {
            fg[i] += dp[i] * xhat[i];
            fb[i] += dp[i];
          }
          if (++block == kFloatRows) flush();
        }
      }
      flush();
    }
  });
  if (has_gamma) {
    float *DG = dgamma.data<float>(), *DB = dbeta.data<float>();
    for (int64_t i = 0; i < inner; ++i) {
      double g = 0, b = 0;
      for (int64_t ck = 0; ck < chunks; ++ck)
        g += part[ck * 2 * inner + i], b += part[ck * 2 * inner + inner + i];
      DG[i] = static_cast<float>(g);
      DB[i] = static_cast<float>(b);
    }
  }
}

}  // namespace

bool layer_norm_grad_f32(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dmean, const Tensor& drstd, Tensor& dx,
                         Tensor& dgamma, Tensor& dbeta, int64_t outer, int64_t inner) {
  const bool has_gamma = gamma.numel() > 0;
  if ((has_gamma && gamma.numel() != inner) || inner <= 0 ||
      !all_f32({&gamma, &mean, &rstd, &dmean, &drstd}) || dy.dtype() != x.dtype() ||
      dx.dtype() != x.dtype())
    return false;
  if (has_gamma && !all_f32({&dgamma, &dbeta})) return false;
  if (act_dtype_ok<float>(x))
    layer_norm_grad_loop<float>(dy, x, gamma, mean, rstd, dmean, drstd, dx, dgamma, dbeta, outer,
                                inner, has_gamma);
  else if (act_dtype_ok<BFloat16>(x))
    layer_norm_grad_loop<BFloat16>(dy, x, gamma, mean, rstd, dmean, drstd, dx, dgamma, dbeta, outer,
                                   inner, has_gamma);
  else
    return false;
  return true;
}

bool layer_norm_grad_sum_bf16(const Tensor& dy_a, const Tensor& dy_b, const Tensor& x,
                              const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                              const Tensor& dmean, const Tensor& drstd, Tensor& dx, Tensor& dgamma,
                              Tensor& dbeta, int64_t outer, int64_t inner) {
  if (dy_a.dtype() != DType::bfloat16 || dy_b.dtype() != DType::bfloat16 ||
      dy_b.numel() != dy_a.numel() || !act_dtype_ok<BFloat16>(x) || gamma.numel() != inner ||
      inner <= 0 || !all_f32({&gamma, &mean, &rstd, &dmean, &drstd, &dgamma, &dbeta}) ||
      dy_a.dtype() != x.dtype() || dx.dtype() != x.dtype())
    return false;
  layer_norm_grad_loop<BFloat16>(dy_a, x, gamma, mean, rstd, dmean, drstd, dx, dgamma, dbeta, outer,
                                 inner, true, &dy_b);
  return true;
}

}  // namespace mycel::cpu
