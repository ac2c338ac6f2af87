// Geometric transforms: Resize, crops, flips, rotation, Pad, HWC2CHW. Parameters are checked
// when the transform is built; image shapes when it is applied.
#include <array>
#include <cmath>
#include <cstring>

#include "mycel/data/vision/image.h"
#include "mycel/data/vision/pixel_chain.h"

namespace mycel::data::vision {
namespace {

// (left, top, right, bottom) from MindSpore's padding: int, (lr, tb) or (l, t, r, b).
std::array<int64_t, 4> parse_padding(const Params& p, const std::string& key) {
  std::vector<int64_t> v = p.get_ints(key);
  for (int64_t x : v)
    if (x < 0) MYCEL_THROW(ValueError, "[", p.owner(), "] ", key, " must be non-negative, got ", x);
  if (v.size() == 1) return {v[0], v[0], v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1], v[0], v[1]};
  if (v.size() == 4) return {v[0], v[1], v[2], v[3]};
  MYCEL_THROW(ValueError, "[", p.owner(), "] ", key, " must have 1, 2 or 4 values, got ", v.size());
}

double parse_prob(const Params& p) {
  double prob = p.get_float("prob", 0.5);
  if (!(prob >= 0 && prob <= 1))
    MYCEL_THROW(ValueError, "[", p.owner(), "] prob must be in [0, 1], got ", prob);
  return prob;
}

// Crop of size (h, w) centered in the image, zero-padded first where the image is smaller.
Tensor center_crop(const Tensor& img, int64_t h, int64_t w, const std::string& op) {
  ImageShape s = image_shape(img, op);
  Tensor src = img;
  if (h > s.h || w > s.w) {
    int64_t ph = std::max<int64_t>(0, h - s.h), pw = std::max<int64_t>(0, w - s.w);
    src = pad(img, ph / 2, ph - ph / 2, pw / 2, pw - pw / 2, Border::constant, {0.0}, op);
    s = image_shape(src, op);
  }
  return crop(src, (s.h - h) / 2, (s.w - w) / 2, h, w);
}

// torchvision's RandomResizedCrop box: (top, left, h, w).
std::array<int64_t, 4> rrc_box(const ImageShape& s, const std::vector<double>& scale,
                               const std::vector<double>& ratio, int64_t attempts, RowRng& rng) {
  double area = double(s.h) * s.w, lr0 = std::log(ratio[0]), lr1 = std::log(ratio[1]);
  for (int64_t i = 0; i < attempts; ++i) {
    double target = area * rng.uniform(scale[0], scale[1]);
    double aspect = std::exp(rng.uniform(lr0, lr1));
    int64_t w = std::llround(std::sqrt(target * aspect)),
            h = std::llround(std::sqrt(target / aspect));
    if (w > 0 && h > 0 && w <= s.w && h <= s.h)
      return {rng.randint(0, s.h - h), rng.randint(0, s.w - w), h, w};
  }
  // Fallback: the largest central crop whose aspect ratio is within range.
  double in_ratio = double(s.w) / s.h;
  int64_t w = s.w, h = s.h;
  if (in_ratio < ratio[0])
    h = std::min<int64_t>(s.h, std::llround(w / ratio[0]));
  else if (in_ratio > ratio[1])
    w = std::min<int64_t>(s.w, std::llround(h * ratio[1]));
  return {(s.h - h) / 2, (s.w - w) / 2, h, w};
}

// Rotation parameters shared by Rotate and RandomRotation.
struct RotateArgs {
  Interp interp;
  bool expand;
  std::optional<std::pair<double, double>> center;
  std::vector<double> fill;
};

RotateArgs rotate_args(const Params& p) {
  RotateArgs a{parse_interp(p, "resample", Interp::nearest), p.get_bool("expand", false),
               std::nullopt, p.get_floats("fill_value", std::vector<double>{0.0})};
  if (p.has("center")) {
    auto c = p.get_floats("center");
    if (c.size() != 2)
      MYCEL_THROW(ValueError, "[", p.owner(), "] center must be (x, y), got ", c.size(), " values");
    a.center = std::make_pair(c[0], c[1]);
  }
  return a;
}

}  // namespace

// Output size of Resize: an int resizes the shorter side keeping the aspect ratio.
std::pair<int64_t, int64_t> resized_size(const ImageShape& s, std::pair<int64_t, int64_t> size) {
  if (size.second > 0) return size;
  int64_t n = size.first;
  if (s.h <= s.w) return {n, std::max<int64_t>(1, static_cast<int64_t>(double(n) * s.w / s.h))};
  return {std::max<int64_t>(1, static_cast<int64_t>(double(n) * s.h / s.w)), n};
}

