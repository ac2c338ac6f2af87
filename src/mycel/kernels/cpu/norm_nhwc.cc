#include "mycel/kernels/cpu/norm_nhwc.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include <omp.h>

#include "mycel/core/dtype.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/bf16_lanes.h"  // AVX2: the build's x86-64-v3 baseline
#include "mycel/kernels/cpu/dnnl_layout.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"

namespace mycel::cpu {

bool nhwc_activations(DType dtype) {
  if (dtype == DType::bfloat16) return bf16_activation_tag() == dnnl::memory::format_tag::nhwc;
  return dtype == DType::float32 && activation_tag() == dnnl::memory::format_tag::nhwc;
}

namespace {

// Rows summed in float before their double sums: the NCHW loops' float lanes hold a plane's
// elements (16 of ResNet-18's 4x4 planes, 1024 of its 32x32), so float partials over 16 rows
// round no worse, and a double add per element and row would cost as much as the rest.
constexpr int64_t kFloatRows = 16;

// Activations are float (S = float) or bf16 bits (S = uint16_t), widened to float exactly.
inline float widen(float v) { return v; }
inline float widen(uint16_t v) { return bf16_widen(v); }

// Grow-only scratch of the launching thread, shared with its team: a warm launch allocates
// nothing. Slots are separate uses alive at once (partial sums, sums, per-channel coefficients).
float* floats(int slot, int64_t n) {
  thread_local std::vector<float> buf[3];  // slot 0 unused
  if (static_cast<int64_t>(buf[slot].size()) < n) buf[slot].resize(static_cast<size_t>(n));
  return buf[slot].data();
}
double* doubles(int slot, int64_t n) {
  thread_local std::vector<double> buf[2];
  if (static_cast<int64_t>(buf[slot].size()) < n) buf[slot].resize(static_cast<size_t>(n));
  return buf[slot].data();
}

// Eight channels of a row as floats.
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return bf16_lanes::widen8(p); }

// Channels per register block of the sums: kRegs AVX2 registers per quantity stay in registers
// while a block of rows goes by (the batch norm backward's two quantities: 8 of the 16).
constexpr int kRegs = 4;

// A batch norm launch runs as one OpenMP region whose threads meet at barriers between its
// passes (sums, their combination per channel, the row pass), not as a region per pass: under
// OMP_WAIT_POLICY=PASSIVE (or past GOMP_SPINCOUNT) each region wakes the sleeping pool, which
// cost two threads more than they saved at ResNet-18's 4x4 stage (forward 0.086 ms on one
// thread, 0.110 on two with three regions). fn(id, got) runs on each of the got threads
// (got = 1, on the calling thread, for small work).
template <class Fn>
void team(int64_t work, Fn fn) {
  const int nt = num_threads();
  if (nt <= 1 || work < kParallelGrain || omp_in_parallel()) {
    fn(0, 1);
    return;
  }
#pragma omp parallel num_threads(nt)
  fn(omp_get_thread_num(), omp_get_num_threads());
}

// The team's barrier. Only in a team of our own: a lone thread (got = 1) may run inside someone
// else's parallel region (omp_in_parallel), where an orphaned barrier would bind to that team.
inline void sync(int got) {
  if (got > 1) {
#pragma omp barrier
  }
}

// The row chunks of a launch: min(rows, threads) contiguous ones, whatever the team's size, so
// that the sums depend on the thread count only. Chunk t's rows: [rows * t / T, rows * (t+1) / T).
int64_t row_chunks(int64_t rows) {
  return std::max<int64_t>(1, std::min<int64_t>(rows, num_threads()));
}

// Within a team: part[t * K * c + k * c + j] := chunk t's sum of quantity k of channel j, for the
// chunks t = id, id + got, ... of T: lanes(r, j, a) adds channels j..j+7 of row r into the
// registers a[0..K), scalar(r, j, a) channel j into the floats a[0..K). Each chunk adds blocks of
// kFloatRows rows in float (blocks of kRegs * 8 channels held in registers across the rows: the
// sums kept in memory cost a load and a store per 8 elements, the 16x16 bf16 backward 0.50 ->
// 0.40 ms), each block's float sums into the chunk's doubles.
template <int K, class Lanes, class Scalar>
void chunk_sums(int64_t rows, int64_t c, int64_t T, double* part, int id, int got, Lanes lanes,
                Scalar scalar) {
  const int64_t width = K * c;
  for (int64_t ck = id; ck < T; ck += got) {
    double* pd = part + ck * width;
    std::fill(pd, pd + width, 0.0);
    // lanes' float sums of a block of rows into the chunk's doubles.
    auto flush = [&](const __m256* a, int64_t j) {
      alignas(32) float t[8];
      for (int k = 0; k < K; ++k) {
        _mm256_store_ps(t, a[k]);
        for (int l = 0; l < 8; ++l) pd[k * c + j + l] += double(t[l]);
      }
    };
    const int64_t r1 = (ck + 1) * rows / T;
    for (int64_t r = ck * rows / T; r < r1; r += kFloatRows) {
      const int64_t re = std::min(r + kFloatRows, r1);
      int64_t j = 0;
      for (; j + 8 * kRegs <= c; j += 8 * kRegs) {
        __m256 a[kRegs][K];
        for (auto& v : a)
          for (auto& w : v) w = _mm256_setzero_ps();
        for (int64_t q = r; q < re; ++q)
          for (int v = 0; v < kRegs; ++v) lanes(q, j + 8 * v, a[v]);
        for (int v = 0; v < kRegs; ++v) flush(a[v], j + 8 * v);
      }
      for (; j + 8 <= c; j += 8) {
        __m256 a[K];
        for (auto& w : a) w = _mm256_setzero_ps();
        for (int64_t q = r; q < re; ++q) lanes(q, j, a);
        flush(a, j);
      }
      for (; j < c; ++j) {
        float a[K] = {};
        for (int64_t q = r; q < re; ++q) scalar(q, j, a);
        for (int k = 0; k < K; ++k) pd[k * c + j] += double(a[k]);
      }
    }
  }
}

// out[k * c + j] := the chunks' sums added in chunk order, for the channels [j0, j1).
template <int K>
void combine_chunks(const double* part, int64_t T, int64_t c, double* out, int64_t j0, int64_t j1) {
  for (int k = 0; k < K; ++k)
    for (int64_t j = j0; j < j1; ++j) {
      double s = 0;
      for (int64_t t = 0; t < T; ++t) s += part[t * K * c + k * c + j];
      out[k * c + j] = s;
    }
}

// row(r) for the rows of the chunks id, id + got, ... (the rows whose sums this thread took:
// still in its cache).
template <class RowFn>
void chunk_rows(int64_t rows, int64_t T, int id, int got, RowFn row) {
  for (int64_t ck = id; ck < T; ck += got)
    for (int64_t r = ck * rows / T, r1 = (ck + 1) * rows / T; r < r1; ++r) row(r);
}

// q[j] = bf16(v(j)) for j < c: 8 lanes at a time (vec(j) gives lanes j..j+7 as floats), rounded
// by bf16_lanes' round8 (bf16_round_bits' bits), the tail by bf16_round_bits. A float row staged
// and rounded by bf16_round_row took a quarter of the launch more (measured: 4x4 planes).
template <class Vec, class Scalar>
inline void store_bf16_row(uint16_t* q, int64_t c, Vec vec, Scalar scalar) {
  int64_t j = 0;
  for (; j + 8 <= c; j += 8) bf16_lanes::store8(q + j, bf16_lanes::round8(vec(j)));
  for (; j < c; ++j) q[j] = bf16_round_bits(scalar(j));
}

template <class S>
void bn_forward(const S* X, const float* G, const float* B, float* RM, float* RV, S* Y, float* SM,
                float* SI, int64_t rows, int64_t c, bool training, double eps, double momentum) {
  // Scratch of the calling thread, shared by the team.
  const int64_t T = row_chunks(rows);
  double* part = doubles(0, T * c);
  float* m = floats(1, c);  // the float mean of the deviations pass, then the scale a
  float* b0 = floats(2, c);
  double* sum = doubles(1, 2 * c);
  double* sq = sum + c;
  const double count = double(rows);
  team(rows * c * (training ? 4 : 2), [&](int id, int got) {
    const int64_t j0 = c * id / got, j1 = c * (id + 1) / got;  // this thread's channels
    if (training) {
      chunk_sums<1>(
          rows, c, T, part, id, got,
          [&](int64_t r, int64_t j, __m256* a) {
            a[0] = _mm256_add_ps(a[0], load8(X + r * c + j));
          },
          [&](int64_t r, int64_t j, float* a) { a[0] += widen(X[r * c + j]); });
      sync(got);
      combine_chunks<1>(part, T, c, sum, j0, j1);
      for (int64_t j = j0; j < j1; ++j) m[j] = static_cast<float>(sum[j] / count);
      sync(got);
      // Two passes, as batch_norm_loop: no cancellation of sum(x^2) - mean^2.
      chunk_sums<1>(
          rows, c, T, part, id, got,
          [&](int64_t r, int64_t j, __m256* a) {
            const __m256 d = _mm256_sub_ps(load8(X + r * c + j), _mm256_loadu_ps(m + j));
            a[0] = _mm256_fmadd_ps(d, d, a[0]);
          },
          [&](int64_t r, int64_t j, float* a) {
            const float d = widen(X[r * c + j]) - m[j];
            a[0] += d * d;
          });
      sync(got);
      combine_chunks<1>(part, T, c, sq, j0, j1);
    }
    for (int64_t j = j0; j < j1; ++j) {
      double mu = RM[j], var = RV[j];
      if (training) {
        mu = sum[j] / count;  // NaN for an empty batch, as batch_norm_ref
        var = sq[j] / count;
        RM[j] = static_cast<float>((1 - momentum) * double(RM[j]) + momentum * mu);
        RV[j] = static_cast<float>((1 - momentum) * double(RV[j]) + momentum * sq[j] / (count - 1));
      }
      const double inv = 1.0 / std::sqrt(var + eps);
      SM[j] = static_cast<float>(mu);
      SI[j] = static_cast<float>(inv);
      m[j] = static_cast<float>(double(G[j]) * inv);
      b0[j] = static_cast<float>(double(B[j]) - mu * double(G[j]) * inv);
    }
    sync(got);
    const float* a = m;
    chunk_rows(rows, T, id, got, [&](int64_t r) {
      const S* p = X + r * c;
      S* q = Y + r * c;
      if constexpr (std::is_same_v<S, float>) {
        for (int64_t j = 0; j < c; ++j) q[j] = p[j] * a[j] + b0[j];
      } else {
        store_bf16_row(
            q, c,
            [&](int64_t j) {
              return _mm256_fmadd_ps(bf16_lanes::widen8(p + j), _mm256_loadu_ps(a + j),
                                     _mm256_loadu_ps(b0 + j));
            },
            [&](int64_t j) { return widen(p[j]) * a[j] + b0[j]; });
      }
    });
  });
}

template <class S>
void bn_backward(const S* DY, const S* X, const float* G, const float* MU, const float* INV,
                 const float* DMU, const float* DINV, S* DX, float* DG, float* DB, int64_t rows,
                 int64_t c, bool training) {
  const int64_t T = row_chunks(rows);
  double* part = doubles(0, T * 2 * c);
  double* sums = doubles(1, 2 * c);  // sum(dy), then sum(dy * (x - mu))
  float* af = floats(1, 2 * c);
  float* bxf = af + c;
  float* kf = floats(2, c);
  const double m = double(rows);
  team(rows * c * 6, [&](int id, int got) {
    const int64_t j0 = c * id / got, j1 = c * (id + 1) / got;  // this thread's channels
    chunk_sums<2>(
        rows, c, T, part, id, got,
        [&](int64_t r, int64_t j, __m256* a) {
          const __m256 d = load8(DY + r * c + j);
          const __m256 xc = _mm256_sub_ps(load8(X + r * c + j), _mm256_loadu_ps(MU + j));
          a[0] = _mm256_add_ps(a[0], d);
          a[1] = _mm256_fmadd_ps(d, xc, a[1]);
        },
        [&](int64_t r, int64_t j, float* a) {
          const float d = widen(DY[r * c + j]);
          a[0] += d;
          a[1] += d * (widen(X[r * c + j]) - MU[j]);
        });
    sync(got);
    combine_chunks<2>(part, T, c, sums, j0, j1);
    for (int64_t j = j0; j < j1; ++j) {  // batch_norm_grad_loop's coefficients
      const double inv = INV[j], sum_dy = sums[j], sum_dy_xhat = sums[c + j] * inv;
      DB[j] = static_cast<float>(sum_dy);
      DG[j] = static_cast<float>(sum_dy_xhat);
      // dx = a * dy + bx * xhat + k (bx, k = 0 in inference), with xhat = (x - mu) * inv.
      const double a = double(G[j]) * inv;
      double bx = 0, k = 0;
      if (training && rows > 0) {
        bx = -a * sum_dy_xhat / m - double(DINV[j]) * inv * inv / m;
        k = -a * sum_dy / m + double(DMU[j]) / m;
      }
      af[j] = static_cast<float>(a);
      bxf[j] = static_cast<float>(bx * inv);
      kf[j] = static_cast<float>(k);
    }
    sync(got);
    chunk_rows(rows, T, id, got, [&](int64_t r) {
      const S* dp = DY + r * c;
      const S* xp = X + r * c;
      S* q = DX + r * c;
      auto scalar = [&](int64_t j) {
        return af[j] * widen(dp[j]) + bxf[j] * (widen(xp[j]) - MU[j]) + kf[j];
      };
      if constexpr (std::is_same_v<S, float>) {
        for (int64_t j = 0; j < c; ++j) q[j] = scalar(j);
      } else {
        store_bf16_row(
            q, c,
            [&](int64_t j) {
              const __m256 xc = _mm256_sub_ps(bf16_lanes::widen8(xp + j), _mm256_loadu_ps(MU + j));
              return _mm256_fmadd_ps(
                  _mm256_loadu_ps(af + j), bf16_lanes::widen8(dp + j),
                  _mm256_fmadd_ps(_mm256_loadu_ps(bxf + j), xc, _mm256_loadu_ps(kf + j)));
            },
            scalar);
      }
    });
  });
}

bool all_f32(std::initializer_list<const Tensor*> ts) {
  return std::all_of(ts.begin(), ts.end(),
                     [](const Tensor* t) { return t->dtype() == DType::float32; });
}

bool sized(std::initializer_list<const Tensor*> ts, int64_t n) {
  return std::all_of(ts.begin(), ts.end(), [n](const Tensor* t) { return t->numel() == n; });
}

template <class S>
const S* as(const Tensor& t) {
  return static_cast<const S*>(t.data());
}
template <class S>
S* as_mut(Tensor& t) {
  return static_cast<S*>(t.data());
}

}  // namespace

