// Color kernels on uint8 (values 0..255, results rounded to nearest and saturated) and float32
// (values 0..1, results clamped) images. The formulas are torchvision's/PIL's ImageEnhance:
// an adjustment by factor f blends the image with a "degenerate" image: out = f*img + (1-f)*deg,
// where deg is black (brightness), the mean gray level (contrast), the per-pixel gray
// (saturation) or a 3x3 smoothing (sharpness). Gray = 0.299 R + 0.587 G + 0.114 B (ITU-R 601-2).
#include <algorithm>
#include <array>
#include <cmath>

#include "mycel/data/vision/image.h"

namespace mycel::data::vision {
namespace {

template <class T>
constexpr float kBound = std::is_same_v<T, uint8_t> ? 255.f : 1.f;

template <class T>
inline T sat(float v) {
  v = std::min(std::max(v, 0.f), kBound<T>);
  if constexpr (std::is_same_v<T, uint8_t>)
    return static_cast<uint8_t>(v + 0.5f);
  else
    return v;
}

// Calls fn(TypeTag<T>) for a uint8 or float32 image.
template <class Fn>
Tensor visit_pixels(const Tensor& img, const std::string& op, Fn&& fn) {
  check_pixel_dtype(img, op);
  if (img.dtype() == DType::uint8) return fn(TypeTag<uint8_t>{});
  return fn(TypeTag<float>{});
}

// out[i] = f(in[i]) over all elements.
template <class T, class F>
Tensor map_elems(const Tensor& img, F f) {
  Tensor out = Tensor::empty(img.shape(), img.dtype());
  const T* s = img.data<T>();
  T* d = out.data<T>();
  for (int64_t i = 0, n = img.numel(); i < n; ++i) d[i] = f(s[i]);
  return out;
}

inline float gray(float r, float g, float b) { return 0.299f * r + 0.587f * g + 0.114f * b; }

int64_t rgb_or_gray(const Tensor& img, const std::string& op) {
  ImageShape s = image_shape(img, op);
  if (s.c != 1 && s.c != 3)
    MYCEL_THROW(ValueError, "[", op,
                "] expected an image with 1 or 3 channels <H, W, 3>, got shape ",
                shape_str(img.shape()));
  return s.c;
}

}  // namespace

Tensor adjust_brightness(const Tensor& img, double factor) {
  image_shape(img, "AdjustBrightness");
  float f = static_cast<float>(factor);
  return visit_pixels(img, "AdjustBrightness", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return map_elems<T>(img, [f](T v) { return sat<T>(f * static_cast<float>(v)); });
  });
}

Tensor adjust_contrast(const Tensor& img, double factor, const std::string& op) {
  int64_t c = rgb_or_gray(img, op);
  float f = static_cast<float>(factor);
  return visit_pixels(img, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = img.data<T>();
    int64_t npx = img.numel() / c;
    double sum = 0;
    for (int64_t i = 0; i < npx; ++i)
      sum += c == 3 ? gray(float(s[3 * i]), float(s[3 * i + 1]), float(s[3 * i + 2])) : float(s[i]);
    float base = static_cast<float>((1 - factor) * sum / npx);
    return map_elems<T>(img, [f, base](T v) { return sat<T>(f * static_cast<float>(v) + base); });
  });
}

Tensor adjust_saturation(const Tensor& img, double factor, const std::string& op) {
  if (rgb_or_gray(img, op) == 1) return img;  // gray has no saturation
  float f = static_cast<float>(factor);
  return visit_pixels(img, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor out = Tensor::empty(img.shape(), img.dtype());
    const T* s = img.data<T>();
    T* d = out.data<T>();
    for (int64_t i = 0, n = img.numel() / 3; i < n; ++i) {
      float r = s[3 * i], g = s[3 * i + 1], b = s[3 * i + 2];
      float base = (1 - f) * gray(r, g, b);
      d[3 * i] = sat<T>(f * r + base);
      d[3 * i + 1] = sat<T>(f * g + base);
      d[3 * i + 2] = sat<T>(f * b + base);
    }
    return out;
  });
}

Tensor adjust_hue(const Tensor& img, double shift, const std::string& op) {
  if (rgb_or_gray(img, op) == 1) return img;
  return visit_pixels(img, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor out = Tensor::empty(img.shape(), img.dtype());
    const T* s = img.data<T>();
    T* d = out.data<T>();
    const float shift6 = static_cast<float>(6.0 * (shift - std::floor(shift)));
    for (int64_t i = 0, n = img.numel() / 3; i < n; ++i) {
      // RGB -> hue in [0, 6), chroma/value; rotate the hue; back with the branch-free form
      // c_n = v - v*s*clamp(min(k, 4 - k), 0, 1), k = (n + h) mod 6, n = 5, 3, 1 (as colorsys).
      float r = s[3 * i], g = s[3 * i + 1], b = s[3 * i + 2];
      float mx = std::max({r, g, b}), mn = std::min({r, g, b}), dl = mx - mn;
      float h = 0.f;
      if (dl > 0) h = mx == r ? (g - b) / dl : (mx == g ? 2.f + (b - r) / dl : 4.f + (r - g) / dl);
      h += shift6;
      h = h < 0 ? h + 6.f : h;
      h = h >= 6.f ? h - 6.f : h;
      h = h >= 6.f ? h - 6.f : h;
      const float n3[3] = {5.f, 3.f, 1.f};
      for (int ch = 0; ch < 3; ++ch) {
        float kk = n3[ch] + h;
        kk = kk >= 6.f ? kk - 6.f : kk;
        float t = std::min(std::max(std::min(kk, 4.f - kk), 0.f), 1.f);
        d[3 * i + ch] = sat<T>(mx - dl * t);  // v*s = mx - mn
      }
    }
    return out;
  });
}

