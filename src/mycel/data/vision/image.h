// Internal to the vision transforms: image shape checks, parameter parsing and the pixel kernels
// (resize, warp, pad, color) that several transforms share. Images are HWC (or HW) tensors.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mycel/data/transform.h"

namespace mycel::data::vision {

/// A per-image transform from a function: applied to each input column with the same random
/// draws (an image and its mask get the same crop), the first column advancing `rng`.
class ImageFn : public Transform {
 public:
  using Fn = std::function<Tensor(const Tensor&, RowRng&)>;
  ImageFn(std::string name, bool random, Fn fn, std::shared_ptr<const PixelStage> stage = nullptr)
      : name_(std::move(name)), random_(random), fn_(std::move(fn)), stage_(std::move(stage)) {}
  std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng& rng) const override;
  std::string name() const override { return name_; }
  bool is_random() const override { return random_; }
  const PixelStage* pixel_stage() const override { return stage_.get(); }

 private:
  std::string name_;
  bool random_;
  Fn fn_;
  std::shared_ptr<const PixelStage> stage_;
};

inline std::shared_ptr<Transform> image_fn(std::string name, bool random, ImageFn::Fn fn,
                                           std::shared_ptr<const PixelStage> stage = nullptr) {
  return std::make_shared<ImageFn>(std::move(name), random, std::move(fn), std::move(stage));
}

/// Height, width and channels of an image; `hw` marks a 2-d <H, W> tensor (one channel).
struct ImageShape {
  int64_t h = 0, w = 0, c = 1;
  bool hw = false;
};

/// Shape of an <H, W> or <H, W, C> image; ValueError naming `op` otherwise.
ImageShape image_shape(const Tensor& img, const std::string& op);
/// Throws TypeError naming `op` unless img is uint8 or float32 (what the pixel kernels handle).
void check_pixel_dtype(const Tensor& img, const std::string& op);
/// The one input of a single-column transform; ValueError naming `op` otherwise.
const Tensor& one_input(const std::vector<Tensor>& in, const std::string& op);
/// A new uninitialized image of size oh x ow with the channels/layout/dtype of `like`.
Tensor new_image(const ImageShape& like, int64_t oh, int64_t ow, DType dtype);

enum class Interp { nearest, linear, cubic, area };
enum class Border { constant, edge, reflect, symmetric };
Interp parse_interp(const Params& p, const std::string& key, Interp dflt);
Border parse_border(const Params& p, const std::string& key, Border dflt);
/// (h, w) from an int (square) or a pair; with `shorter_side` an int means "shorter side" and
/// comes back as (n, -1).
std::pair<int64_t, int64_t> parse_size(const Params& p, const std::string& key, bool shorter_side);
/// A fill value per channel from an int or a per-channel tuple (`c` known at apply time).
std::vector<double> fill_for(const std::vector<double>& fill, int64_t c, const std::string& op);

/// Crop [top, top+h) x [left, left+w); the box must lie inside the image.
Tensor crop(const Tensor& img, int64_t top, int64_t left, int64_t h, int64_t w);
/// Pads each side; constant mode uses `fill` (one value per channel).
Tensor pad(const Tensor& img, int64_t top, int64_t bottom, int64_t left, int64_t right, Border mode,
           const std::vector<double>& fill, const std::string& op);
/// Mirror image left-right (horizontal) or top-bottom.
Tensor flip(const Tensor& img, bool horizontal);
/// Resize to oh x ow (uint8 or float32): OpenCV conventions (see resize.cc).
Tensor resize(const Tensor& img, int64_t oh, int64_t ow, Interp interp, const std::string& op);
/// resize()'s linear/cubic/area kernel into a caller's buffer of oh*ow*s.c pixels (T = uint8_t
/// or float), with the tap tables cached per thread; the same arithmetic as resize().
template <class T>
void resize_into(const T* src, const ImageShape& s, int64_t oh, int64_t ow, Interp interp, T* dst);
/// Resize's output size for size (h, w), or (n, -1): the shorter side n, aspect kept.
std::pair<int64_t, int64_t> resized_size(const ImageShape& s, std::pair<int64_t, int64_t> size);
/// Output (x, y) samples input (m[0]x + m[1]y + m[2], m[3]x + m[4]y + m[5]); outside -> fill.
Tensor warp_affine(const Tensor& img, const double m[6], int64_t oh, int64_t ow, Interp interp,
                   const std::vector<double>& fill, const std::string& op);
/// Counter-clockwise rotation by `degrees` about `center` (default the middle pixel).
Tensor rotate(const Tensor& img, double degrees, Interp interp, bool expand,
              std::optional<std::pair<double, double>> center, const std::vector<double>& fill,
              const std::string& op);

// Color kernels (uint8 rounds and saturates; float32 clamps to [0, 1]). Gray is ITU-R 601-2 luma.
Tensor adjust_brightness(const Tensor& img, double factor);
Tensor adjust_contrast(const Tensor& img, double factor, const std::string& op);
Tensor adjust_saturation(const Tensor& img, double factor, const std::string& op);
Tensor adjust_hue(const Tensor& img, double shift, const std::string& op);
Tensor adjust_sharpness(const Tensor& img, double factor);
Tensor posterize(const Tensor& img, int bits, const std::string& op);
Tensor solarize(const Tensor& img, double threshold);
Tensor autocontrast(const Tensor& img);
Tensor equalize(const Tensor& img, const std::string& op);
Tensor invert(const Tensor& img);

}  // namespace mycel::data::vision
