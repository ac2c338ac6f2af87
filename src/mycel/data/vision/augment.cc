// RandAugment (Cubuk et al. 2019) as torchvision and MindSpore define it: num_ops operations
// drawn uniformly from 14, each at the same magnitude bin, signed ones negated with probability
// 1/2. (UniformAugment, a composite over user transforms, is in generic.cc.)
#include <cmath>

#include "mycel/data/vision/image.h"

namespace mycel::data::vision {
namespace {

enum class Op {
  identity,
  shear_x,
  shear_y,
  translate_x,
  translate_y,
  rotate,
  brightness,
  color,
  contrast,
  sharpness,
  posterize,
  solarize,
  autocontrast,
  equalize
};
constexpr int kNumOps = 14;

struct RandAugment : Transform {
  int64_t num_ops, magnitude, bins;
  Interp interp;
  std::vector<double> fill;

  std::string name() const override { return "RandAugment"; }
  bool is_random() const override { return true; }

  // Value of bin `magnitude` in linspace(lo, hi, bins).
  double lin(double lo, double hi) const {
    return bins == 1 ? lo : lo + (hi - lo) * double(magnitude) / double(bins - 1);
  }

  Tensor apply_op(const Tensor& img, Op op, bool negate) const {
    ImageShape s = image_shape(img, "RandAugment");
    double sign = negate ? -1.0 : 1.0;
    auto affine = [&](double m0, double m1, double m2, double m3, double m4, double m5) {
      double m[6] = {m0, m1, m2, m3, m4, m5};
      return warp_affine(img, m, s.h, s.w, interp, fill, "RandAugment");
    };
    switch (op) {
      case Op::identity:
        return img;
      case Op::shear_x: {  // x' = x + k*y about the top-left corner: sample x = x' - k*y'
        double k = sign * lin(0, 0.3);
        return affine(1, -k, 0, 0, 1, 0);
      }
      case Op::shear_y: {
        double k = sign * lin(0, 0.3);
        return affine(1, 0, 0, -k, 1, 0);
      }
      case Op::translate_x:  // whole pixels, as torchvision's int(magnitude)
        return affine(1, 0, -std::trunc(sign * lin(0, 150.0 / 331.0 * s.w)), 0, 1, 0);
      case Op::translate_y:
        return affine(1, 0, 0, 0, 1, -std::trunc(sign * lin(0, 150.0 / 331.0 * s.h)));
      case Op::rotate:
        return rotate(img, sign * lin(0, 30), interp, false, std::nullopt, fill, "RandAugment");
      case Op::brightness:
        return adjust_brightness(img, 1 + sign * lin(0, 0.9));
      case Op::color:
        return adjust_saturation(img, 1 + sign * lin(0, 0.9), "RandAugment");
      case Op::contrast:
        return adjust_contrast(img, 1 + sign * lin(0, 0.9), "RandAugment");
      case Op::sharpness:
        return adjust_sharpness(img, 1 + sign * lin(0, 0.9));
      case Op::posterize: {  // 8 - round(bin / ((bins - 1) / 4)) bits
        double q = bins == 1 ? 0 : double(magnitude) / ((bins - 1) / 4.0);
        return posterize(img, 8 - static_cast<int>(std::nearbyint(q)), "RandAugment");
      }
      case Op::solarize:
        return solarize(img, lin(255.0, 0.0));
      case Op::autocontrast:
        return autocontrast(img);
      case Op::equalize:
        return equalize(img, "RandAugment");
    }
    return img;
  }

  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng& rng) const override {
    const Tensor& img = one_input(in, "RandAugment");
    ImageShape s = image_shape(img, "RandAugment");
    if (img.dtype() != DType::uint8 || (s.c != 1 && s.c != 3))
      MYCEL_THROW(ValueError,
                  "[RandAugment] expected a uint8 image of shape <H, W, 3> or <H, W>, got ",
                  dtype_name(img.dtype()), " of shape ", shape_str(img.shape()));
    Tensor x = img;
    for (int64_t i = 0; i < num_ops; ++i) {
      Op op = static_cast<Op>(rng.randint(0, kNumOps - 1));
      bool negate = rng.uniform() < 0.5;  // drawn for every op so the stream layout is fixed
      bool is_signed = op >= Op::shear_x && op <= Op::sharpness;
      x = apply_op(x, op, is_signed && negate);
    }
    return {x};
  }
};

}  // namespace

MYCEL_REGISTER_DATA(vision_augment) {
  register_transform("RandAugment", [](const Params& p, const TransformList&) {
    auto t = std::make_shared<RandAugment>();
    t->num_ops = p.get_int("num_ops", 2);
    t->magnitude = p.get_int("magnitude", 9);
    t->bins = p.get_int("num_magnitude_bins", 31);
    t->interp = parse_interp(p, "interpolation", Interp::nearest);
    t->fill = p.get_floats("fill_value", std::vector<double>{0.0});
    if (t->num_ops < 0)
      MYCEL_THROW(ValueError, "[RandAugment] num_ops must be >= 0, got ", t->num_ops);
    if (t->bins < 2)
      MYCEL_THROW(ValueError, "[RandAugment] num_magnitude_bins must be >= 2, got ", t->bins);
    if (t->magnitude < 0 || t->magnitude >= t->bins)
      MYCEL_THROW(ValueError, "[RandAugment] magnitude must be in [0, ", t->bins, "), got ",
                  t->magnitude);
    if (t->fill.size() != 1 && t->fill.size() != 3)
      MYCEL_THROW(ValueError, "[RandAugment] fill_value must be an int or a 3-tuple");
    return t;
  });
}

}  // namespace mycel::data::vision
