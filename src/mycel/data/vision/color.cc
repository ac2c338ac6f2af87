// Color and value transforms: RandomColorAdjust, Normalize, Rescale, and the single-purpose
// enhancement ops (Invert, Equalize, AutoContrast, Posterize, Solarize, AdjustX) that RandAugment
// also uses. The kernels live in color_ops.cc.
#include <cmath>

#include "mycel/data/vision/image.h"
#include "mycel/data/vision/pixel_chain.h"

namespace mycel::data::vision {
namespace {

// Calls run(const T*) on img's pixels: uint8 and float32 as they are, other dtypes converted to
// float32 first (Normalize and Rescale read any numeric image).
template <class Run>
void with_pixels(const Tensor& img, Run&& run) {
  if (img.dtype() == DType::uint8)
    run(img.data<uint8_t>());
  else if (img.dtype() == DType::float32)
    run(img.data<float>());
  else
    run(img.to(DType::float32).data<float>());
}

// A (min, max) factor range; `center` is the identity (1 for factors, 0 for hue).
std::pair<double, double> factor_range(const Params& p, const std::string& key, double center,
                                       double lo_bound, double hi_bound) {
  auto v = p.get_floats(key, std::vector<double>{center, center});
  if (v.size() == 1) v = {std::max(lo_bound, center - v[0]), center + v[0]};
  if (v.size() != 2 || v[0] > v[1] || v[0] < lo_bound || v[1] > hi_bound)
    MYCEL_THROW(ValueError, "[", p.owner(), "] ", key,
                " must be a non-negative number or (min, max) within [", lo_bound, ", ", hi_bound,
                "]");
  return {v[0], v[1]};
}

double draw(std::pair<double, double> r, RowRng& rng) {
  return r.first == r.second ? r.first : rng.uniform(r.first, r.second);
}

// Channels of an image for Normalize: last axis (HWC) or first (CHW); 1 for <H, W>.
int64_t channels(const Tensor& img, bool hwc, const std::string& op) {
  if (img.ndim() == 2) return 1;
  if (img.ndim() != 3)
    MYCEL_THROW(ValueError, "[", op, "] expected an image of shape ",
                hwc ? "<H, W, C>" : "<C, H, W>", " or <H, W>, got shape ", shape_str(img.shape()));
  return hwc ? img.dim(2) : img.dim(0);
}

}  // namespace

MYCEL_REGISTER_DATA(vision_color) {
  register_transform("RandomColorAdjust", [](const Params& p, const TransformList&) {
    auto b = factor_range(p, "brightness", 1, 0, 1e9), c = factor_range(p, "contrast", 1, 0, 1e9);
    auto s = factor_range(p, "saturation", 1, 0, 1e9), h = factor_range(p, "hue", 0, -0.5, 0.5);
    std::string op = p.owner();
    // Fixed order brightness, contrast, saturation, hue; each factor drawn only if it can vary.
    return image_fn(op, true, [=](const Tensor& img, RowRng& rng) {
      double fb = draw(b, rng), fc = draw(c, rng), fs = draw(s, rng), fh = draw(h, rng);
      image_shape(img, op);
      check_pixel_dtype(img, op);
      Tensor x = img;
      if (fb != 1) x = adjust_brightness(x, fb);
      if (fc != 1) x = adjust_contrast(x, fc, op);
      if (fs != 1) x = adjust_saturation(x, fs, op);
      if (fh != 0) x = adjust_hue(x, fh, op);
      return x;
    });
  });
  register_transform("Normalize", [](const Params& p, const TransformList&) {
    auto mean = p.get_floats("mean"), std = p.get_floats("std");
    bool hwc = p.get_bool("is_hwc", true);
    if (mean.size() != std.size())
      MYCEL_THROW(ValueError, "[Normalize] mean and std must have the same length, got ",
                  mean.size(), " and ", std.size());
    for (double v : std)
      if (!(v > 0)) MYCEL_THROW(ValueError, "[Normalize] std values must be positive, got ", v);
    auto stage = std::make_shared<PixelStage>();
    stage->kind = PixelStage::Kind::normalize;
    stage->hwc = hwc;
    for (size_t i = 0; i < mean.size(); ++i) {
      stage->mean.push_back(static_cast<float>(mean[i]));
      stage->inv.push_back(static_cast<float>(1.0 / std[i]));
    }
    if (mean.empty()) stage = nullptr;  // apply reports the error
    return image_fn(
        "Normalize", false,
        [=](const Tensor& img, RowRng&) {
          int64_t c = channels(img, hwc, "Normalize");
          int64_t n = static_cast<int64_t>(mean.size());
          if (n != c && n != 1)
            MYCEL_THROW(ValueError, "[Normalize] mean/std have ", n,
                        " values but the image of shape ", shape_str(img.shape()), " has ", c,
                        " channels");
          std::vector<float> m(c), inv(c);
          for (int64_t i = 0; i < c; ++i) {
            m[i] = static_cast<float>(mean[n == 1 ? 0 : i]);
            inv[i] = static_cast<float>(1.0 / std[n == 1 ? 0 : i]);
          }
          Tensor out = Tensor::empty(img.shape(), DType::float32);
          float* d = out.data<float>();
          auto run = [&](const auto* s) {
            int64_t total = img.numel();
            if (hwc && c == 3) {  // the common RGB case, unrolled so the compiler vectorizes it
              const float m0 = m[0], m1 = m[1], m2 = m[2], i0 = inv[0], i1 = inv[1], i2 = inv[2];
              for (int64_t i = 0; i < total; i += 3) {
                d[i] = normalize_value(static_cast<float>(s[i]), m0, i0);
                d[i + 1] = normalize_value(static_cast<float>(s[i + 1]), m1, i1);
                d[i + 2] = normalize_value(static_cast<float>(s[i + 2]), m2, i2);
              }
            } else if (hwc) {
              for (int64_t i = 0; i < total; i += c)
                for (int64_t k = 0; k < c; ++k)
                  d[i + k] = normalize_value(static_cast<float>(s[i + k]), m[k], inv[k]);
            } else {
              int64_t plane = total / c;
              for (int64_t k = 0; k < c; ++k)
                for (int64_t i = k * plane; i < (k + 1) * plane; ++i)
                  d[i] = normalize_value(static_cast<float>(s[i]), m[k], inv[k]);
            }
          };
          with_pixels(img, run);
          return out;
        },
        stage);
  });
  register_transform("Rescale", [](const Params& p, const TransformList&) {
    float scale = static_cast<float>(p.get_float("rescale")),
          shift = static_cast<float>(p.get_float("shift"));
    auto stage = std::make_shared<PixelStage>();
    stage->kind = PixelStage::Kind::rescale;
    stage->scale = scale;
    stage->shift = shift;
    return image_fn(
        "Rescale", false,
        [=](const Tensor& img, RowRng&) {
          if (!img.defined() || is_bool(img.dtype()))
            MYCEL_THROW(TypeError, "[Rescale] expected a numeric tensor");
          Tensor out = Tensor::empty(img.shape(), DType::float32);
          float* d = out.data<float>();
          auto run = [&](const auto* s) {
            for (int64_t i = 0, n = img.numel(); i < n; ++i)
              d[i] = rescale_value(static_cast<float>(s[i]), scale, shift);
          };
          with_pixels(img, run);
          return out;
        },
        stage);
  });
  register_transform("ToTensor", [](const Params& p, const TransformList&) {
    auto it = p.values().find("output_type");
    DType to = DType::float32;
    if (it != p.values().end() && std::holds_alternative<std::string>(it->second))
      to = dtype_from_name(std::get<std::string>(it->second));
    else if (p.has("output_type"))
      to = p.get_dtype("output_type");
    if (!is_floating(to))
      MYCEL_THROW(ValueError, "[ToTensor] output_type must be a float type, got ", dtype_name(to));
    return image_fn("ToTensor", false, [to](const Tensor& img, RowRng&) {
      ImageShape s = image_shape(img, "ToTensor");
      Tensor f = img.to(DType::float32);
      Tensor out = Tensor::empty({s.c, s.h, s.w}, DType::float32);
      const float* src = f.data<float>();
      float* d = out.data<float>();
      const int64_t plane = s.h * s.w;
      for (int64_t ch = 0; ch < s.c; ++ch)
        for (int64_t i = 0; i < plane; ++i) d[ch * plane + i] = src[i * s.c + ch] * (1.f / 255.f);
      return out.to(to);
    });
  });
  register_transform("Invert", [](const Params&, const TransformList&) {
    return image_fn("Invert", false, [](const Tensor& img, RowRng&) { return invert(img); });
  });
  register_transform("Equalize", [](const Params&, const TransformList&) {
    return image_fn("Equalize", false,
                    [](const Tensor& img, RowRng&) { return equalize(img, "Equalize"); });
  });
  register_transform("AutoContrast", [](const Params&, const TransformList&) {
    return image_fn("AutoContrast", false,
                    [](const Tensor& img, RowRng&) { return autocontrast(img); });
  });
  register_transform("Posterize", [](const Params& p, const TransformList&) {
    int bits = static_cast<int>(p.get_int("bits"));
    if (bits < 1 || bits > 8)
      MYCEL_THROW(ValueError, "[Posterize] bits must be in [1, 8], got ", bits);
    return image_fn("Posterize", false,
                    [=](const Tensor& img, RowRng&) { return posterize(img, bits, "Posterize"); });
  });
  register_transform("Solarize", [](const Params& p, const TransformList&) {
    auto t = p.get_floats("threshold");
    if (t.size() != 1) MYCEL_THROW(NotSupported, "[Solarize] only a single threshold is supported");
    double thr = t[0];
    return image_fn("Solarize", false,
                    [=](const Tensor& img, RowRng&) { return solarize(img, thr); });
  });
  // AdjustBrightness(factor) etc.: the deterministic forms of RandomColorAdjust's steps.
  for (const char* name :
       {"AdjustBrightness", "AdjustContrast", "AdjustSaturation", "AdjustHue", "AdjustSharpness"}) {
    std::string n = name;
    register_transform(n, [n](const Params& p, const TransformList&) {
      double f = p.get_float(n == "AdjustHue" ? "hue_factor"
                                              : (n == "AdjustSharpness"    ? "sharpness_factor"
                                                 : n == "AdjustBrightness" ? "brightness_factor"
                                                 : n == "AdjustContrast"   ? "contrast_factor"
                                                                           : "saturation_factor"));
      if (n == "AdjustHue" ? (f < -0.5 || f > 0.5) : f < 0)
        MYCEL_THROW(ValueError, "[", n, "] factor out of range: ", f);
      return image_fn(n, false, [n, f](const Tensor& img, RowRng&) {
        if (n == "AdjustBrightness") return adjust_brightness(img, f);
        if (n == "AdjustContrast") return adjust_contrast(img, f, n);
        if (n == "AdjustSaturation") return adjust_saturation(img, f, n);
        if (n == "AdjustHue") return adjust_hue(img, f, n);
        return adjust_sharpness(img, f);
      });
    });
  }
}

}  // namespace mycel::data::vision
