// Shared image helpers: shape checks, parameter parsing, and the byte-moving kernels (crop, pad,
// flip) that work for every dtype because they never look at pixel values.
#include "mycel/data/vision/image.h"

#include <cstring>

namespace mycel::data::vision {

std::vector<Tensor> ImageFn::apply(const std::vector<Tensor>& in, RowRng& rng) const {
  if (in.empty())
    MYCEL_THROW(ValueError, "[", name_, "] expects at least one input column, got none");
  RowRng start = rng;
  std::vector<Tensor> out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    RowRng copy = start;
    out.push_back(fn_(in[i], i == 0 ? rng : copy));
  }
  return out;
}

ImageShape image_shape(const Tensor& img, const std::string& op) {
  if (!img.defined() || (img.ndim() != 2 && img.ndim() != 3))
    MYCEL_THROW(ValueError, "[", op, "] expected an image of shape <H, W> or <H, W, C>, got shape ",
                img.defined() ? shape_str(img.shape()) : "None");
  ImageShape s;
  s.h = img.dim(0);
  s.w = img.dim(1);
  s.hw = img.ndim() == 2;
  s.c = s.hw ? 1 : img.dim(2);
  if (s.h <= 0 || s.w <= 0 || s.c <= 0)
    MYCEL_THROW(ValueError, "[", op, "] expected a non-empty image, got shape ",
                shape_str(img.shape()));
  return s;
}

void check_pixel_dtype(const Tensor& img, const std::string& op) {
  if (img.dtype() != DType::uint8 && img.dtype() != DType::float32)
    MYCEL_THROW(TypeError, "[", op, "] expected a uint8 or float32 image, got ",
                dtype_name(img.dtype()));
}

const Tensor& one_input(const std::vector<Tensor>& in, const std::string& op) {
  if (in.size() != 1)
    MYCEL_THROW(ValueError, "[", op, "] expects one input column, got ", in.size());
  return in[0];
}

Tensor new_image(const ImageShape& like, int64_t oh, int64_t ow, DType dtype) {
  return like.hw ? Tensor::empty({oh, ow}, dtype) : Tensor::empty({oh, ow, like.c}, dtype);
}

Interp parse_interp(const Params& p, const std::string& key, Interp dflt) {
  if (!p.has(key)) return dflt;
  std::string s = p.get_str(key);
  if (s == "nearest") return Interp::nearest;
  if (s == "linear" || s == "bilinear") return Interp::linear;
  if (s == "cubic" || s == "bicubic") return Interp::cubic;
  if (s == "area") return Interp::area;
  MYCEL_THROW(ValueError, "[", p.owner(), "] unsupported interpolation '", s,
              "' (expected Inter.NEAREST, LINEAR, CUBIC or AREA)");
}

Border parse_border(const Params& p, const std::string& key, Border dflt) {
  if (!p.has(key)) return dflt;
  std::string s = p.get_str(key);
  if (s == "constant") return Border::constant;
  if (s == "edge") return Border::edge;
  if (s == "reflect") return Border::reflect;
  if (s == "symmetric") return Border::symmetric;
  MYCEL_THROW(ValueError, "[", p.owner(), "] unsupported padding_mode '", s,
              "' (expected Border.CONSTANT, EDGE, REFLECT or SYMMETRIC)");
}

std::pair<int64_t, int64_t> parse_size(const Params& p, const std::string& key, bool shorter_side) {
  std::vector<int64_t> v = p.get_ints(key);
  if (v.size() != 1 && v.size() != 2)
    MYCEL_THROW(ValueError, "[", p.owner(), "] ", key, " must be an int or a pair (h, w), got ",
                v.size(), " values");
  for (int64_t x : v)
    if (x <= 0) MYCEL_THROW(ValueError, "[", p.owner(), "] ", key, " must be positive, got ", x);
  if (v.size() == 1)
    return shorter_side ? std::make_pair(v[0], int64_t(-1)) : std::make_pair(v[0], v[0]);
  return {v[0], v[1]};
}

std::vector<double> fill_for(const std::vector<double>& fill, int64_t c, const std::string& op) {
  if (fill.size() == 1) return std::vector<double>(c, fill[0]);
  if (static_cast<int64_t>(fill.size()) != c)
    MYCEL_THROW(ValueError, "[", op, "] fill_value has ", fill.size(), " values but the image has ",
                c, " channels");
  return fill;
}