MYCEL_REGISTER_DATA(vision_geometry) {
  register_transform("Resize", [](const Params& p, const TransformList&) {
    auto size = parse_size(p, "size", true);
    Interp interp = parse_interp(p, "interpolation", Interp::linear);
    std::string op = p.owner();
    std::shared_ptr<PixelStage> stage;
    if (interp != Interp::nearest) {  // nearest copies any dtype: left to its own kernel
      stage = std::make_shared<PixelStage>();
      stage->kind = PixelStage::Kind::resize;
      stage->size = size;
      stage->interp = interp;
    }
    return image_fn(
        op, false,
        [=](const Tensor& img, RowRng&) {
          auto [oh, ow] = resized_size(image_shape(img, op), size);
          return resize(img, oh, ow, interp, op);
        },
        stage);
  });
  register_transform("CenterCrop", [](const Params& p, const TransformList&) {
    auto [h, w] = parse_size(p, "size", false);
    std::string op = p.owner();
    return image_fn(op, false,
                    [=](const Tensor& img, RowRng&) { return center_crop(img, h, w, op); });
  });
  register_transform("Crop", [](const Params& p, const TransformList&) {
    auto c = p.get_ints("coordinates");
    if (c.size() != 2 || c[0] < 0 || c[1] < 0)
      MYCEL_THROW(ValueError, "[Crop] coordinates must be (top, left) >= 0");
    auto [h, w] = parse_size(p, "size", false);
    int64_t top = c[0], left = c[1];
    return image_fn("Crop", false, [=](const Tensor& img, RowRng&) {
      ImageShape s = image_shape(img, "Crop");
      if (top + h > s.h || left + w > s.w)
        MYCEL_THROW(ValueError, "[Crop] box (top=", top, ", left=", left, ", h=", h, ", w=", w,
                    ") exceeds the image of shape ", shape_str(img.shape()));
      return crop(img, top, left, h, w);
    });
  });
  register_transform("RandomCrop", [](const Params& p, const TransformList&) {
    auto [h, w] = parse_size(p, "size", false);
    std::array<int64_t, 4> padding =
        p.has("padding") ? parse_padding(p, "padding") : std::array<int64_t, 4>{};
    bool pad_if_needed = p.get_bool("pad_if_needed", false);
    auto fill = p.get_floats("fill_value", std::vector<double>{0.0});
    Border mode = parse_border(p, "padding_mode", Border::constant);
    std::string op = p.owner();
    return image_fn(op, true, [=](const Tensor& img, RowRng& rng) {
      auto [l, t, r, b] = padding;
      Tensor x = (l || t || r || b) ? pad(img, t, b, l, r, mode, fill, op) : img;
      ImageShape s = image_shape(x, op);
      if (pad_if_needed && (s.h < h || s.w < w)) {  // torchvision: pad the shortfall on both sides
        int64_t ph = std::max<int64_t>(0, h - s.h), pw = std::max<int64_t>(0, w - s.w);
        x = pad(x, ph, ph, pw, pw, mode, fill, op);
        s = image_shape(x, op);
      }
      if (s.h < h || s.w < w)
        MYCEL_THROW(ValueError, "[", op, "] crop size (", h, ", ", w,
                    ") is larger than the (padded) image of shape ", shape_str(x.shape()));
      int64_t top = rng.randint(0, s.h - h), left = rng.randint(0, s.w - w);
      return crop(x, top, left, h, w);
    });
  });
  register_transform("RandomResizedCrop", [](const Params& p, const TransformList&) {
    auto [h, w] = parse_size(p, "size", false);
    auto scale = p.get_floats("scale", std::vector<double>{0.08, 1.0});
    auto ratio = p.get_floats("ratio", std::vector<double>{3.0 / 4, 4.0 / 3});
    if (scale.size() != 2 || scale[0] < 0 || scale[0] > scale[1])
      MYCEL_THROW(ValueError, "[RandomResizedCrop] scale must be (min, max) with 0 <= min <= max");
    if (ratio.size() != 2 || ratio[0] <= 0 || ratio[0] > ratio[1])
      MYCEL_THROW(ValueError, "[RandomResizedCrop] ratio must be (min, max) with 0 < min <= max");
    Interp interp = parse_interp(p, "interpolation", Interp::linear);
    int64_t attempts = p.get_int("max_attempts", 10);
    if (attempts < 1)
      MYCEL_THROW(ValueError, "[RandomResizedCrop] max_attempts must be >= 1, got ", attempts);
    std::string op = p.owner();
    return image_fn(op, true, [=](const Tensor& img, RowRng& rng) {
      auto [top, left, ch, cw] = rrc_box(image_shape(img, op), scale, ratio, attempts, rng);
      return resize(crop(img, top, left, ch, cw), h, w, interp, op);
    });
  });
  for (bool horizontal : {true, false}) {
    std::string name = horizontal ? "HorizontalFlip" : "VerticalFlip";
    register_transform(name, [=](const Params& p, const TransformList&) {
      return image_fn(name, false,
                      [=](const Tensor& img, RowRng&) { return flip(img, horizontal); });
    });
    register_transform("Random" + name, [=](const Params& p, const TransformList&) {
      double prob = parse_prob(p);
      return image_fn("Random" + name, true, [=](const Tensor& img, RowRng& rng) {
        if (rng.uniform() < prob) return flip(img, horizontal);
        image_shape(img, "Random" + name);
        return img;
      });
    });
  }
  register_transform("Rotate", [](const Params& p, const TransformList&) {
    double degrees = p.get_float("degrees");
    RotateArgs a = rotate_args(p);
    return image_fn("Rotate", false, [=](const Tensor& img, RowRng&) {
      return rotate(img, degrees, a.interp, a.expand, a.center, a.fill, "Rotate");
    });
  });
  register_transform("RandomRotation", [](const Params& p, const TransformList&) {
    auto d = p.get_floats("degrees");
    if (d.size() == 1) {
      if (d[0] < 0)
        MYCEL_THROW(ValueError, "[RandomRotation] degrees must be non-negative, got ", d[0]);
      d = {-d[0], d[0]};
    }
    if (d.size() != 2 || d[0] > d[1])
      MYCEL_THROW(ValueError,
                  "[RandomRotation] degrees must be a number or (min, max) with min <= max");
    RotateArgs a = rotate_args(p);
    return image_fn("RandomRotation", true, [=](const Tensor& img, RowRng& rng) {
      double angle = rng.uniform(d[0], d[1]);
      return rotate(img, angle, a.interp, a.expand, a.center, a.fill, "RandomRotation");
    });
  });
  register_transform("Pad", [](const Params& p, const TransformList&) {
    auto padding = parse_padding(p, "padding");
    auto fill = p.get_floats("fill_value", std::vector<double>{0.0});
    Border mode = parse_border(p, "padding_mode", Border::constant);
    return image_fn("Pad", false, [=](const Tensor& img, RowRng&) {
      auto [l, t, r, b] = padding;
      return pad(img, t, b, l, r, mode, fill, "Pad");
    });
  });
  register_transform("HWC2CHW", [](const Params& p, const TransformList&) {
    auto stage = std::make_shared<PixelStage>();
    stage->kind = PixelStage::Kind::hwc2chw;
    return image_fn(
        "HWC2CHW", false,
        [](const Tensor& img, RowRng&) {
          if (img.ndim() != 3)
            MYCEL_THROW(ValueError, "[HWC2CHW] expected an image of shape <H, W, C>, got shape ",
                        shape_str(img.shape()));
          int64_t h = img.dim(0), w = img.dim(1), c = img.dim(2);
          Tensor out = Tensor::empty({c, h, w}, img.dtype());
          size_t es = itemsize(img.dtype());
          const char* s = static_cast<const char*>(img.data());
          char* d = static_cast<char*>(out.data());
          auto transpose = [&](auto tag) {
            using U = typename decltype(tag)::type;
            const U* su = reinterpret_cast<const U*>(s);
            U* du = reinterpret_cast<U*>(d);
            for (int64_t ch = 0; ch < c; ++ch)
              for (int64_t i = 0; i < h * w; ++i) du[ch * h * w + i] = su[i * c + ch];
          };
          if (es == 1)
            transpose(TypeTag<uint8_t>{});
          else if (es == 2)
            transpose(TypeTag<uint16_t>{});
          else if (es == 4)
            transpose(TypeTag<uint32_t>{});
          else
            transpose(TypeTag<uint64_t>{});
          return out;
        },
        stage);
  });
}

}  // namespace mycel::data::vision