bool batch_norm_nhwc(const Tensor& x, const Tensor& scale, const Tensor& bias, Tensor& running_mean,
                     Tensor& running_var, Tensor& y, Tensor& saved_mean, Tensor& saved_invstd,
                     int64_t rows, int64_t c, bool training, double eps, double momentum) {
  if (!all_f32({&scale, &bias, &running_mean, &running_var, &saved_mean, &saved_invstd}) ||
      !sized({&scale, &bias, &running_mean, &running_var, &saved_mean, &saved_invstd}, c) ||
      x.dtype() != y.dtype() || x.numel() != rows * c || y.numel() != rows * c || c < 0)
    return false;
  const float *G = scale.data<float>(), *B = bias.data<float>();
  float *RM = running_mean.data<float>(), *RV = running_var.data<float>(),
        *SM = saved_mean.data<float>(), *SI = saved_invstd.data<float>();
  if (x.dtype() == DType::float32)
    bn_forward(as<float>(x), G, B, RM, RV, as_mut<float>(y), SM, SI, rows, c, training, eps,
               momentum);
  else if (x.dtype() == DType::bfloat16)
    bn_forward(as<uint16_t>(x), G, B, RM, RV, as_mut<uint16_t>(y), SM, SI, rows, c, training, eps,
               momentum);
  else
    return false;
  return true;
}

