// int8 pooling kernels (see quant.h): max pooling of uint8 planes and average pooling with
// exact int32 window sums requantized to the next layer's scale.
#include <algorithm>

#include "mycel/kernels/cpu/quant.h"
#include "mycel/kernels/cpu/quant_loop.h"

namespace mycel::cpu {

void max_pool2d_u8(const Tensor& x, Tensor& y, const WindowGeom& g) {
  const uint8_t* X = x.data<uint8_t>();
  uint8_t* Y = y.data<uint8_t>();
  if (g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.pt == 0 && g.pl == 0 &&
      g.oh * 2 <= g.h &&
      g.ow * 2 <= g.w) {  // the common 2x2 / 2 pooling: no window clipping, a tight loop
    for (int64_t p = 0; p < g.n * g.c; ++p) {
      const uint8_t* xp = X + p * g.h * g.w;
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const uint8_t* r0 = xp + 2 * oh * g.w;
        const uint8_t* r1 = r0 + g.w;
        for (int64_t ow = 0; ow < g.ow; ++ow)
          *Y++ =
              std::max(std::max(r0[2 * ow], r0[2 * ow + 1]), std::max(r1[2 * ow], r1[2 * ow + 1]));
      }
    }
    return;
  }
  for (int64_t p = 0; p < g.n * g.c; ++p) {
    const uint8_t* xp = X + p * g.h * g.w;
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      const int64_t h0 = std::max<int64_t>(oh * g.sh - g.pt, 0),
                    h1 = std::min(oh * g.sh - g.pt + g.kh, g.h);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const int64_t w0 = std::max<int64_t>(ow * g.sw - g.pl, 0),
                      w1 = std::min(ow * g.sw - g.pl + g.kw, g.w);
        uint8_t m = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) m = std::max(m, xp[h * g.w + w]);
        *Y++ = m;
      }
    }
  }
}

void qavg_pool2d(const Tensor& x, Tensor& y, const WindowGeom& g, const QPoolSpec& q, bool nhwc) {
  // Channels a chunk at a time through the stack: int32 window sums, then their float averages.
  constexpr int64_t kChunk = 256;
  int32_t acc[kChunk];
  alignas(32) float avg[kChunk];
  const uint8_t* X = x.data<uint8_t>();
  uint8_t* Y = y.data<uint8_t>();
  const int64_t plane = g.h * g.w, oplane = g.oh * g.ow;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      const int64_t hs = oh * g.sh - g.pt, h0 = std::max<int64_t>(hs, 0),
                    h1 = std::min(hs + g.kh, g.h);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const int64_t ws = ow * g.sw - g.pl, w0 = std::max<int64_t>(ws, 0),
                      w1 = std::min(ws + g.kw, g.w);
        // Padding dequantizes to 0: it adds nothing to the sum, and counts only when included.
        const int64_t valid = std::max<int64_t>(h1 - h0, 0) * std::max<int64_t>(w1 - w0, 0);
        const int64_t count = q.count_include_pad ? g.kh * g.kw : valid;
        const float inv = count > 0 ? q.x_scale / static_cast<float>(count) : 0.0f;
        for (int64_t c0 = 0; c0 < g.c; c0 += kChunk) {
          const int64_t len = std::min(kChunk, g.c - c0);
          std::fill(acc, acc + len, static_cast<int32_t>(-valid * q.x_zp));
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) {
              if (nhwc) {
                const uint8_t* px = X + ((n * g.h + h) * g.w + w) * g.c + c0;
                for (int64_t c = 0; c < len; ++c) acc[c] += px[c];
              } else {
                const uint8_t* px = X + (n * g.c + c0) * plane + h * g.w + w;
                for (int64_t c = 0; c < len; ++c) acc[c] += px[c * plane];
              }
            }
          for (int64_t c = 0; c < len; ++c) avg[c] = static_cast<float>(acc[c]) * inv;
          if (nhwc) {
            quantize_loop(avg, Y + ((n * g.oh + oh) * g.ow + ow) * g.oc + c0, len, q.y_scale,
                          q.y_zp);
          } else {
            uint8_t one[kChunk];
            quantize_loop(avg, one, len, q.y_scale, q.y_zp);
            uint8_t* py = Y + (n * g.oc + c0) * oplane + oh * g.ow + ow;
            for (int64_t c = 0; c < len; ++c) py[c * oplane] = one[c];
          }
        }
      }
    }
}

}  // namespace mycel::cpu
