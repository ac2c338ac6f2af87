#include "mycel/kernels/cpu/conv_winograd_nchw.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/transpose8x8.h"

namespace mycel::cpu {
namespace {

constexpr int64_t kLanes = 8;                           // channels per nChw8c block
constexpr int64_t kMinBatch = 4;                        // see winograd_nchw_tile
constexpr int64_t kMaxWeightBytes = int64_t{16} << 20;  // largest U chosen

// A grow-only float buffer of the calling thread (0: input, 1: output; the Winograd kernel uses
// the staging buffers 0-2 itself). A Tensor's storage is 64-byte aligned: the kernel's 32-byte
// loads then never straddle cache lines (a std::vector's large blocks sit 16 bytes into a page).
float* buffer(int which, int64_t n) {
  thread_local Tensor buf[2];
  if (!buf[which].defined() || buf[which].numel() < n)
    buf[which] = Tensor::empty({std::max<int64_t>(n, 1)}, DType::float32);
  return buf[which].data<float>();
}

// NCHW (n, c, hw) -> nChw8c, channels padded with zeros to c8. A whole block of 8 channels
// moves 8 pixels at a time through an 8x8 register transpose: the scalar loop's strided stores
// were 13% of a 64-channel Winograd forward's CPU samples (perf, one thread, batch 32).
void to_blocked(const float* x, float* xb, int64_t n, int64_t c, int64_t hw) {
  const int64_t cb = (c + kLanes - 1) / kLanes;
  parallel_for(n * cb, hw * kLanes * 2, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      const int64_t b = i / cb, blk = i % cb;
      float* out = xb + i * hw * kLanes;
      const float* in0 = x + (b * c + blk * kLanes) * hw;
      int64_t p0 = 0;
      if (blk * kLanes + kLanes <= c)
        for (; p0 + kLanes <= hw; p0 += kLanes) {
          __m256 r[kLanes], t[kLanes];
          for (int64_t k = 0; k < kLanes; ++k) r[k] = _mm256_loadu_ps(in0 + k * hw + p0);
          transpose8x8(r, t);
          for (int64_t j = 0; j < kLanes; ++j) _mm256_storeu_ps(out + (p0 + j) * kLanes, t[j]);
        }
      for (int64_t k = 0; k < kLanes; ++k) {
        if (blk * kLanes + k >= c) {
          for (int64_t p = p0; p < hw; ++p) out[p * kLanes + k] = 0.0f;
          continue;
        }
        for (int64_t p = p0; p < hw; ++p) out[p * kLanes + k] = in0[k * hw + p];
      }
    }
  });
}

// nChw8c -> NCHW (n, c, hw), the padding channels dropped; whole blocks as in to_blocked.
void from_blocked(const float* yb, float* y, int64_t n, int64_t c, int64_t hw) {
  const int64_t cb = (c + kLanes - 1) / kLanes;
  parallel_for(n * cb, hw * kLanes * 2, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      const int64_t b = i / cb, blk = i % cb;
      const float* in = yb + i * hw * kLanes;
      float* out0 = y + (b * c + blk * kLanes) * hw;
      int64_t p0 = 0;
      if (blk * kLanes + kLanes <= c)
        for (; p0 + kLanes <= hw; p0 += kLanes) {
          __m256 r[kLanes], t[kLanes];
          for (int64_t j = 0; j < kLanes; ++j) r[j] = _mm256_loadu_ps(in + (p0 + j) * kLanes);
          transpose8x8(r, t);
          for (int64_t k = 0; k < kLanes; ++k) _mm256_storeu_ps(out0 + k * hw + p0, t[k]);
        }
      for (int64_t k = 0; k < kLanes && blk * kLanes + k < c; ++k)
        for (int64_t p = p0; p < hw; ++p) out0[k * hw + p] = in[p * kLanes + k];
    }
  });
}

// The backward-data convolution of forward geometry g as a forward geometry (see the header).
WindowGeom bwd_data_geom(const WindowGeom& g) {
  WindowGeom b = g;
  b.c = g.oc, b.h = g.oh, b.w = g.ow;
  b.oc = g.c, b.oh = g.h, b.ow = g.w;
  b.pt = 2 - g.pt, b.pb = 2 - g.pb, b.pl = 2 - g.pl, b.pr = 2 - g.pr;
  return b;
}