bool batch_norm_grad_nhwc(const Tensor& dy, const Tensor& x, const Tensor& scale,
                          const Tensor& mean, const Tensor& invstd, const Tensor& dmean,
                          const Tensor& dinvstd, Tensor& dx, Tensor& dscale, Tensor& dbias,
                          int64_t rows, int64_t c, bool training) {
  if (!all_f32({&scale, &mean, &invstd, &dmean, &dinvstd, &dscale, &dbias}) ||
      !sized({&scale, &mean, &invstd, &dmean, &dinvstd, &dscale, &dbias}, c) ||
      dy.dtype() != x.dtype() || dx.dtype() != x.dtype() || !sized({&dy, &x, &dx}, rows * c) ||
      c < 0)
    return false;
  const float *G = scale.data<float>(), *MU = mean.data<float>(), *INV = invstd.data<float>(),
              *DMU = dmean.data<float>(), *DINV = dinvstd.data<float>();
  float *DG = dscale.data<float>(), *DB = dbias.data<float>();
  if (x.dtype() == DType::float32)
    bn_backward(as<float>(dy), as<float>(x), G, MU, INV, DMU, DINV, as_mut<float>(dx), DG, DB, rows,
                c, training);
  else if (x.dtype() == DType::bfloat16)
    bn_backward(as<uint16_t>(dy), as<uint16_t>(x), G, MU, INV, DMU, DINV, as_mut<uint16_t>(dx), DG,
                DB, rows, c, training);
  else
    return false;
  return true;
}