Tensor crop(const Tensor& img, int64_t top, int64_t left, int64_t h, int64_t w) {
  ImageShape s = image_shape(img, "crop");
  Tensor out = new_image(s, h, w, img.dtype());
  size_t px = s.c * itemsize(img.dtype());
  const char* src = static_cast<const char*>(img.data());
  char* dst = static_cast<char*>(out.data());
  for (int64_t y = 0; y < h; ++y)
    std::memcpy(dst + y * w * px, src + ((top + y) * s.w + left) * px, w * px);
  return out;
}

namespace {

// Source index for padded position i of an axis of length n (-1: use the fill value).
int64_t border_index(int64_t i, int64_t n, Border mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case Border::constant:
      return -1;
    case Border::edge:
      return i < 0 ? 0 : n - 1;
    case Border::reflect: {  // ... 2 1 | 0 1 2 | 1 0 ...  (numpy 'reflect')
      if (n == 1) return 0;
      int64_t p = 2 * (n - 1);
      i = (i < 0 ? -i : i) % p;
      return i >= n ? p - i : i;
    }
    case Border::symmetric: {  // ... 1 0 | 0 1 2 | 2 1 ...  (numpy 'symmetric')
      int64_t p = 2 * n;
      i = ((i % p) + p) % p;
      return i >= n ? p - 1 - i : i;
    }
  }
  return -1;
}

}  // namespace

Tensor pad(const Tensor& img, int64_t top, int64_t bottom, int64_t left, int64_t right, Border mode,
           const std::vector<double>& fill, const std::string& op) {
  ImageShape s = image_shape(img, op);
  if (top < 0 || bottom < 0 || left < 0 || right < 0)
    MYCEL_THROW(ValueError, "[", op, "] padding must be non-negative");
  int64_t oh = s.h + top + bottom, ow = s.w + left + right;
  Tensor out = new_image(s, oh, ow, img.dtype());
  size_t es = itemsize(img.dtype()), px = s.c * es;
  // The fill pixel in the image's dtype.
  std::vector<char> fill_px(px);
  std::vector<double> f = fill_for(fill, s.c, op);
  convert_elements(f.data(), DType::float64, fill_px.data(), img.dtype(), s.c);
  std::vector<int64_t> xs(ow);
  for (int64_t x = 0; x < ow; ++x) xs[x] = border_index(x - left, s.w, mode);
  const char* src = static_cast<const char*>(img.data());
  char* dst = static_cast<char*>(out.data());
  for (int64_t y = 0; y < oh; ++y) {
    int64_t sy = border_index(y - top, s.h, mode);
    char* drow = dst + y * ow * px;
    if (sy < 0) {
      for (int64_t x = 0; x < ow; ++x) std::memcpy(drow + x * px, fill_px.data(), px);
      continue;
    }
    const char* srow = src + sy * s.w * px;
    for (int64_t x = 0; x < left; ++x)
      std::memcpy(drow + x * px, xs[x] < 0 ? fill_px.data() : srow + xs[x] * px, px);
    std::memcpy(drow + left * px, srow, s.w * px);
    for (int64_t x = left + s.w; x < ow; ++x)
      std::memcpy(drow + x * px, xs[x] < 0 ? fill_px.data() : srow + xs[x] * px, px);
  }
  return out;
}

namespace {
template <class U>
void flip_rows(const U* src, U* dst, int64_t h, int64_t w, int64_t c) {
  for (int64_t y = 0; y < h; ++y) {
    const U* srow = src + y * w * c;
    U* drow = dst + y * w * c;
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) drow[x * c + k] = srow[(w - 1 - x) * c + k];
  }
}
}  // namespace

Tensor flip(const Tensor& img, bool horizontal) {
  ImageShape s = image_shape(img, horizontal ? "HorizontalFlip" : "VerticalFlip");
  Tensor out = new_image(s, s.h, s.w, img.dtype());
  size_t es = itemsize(img.dtype()), row = s.w * s.c * es;
  if (!horizontal) {
    for (int64_t y = 0; y < s.h; ++y)
      std::memcpy(static_cast<char*>(out.data()) + y * row,
                  static_cast<const char*>(img.data()) + (s.h - 1 - y) * row, row);
    return out;
  }
  // Elements moved as same-size unsigned words: one typed loop per element size.
  switch (es) {
    case 1:
      flip_rows(img.data<uint8_t>(), out.data<uint8_t>(), s.h, s.w, s.c);
      break;
    case 2:
      flip_rows(img.data<uint16_t>(), out.data<uint16_t>(), s.h, s.w, s.c);
      break;
    case 4:
      flip_rows(img.data<uint32_t>(), out.data<uint32_t>(), s.h, s.w, s.c);
      break;
    default:
      flip_rows(img.data<uint64_t>(), out.data<uint64_t>(), s.h, s.w, s.c);
      break;
  }
  return out;
}

}  // namespace mycel::data::vision