// y = act(conv(x, U) + bias) on NCHW through nChw8c copies; w is read by winograd_weights_into.
void run(const float* x, const float* w, bool flip, const float* bias, float* y,
         const WindowGeom& g, int m, WinogradAct act) {
  thread_local WinogradWeights u;  // its buffer is reused between calls
  winograd_weights_into(w, g, m, flip, u);
  const int64_t c8 = (g.c + kLanes - 1) / kLanes * kLanes,
                oc8 = (g.oc + kLanes - 1) / kLanes * kLanes;
  float* xb = buffer(0, g.n * c8 * g.h * g.w);
  float* yb = buffer(1, g.n * oc8 * g.oh * g.ow);
  to_blocked(x, xb, g.n, g.c, g.h * g.w);
  conv2d_winograd(xb, u, bias, nullptr, yb, g, act);
  from_blocked(yb, y, g.n, g.oc, g.oh * g.ow);
}

}  // namespace

int winograd_nchw_tile(DType dtype, const WindowGeom& g) {
  if (g.n < kMinBatch || g.oh != g.h + g.pt + g.pb - 2 || g.ow != g.w + g.pl + g.pr - 2 ||
      !winograd_fits(dtype, g))
    return 0;
  // Read at every call (a getenv against a convolution of milliseconds): a test can take the
  // exact direct sums for a reference (int8 chains: Winograd's fractions break exactness).
  if (const char* v = std::getenv("MYCEL_WINOGRAD_NCHW"); v && std::string(v) == "0") return 0;
  if (const int forced = winograd_forced(); forced >= 0) return forced;
  // At a batch each tile block reuses the transformed weights, so larger ones pay than in
  // inference's rule (winograd_tile): measured per ResNet-18 CIFAR layer at batch 32
  // (docs/perf_resnet.md), F(4x4) wins from 8x8 outputs (256 channels: 9.4 MB of U), oneDNN at
  // 4x4 (512 channels, both tiles slower).
  const int64_t side = std::min(g.oh, g.ow);
  const int64_t pairs = (g.c + 7) / 8 * ((g.oc + 7) / 8) * 64 * int64_t{sizeof(float)};
  if (side >= 8 && 36 * pairs <= kMaxWeightBytes) return 4;
  if (side >= 6 && 16 * pairs <= kMaxWeightBytes) return 2;
  return 0;
}

int winograd_nchw_bwd_data_tile(DType dtype, const WindowGeom& g) {
  if (g.kh != 3 || g.kw != 3 || g.pt < 0 || g.pb < 0 || g.pl < 0 || g.pr < 0 || g.pt > 2 ||
      g.pb > 2 || g.pl > 2 || g.pr > 2)
    return 0;
  return winograd_nchw_tile(dtype, bwd_data_geom(g));
}

void conv2d_winograd_nchw(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                          const WindowGeom& g, int m, WinogradAct act) {
  MYCEL_CHECK(x.dtype() == DType::float32 && w.dtype() == DType::float32 &&
                  y.dtype() == DType::float32 && (!bias || bias->dtype() == DType::float32),
              RuntimeError, "[conv2d] Winograd runs float32 only (backend bug)");
  run(x.data<float>(), w.data<float>(), false, bias ? bias->data<float>() : nullptr,
      y.data<float>(), g, m, act);
}

void conv2d_backprop_input_winograd_nchw(const Tensor& dy, const Tensor& w, Tensor& dx,
                                         const WindowGeom& g, int m) {
  MYCEL_CHECK(
      dy.dtype() == DType::float32 && w.dtype() == DType::float32 && dx.dtype() == DType::float32,
      RuntimeError, "[conv2d_backprop_input] Winograd runs float32 only (backend bug)");
  run(dy.data<float>(), w.data<float>(), true, nullptr, dx.data<float>(), bwd_data_geom(g), m,
      WinogradAct::kNone);
}

}  // namespace mycel::cpu