namespace {

template <class S>
void mean_hw_rows(const S* X, S* Y, int64_t n, int64_t hw, int64_t c) {
  // Items: (image, block of 64 channels); each block's 64 float sums stay in registers while
  // the positions go by, in order (the NCHW mean's order for planes under 32 positions).
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (c + kBlock - 1) / kBlock;
  const float fhw = static_cast<float>(hw);
  parallel_for(n * blocks, std::max<int64_t>(hw * kBlock, 1), [&](int64_t s, int64_t e) {
    for (int64_t item = s; item < e; ++item) {
      const int64_t i = item / blocks, c0 = item % blocks * kBlock;
      const int64_t w = std::min(kBlock, c - c0);
      float acc[kBlock] = {};
      const S* xb = X + i * hw * c + c0;
      if (w == kBlock) {
        for (int64_t p = 0; p < hw; ++p)
          for (int64_t l = 0; l < kBlock; ++l) acc[l] += widen(xb[p * c + l]);
      } else {
        for (int64_t p = 0; p < hw; ++p)
          for (int64_t l = 0; l < w; ++l) acc[l] += widen(xb[p * c + l]);
      }
      S* yb = Y + i * c + c0;
      for (int64_t l = 0; l < w; ++l) {
        const float v = acc[l] / fhw;  // a division, as the NCHW mean's finalize
        if constexpr (std::is_same_v<S, float>)
          yb[l] = v;
        else
          yb[l] = bf16_round_bits(v);
      }
    }
  });
}

}  // namespace