Tensor adjust_sharpness(const Tensor& img, double factor) {
  ImageShape sh = image_shape(img, "AdjustSharpness");
  float f = static_cast<float>(factor);
  return visit_pixels(img, "AdjustSharpness", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor out = img.clone();  // the border keeps its pixels (the blur is not defined there)
    const T* s = img.data<T>();
    T* d = out.data<T>();
    const int64_t W = sh.w, C = sh.c;
    for (int64_t y = 1; y + 1 < sh.h; ++y)
      for (int64_t x = 1; x + 1 < W; ++x)
        for (int64_t ch = 0; ch < C; ++ch) {
          float acc = 0.f;
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx)
              acc += (dx == 0 && dy == 0 ? 5.f : 1.f) * s[((y + dy) * W + x + dx) * C + ch];
          float blur = acc / 13.f;
          if constexpr (std::is_same_v<T, uint8_t>) blur = std::round(blur);
          float v = s[(y * W + x) * C + ch];
          d[(y * W + x) * C + ch] = sat<T>(f * v + (1 - f) * blur);
        }
    return out;
  });
}

Tensor posterize(const Tensor& img, int bits, const std::string& op) {
  image_shape(img, op);
  if (img.dtype() != DType::uint8)
    MYCEL_THROW(TypeError, "[", op, "] expected a uint8 image, got ", dtype_name(img.dtype()));
  if (bits < 0 || bits > 8)
    MYCEL_THROW(ValueError, "[", op, "] bits must be in [0, 8], got ", bits);
  uint8_t mask = static_cast<uint8_t>(~((1u << (8 - bits)) - 1));
  return map_elems<uint8_t>(img, [mask](uint8_t v) { return uint8_t(v & mask); });
}

Tensor solarize(const Tensor& img, double threshold) {
  image_shape(img, "Solarize");
  return visit_pixels(img, "Solarize", [&](auto tag) {
    using T = typename decltype(tag)::type;
    float thr = static_cast<float>(threshold);
    return map_elems<T>(img, [thr](T v) { return float(v) >= thr ? T(kBound<T> - v) : v; });
  });
}

Tensor invert(const Tensor& img) {
  image_shape(img, "Invert");
  return visit_pixels(img, "Invert", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return map_elems<T>(img, [](T v) { return T(kBound<T> - v); });
  });
}

Tensor autocontrast(const Tensor& img) {
  ImageShape sh = image_shape(img, "AutoContrast");
  return visit_pixels(img, "AutoContrast", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t C = sh.c, n = sh.h * sh.w;
    const T* s = img.data<T>();
    std::vector<float> lo(C, kBound<T>), hi(C, 0.f);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < C; ++ch) {
        lo[ch] = std::min(lo[ch], float(s[i * C + ch]));
        hi[ch] = std::max(hi[ch], float(s[i * C + ch]));
      }
    Tensor out = Tensor::empty(img.shape(), img.dtype());
    T* d = out.data<T>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < C; ++ch) {
        float v = s[i * C + ch];  // a flat channel stays as it is
        d[i * C + ch] =
            hi[ch] > lo[ch] ? sat<T>((v - lo[ch]) * (kBound<T> / (hi[ch] - lo[ch]))) : T(v);
      }
    return out;
  });
}

Tensor equalize(const Tensor& img, const std::string& op) {
  ImageShape sh = image_shape(img, op);
  if (img.dtype() != DType::uint8)
    MYCEL_THROW(TypeError, "[", op, "] expected a uint8 image, got ", dtype_name(img.dtype()));
  const int64_t C = sh.c, n = sh.h * sh.w;
  const uint8_t* s = img.data<uint8_t>();
  Tensor out = Tensor::empty(img.shape(), img.dtype());
  uint8_t* d = out.data<uint8_t>();
  for (int64_t ch = 0; ch < C; ++ch) {
    // PIL's ImageOps.equalize: a lookup table from the cumulative histogram, skipping the
    // count of the brightest level present.
    std::array<int64_t, 256> hist{};
    for (int64_t i = 0; i < n; ++i) ++hist[s[i * C + ch]];
    int64_t last = 255;
    while (last > 0 && hist[last] == 0) --last;
    int64_t step = (n - hist[last]) / 255;
    std::array<uint8_t, 256> lut;
    if (step == 0) {
      for (int v = 0; v < 256; ++v) lut[v] = uint8_t(v);
    } else {
      int64_t acc = step / 2;
      for (int v = 0; v < 256; ++v) {
        lut[v] = static_cast<uint8_t>(std::min<int64_t>(acc / step, 255));
        acc += hist[v];
      }
    }
    for (int64_t i = 0; i < n; ++i) d[i * C + ch] = lut[s[i * C + ch]];
  }
  return out;
}

}  // namespace mycel::data::vision
