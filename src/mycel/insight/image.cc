// Image summaries: an NCHW batch becomes one HWC uint8 grid, encoded as PNG with libpng.
#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>

#include "mycel/core/error.h"
#include "mycel/insight/detail.h"

namespace mycel::insight::detail {

Canvas image_canvas(const Tensor& t) {
  const int64_t n = t.dim(0), ch = t.dim(1), h = t.dim(2), w = t.dim(3);
  std::vector<double> x = to_doubles(t);
  // Pixel values: floats in [0, 1] scale by 255; other floats stretch [min, max] to [0, 255].
  double lo = 0, hi = 0;
  bool any = false;
  for (double v : x)
    if (std::isfinite(v)) {
      lo = any ? std::min(lo, v) : v;
      hi = any ? std::max(hi, v) : v;
      any = true;
    }
  double offset = 0, scale = 1;
  if (is_floating(t.dtype()) || is_bool(t.dtype())) {
    if (lo >= 0 && hi <= 1)
      scale = 255;
    else if (hi > lo)
      offset = lo, scale = 255 / (hi - lo);
  }
  Canvas c;
  const int64_t cols = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(n))));
  const int64_t rows = cols ? (n + cols - 1) / cols : 0;
  c.height = static_cast<int>(rows * h);
  c.width = static_cast<int>(cols * w);
  c.channels = static_cast<int>(ch);
  c.pixels.assign(static_cast<size_t>(c.height) * c.width * ch, 0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t top = (i / cols) * h, left = (i % cols) * w;
    for (int64_t k = 0; k < ch; ++k)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t z = 0; z < w; ++z) {
          double v = x[((i * ch + k) * h + y) * w + z];
          v = std::isfinite(v) ? std::nearbyint((v - offset) * scale) : 0;
          c.pixels[((top + y) * c.width + left + z) * ch + k] =
              static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
        }
  }
  return c;
}

namespace {
struct PngSink {
  std::string out;
  std::string error;
};
void png_write(png_structp png, png_bytep data, png_size_t n) {
  static_cast<PngSink*>(png_get_io_ptr(png))->out.append(reinterpret_cast<const char*>(data), n);
}
void png_flush(png_structp) {}
void png_on_error(png_structp png, png_const_charp msg) {
  static_cast<PngSink*>(png_get_error_ptr(png))->error = msg;
  std::longjmp(png_jmpbuf(png), 1);
}
void png_on_warning(png_structp, png_const_charp) {}
}  // namespace

std::string encode_png(const Canvas& c) {
  static const int kColor[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                               PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGBA};
  MYCEL_CHECK(c.channels >= 1 && c.channels <= 4, ValueError, "[ImageSummary] ", c.channels,
              " channels cannot be written as PNG (1, 3 or 4 expected)");
  PngSink sink;
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, png_on_error, png_on_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  MYCEL_CHECK(png && info, RuntimeError, "[ImageSummary] libpng could not allocate its state");
  std::vector<png_bytep> rows(c.height);
  if (setjmp(png_jmpbuf(png))) {  // libpng errors land here (longjmp from png_on_error)
    png_destroy_write_struct(&png, &info);
    MYCEL_THROW(RuntimeError, "[ImageSummary] PNG encoding failed: ", sink.error);
  }
  png_set_write_fn(png, &sink, png_write, png_flush);
  png_set_IHDR(png, info, c.width, c.height, 8, kColor[c.channels], PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, 1);
  for (int y = 0; y < c.height; ++y)
    rows[y] =
        const_cast<png_bytep>(c.pixels.data() + static_cast<size_t>(y) * c.width * c.channels);
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return std::move(sink.out);
}

}  // namespace mycel::insight::detail