bool mean_hw_nhwc(const Tensor& x, Tensor& y, int64_t n, int64_t hw, int64_t c) {
  if (x.dtype() != y.dtype() || x.numel() != n * hw * c || y.numel() != n * c || hw < 0)
    return false;
  if (x.dtype() == DType::float32)
    mean_hw_rows(as<float>(x), as_mut<float>(y), n, hw, c);
  else if (x.dtype() == DType::bfloat16)
    mean_hw_rows(as<uint16_t>(x), as_mut<uint16_t>(y), n, hw, c);
  else
    return false;
  return true;
}

bool broadcast_hw_nhwc(const Tensor& x, Tensor& y, int64_t n, int64_t hw, int64_t c) {
  if (x.dtype() != y.dtype() || x.numel() != n * c || y.numel() != n * hw * c) return false;
  // Per image: its row of c values, then the rows written so far copied after themselves
  // (1, 2, 4, ... rows: log2(hw) large memcpys). A copy per row cost ~3 ns a call (0.10 ms for
  // ResNet-18's (32, 64, 32, 32) bf16 gradient), a vectorized loop per row 0.08, this 0.05.
  const size_t row = static_cast<size_t>(c) * itemsize(y.dtype());
  const char* X = static_cast<const char*>(x.data());
  char* Y = static_cast<char*>(y.data());
  if (row == 0 || hw == 0) return true;
  parallel_for(n, std::max<int64_t>(hw * c, 1), [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      char* yi = Y + static_cast<size_t>(i * hw) * row;
      std::memcpy(yi, X + static_cast<size_t>(i) * row, row);
      for (int64_t done = 1; done < hw;) {
        const int64_t k = std::min(done, hw - done);
        std::memcpy(yi + static_cast<size_t>(done) * row, yi, static_cast<size_t>(k) * row);
        done += k;
      }
    }
  });
  return true;
}

namespace {

// The launch's 4-D activations are in the layout step's layout, and that is NHWC for dtype.
bool nhwc_launch(const KernelContext& c, DType dtype) {
  return c.params && (c.params->src_blocked || c.params->dst_blocked) &&
         (dtype == DType::float32 || dtype == DType::bfloat16) && nhwc_activations(dtype);
}

}  // namespace

bool mean_hw_nhwc_launch(const KernelContext& c) {
  const Tensor& x = c.in(0);
  if (x.ndim() != 4 || !nhwc_launch(c, x.dtype()) || !c.attrs.has("axis")) return false;
  std::vector<int64_t> axes = c.attrs.get_ints("axis");
  for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
  std::sort(axes.begin(), axes.end());
  if (axes != std::vector<int64_t>{2, 3}) return false;
  const Shape& s = x.shape();
  if (!mean_hw_nhwc(x, c.out(0), s[0], s[2] * s[3], s[1])) return false;
  c.params->layout_taken = true;
  return true;
}

bool broadcast_hw_nhwc_launch(const KernelContext& c) {
  const Tensor& x = c.in(0);
  Tensor& y = c.out(0);
  if (y.ndim() != 4 || !nhwc_launch(c, y.dtype())) return false;
  const Shape& o = y.shape();
  if (x.shape() != Shape{o[0], o[1], 1, 1}) return false;
  if (!broadcast_hw_nhwc(x, y, o[0], o[2] * o[3], o[1])) return false;
  c.params->layout_taken = true;
  return true;
}

}  // namespace mycel::cpu
