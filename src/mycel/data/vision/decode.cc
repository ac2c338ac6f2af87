// Decode: JPEG (libjpeg-turbo's TurboJPEG API) and PNG (libpng) file bytes -> HWC uint8 RGB, as
// MindSpore's Decode. Corrupt or truncated data raises RuntimeError naming Decode; libpng's
// errors come back through longjmp to the one function that owns the png structs.
#include <png.h>
#include <turbojpeg.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

#include "mycel/data/vision/image.h"

namespace mycel::data::vision {
namespace {

// Refuse absurd header sizes before allocating (a corrupt header can claim 65535^2 pixels).
constexpr int64_t kMaxPixels = int64_t(1) << 28;

void check_dims(int64_t w, int64_t h, const char* fmt) {
  if (w <= 0 || h <= 0 || w * h > kMaxPixels)
    MYCEL_THROW(RuntimeError, "[Decode] ", fmt, " header gives an invalid size ", w, " x ", h);
}

// One decompressor per worker thread: creating it costs more than decoding a small image.
tjhandle jpeg_handle() {
  struct Holder {
    tjhandle h = tjInitDecompress();
    ~Holder() {
      if (h) tjDestroy(h);
    }
  };
  thread_local Holder holder;
  if (!holder.h) MYCEL_THROW(RuntimeError, "[Decode] cannot create a JPEG decompressor");
  return holder.h;
}

Tensor decode_jpeg(const uint8_t* data, size_t n) {
  tjhandle tj = jpeg_handle();
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, data, static_cast<unsigned long>(n), &w, &h, &subsamp, &colorspace) !=
      0)
    MYCEL_THROW(RuntimeError, "[Decode] invalid JPEG data: ", tjGetErrorStr2(tj));
  check_dims(w, h, "JPEG");
  // Warnings (a truncated file, a corrupt entropy segment) are errors: a half-gray image would
  // silently train the model on garbage. LIMITSCANS bounds the work of a hostile progressive file.
  const int flags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;
  bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  Tensor out = Tensor::empty({h, w, 3}, DType::uint8);
  if (!cmyk) {
    if (tjDecompress2(tj, data, static_cast<unsigned long>(n), out.data<uint8_t>(), w, 0, h,
                      TJPF_RGB, flags) != 0)
      MYCEL_THROW(RuntimeError, "[Decode] corrupt JPEG data: ", tjGetErrorStr2(tj));
    return out;
  }
  // libjpeg cannot convert CMYK to RGB: decode CMYK and convert (Adobe's inverted storage).
  std::vector<uint8_t> buf(static_cast<size_t>(w) * h * 4);
  if (tjDecompress2(tj, data, static_cast<unsigned long>(n), buf.data(), w, 0, h, TJPF_CMYK,
                    flags) != 0)
    MYCEL_THROW(RuntimeError, "[Decode] corrupt JPEG data: ", tjGetErrorStr2(tj));
  uint8_t* d = out.data<uint8_t>();
  for (int64_t i = 0, np = int64_t(w) * h; i < np; ++i) {
    int k = buf[4 * i + 3];
    for (int c = 0; c < 3; ++c)
      d[3 * i + c] = static_cast<uint8_t>((buf[4 * i + c] * k + 127) / 255);
  }
  return out;
}

// libpng state reached from its C callbacks: the input and the first error message.
struct PngSource {
  const uint8_t* data;
  size_t size, pos;
  char message[200];
};

void png_read(png_structp png, png_bytep out, png_size_t len) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (len > src->size - src->pos) png_error(png, "unexpected end of file");  // longjmps
  std::memcpy(out, src->data + src->pos, len);
  src->pos += len;
}

void png_on_error(png_structp png, png_const_charp msg) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof(src->message), "%s", msg);
  png_longjmp(png, 1);
}

void png_on_warning(png_structp, png_const_charp) {}  // benign (e.g. an unknown chunk)

// Decodes into `out` (allocated here after the header); returns an error message or nullptr.
// No C++ object with a destructor is created between setjmp and the libpng calls.
const char* decode_png_into(PngSource* src, Tensor* out) {
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, src, png_on_error, png_on_warning);
  if (!png) return "cannot create a PNG reader";
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return "cannot create a PNG reader";
  }
  static thread_local std::vector<png_bytep> rows;  // outlives any longjmp; reused per thread
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return src->message;
  }
  png_set_read_fn(png, src, png_read);
  // By default libpng reports some data corruption as a "benign" warning and decodes on: a bad
  // zlib check (Adler-32) met after the last row, a bad CRC on an ancillary chunk. Make every
  // such check an error, so corrupt data never decodes silently. png_set_option takes a bool:
  // passing PNG_OPTION_OFF (2) would turn the Adler-32 skip ON.
  png_set_benign_errors(png, 0);
  png_set_crc_action(png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT);
  png_set_option(png, PNG_IGNORE_ADLER32, 0);
  png_set_user_limits(png, 1 << 20, 1 << 20);
  png_read_info(png, info);
  png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  if (int64_t(w) * h > kMaxPixels) png_error(png, "image too large");
  int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  // Normalize every PNG flavor to 8-bit RGB, as PIL's convert("RGB") does.
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != size_t(w) * 3) png_error(png, "unexpected row layout");
  *out = Tensor::empty({int64_t(h), int64_t(w), 3}, DType::uint8);
  rows.resize(h);
  for (png_uint_32 y = 0; y < h; ++y) rows[y] = out->data<uint8_t>() + size_t(y) * w * 3;
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return nullptr;
}

Tensor decode_png(const uint8_t* data, size_t n) {
  PngSource src{data, n, 0, {0}};
  Tensor out;
  if (const char* err = decode_png_into(&src, &out))
    MYCEL_THROW(RuntimeError, "[Decode] corrupt PNG data: ", err);
  return out;
}

Tensor decode(const Tensor& bytes) {
  if (!bytes.defined() || bytes.ndim() != 1 || bytes.dtype() != DType::uint8)
    MYCEL_THROW(ValueError, "[Decode] expected the file bytes as a 1-d uint8 tensor, got ",
                bytes.defined() ? dtype_name(bytes.dtype()) : "None", " of shape ",
                bytes.defined() ? shape_str(bytes.shape()) : "()");
  const uint8_t* d = bytes.data<uint8_t>();
  size_t n = static_cast<size_t>(bytes.numel());
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return decode_jpeg(d, n);
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (n >= 8 && std::memcmp(d, kPng, 8) == 0) return decode_png(d, n);
  MYCEL_THROW(RuntimeError, "[Decode] unsupported image format (expected JPEG or PNG bytes; ", n,
              " bytes starting ", n ? int(d[0]) : -1, ")");
}

}  // namespace

MYCEL_REGISTER_DATA(vision_decode) {
  register_transform("Decode", [](const Params& p, const TransformList&) {
    if (p.has("to_pil") && p.get_bool("to_pil"))
      MYCEL_THROW(NotSupported, "[Decode] to_pil=True is not supported (images are numpy arrays)");
    return image_fn("Decode", false, [](const Tensor& bytes, RowRng&) { return decode(bytes); });
  });
}

}  // namespace mycel::data::vision
