// Vision transforms at the edges the Python tests do not reach: 1x1 images, extreme resize
// ratios, fuzzed JPEG/PNG bytes (run under ASan/UBSan to catch out-of-bounds reads).
#include <gtest/gtest.h>
#include <png.h>
#include <turbojpeg.h>

#include <cstring>
#include <random>

#include "mycel/data/transform.h"

namespace mycel::data {
namespace {

Tensor make_image(int64_t h, int64_t w, int64_t c, uint32_t seed) {
  Tensor t = Tensor::empty({h, w, c}, DType::uint8);
  std::mt19937 g(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(g());
  return t;
}

Tensor bytes_tensor(const std::vector<uint8_t>& b) {
  Tensor t = Tensor::empty({static_cast<int64_t>(b.size())}, DType::uint8);
  std::memcpy(t.data(), b.data(), b.size());
  return t;
}

std::vector<uint8_t> encode_jpeg(const Tensor& img) {
  tjhandle tj = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  int rc = tjCompress2(tj, img.data<uint8_t>(), int(img.dim(1)), 0, int(img.dim(0)), TJPF_RGB, &buf,
                       &size, TJSAMP_420, 90, 0);
  EXPECT_EQ(rc, 0);
  std::vector<uint8_t> out(buf, buf + size);
  tjFree(buf);
  tjDestroy(tj);
  return out;
}

std::vector<uint8_t> encode_png(const Tensor& img) {
  png_image pi;
  std::memset(&pi, 0, sizeof(pi));
  pi.version = PNG_IMAGE_VERSION;
  pi.width = uint32_t(img.dim(1));
  pi.height = uint32_t(img.dim(0));
  pi.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&pi, nullptr, &size, 0, img.data(), 0, nullptr));
  std::vector<uint8_t> out(size);
  EXPECT_TRUE(png_image_write_to_memory(&pi, out.data(), &size, 0, img.data(), 0, nullptr));
  out.resize(size);
  return out;
}

Tensor apply1(const std::shared_ptr<Transform>& t, const Tensor& x, uint64_t row = 0) {
  RowRng rng(7, row);
  return t->apply({x}, rng).at(0);
}

TEST(DataVision, DecodeRoundTripAndFuzz) {
  auto decode = make_transform("Decode", Params("Decode", {}));
  Tensor img = make_image(17, 23, 3, 1);
  auto png = encode_png(img), jpg = encode_jpeg(img);
  Tensor out = apply1(decode, bytes_tensor(png));
  ASSERT_EQ(out.shape(), (Shape{17, 23, 3}));
  EXPECT_EQ(std::memcmp(out.data(), img.data(), img.nbytes()), 0);
  EXPECT_EQ(apply1(decode, bytes_tensor(jpg)).shape(), (Shape{17, 23, 3}));
  std::mt19937 g(3);
  int errors = 0;
  for (const auto* src : {&png, &jpg}) {
    for (int it = 0; it < 400; ++it) {
      std::vector<uint8_t> b = *src;
      for (int k = 0; k < 1 + int(g() % 4); ++k) b[g() % b.size()] = static_cast<uint8_t>(g());
      b.resize(b.size() / 2 + g() % (b.size() / 2 + 1));
      try {
        Tensor d = apply1(decode, bytes_tensor(b));
        EXPECT_EQ(d.ndim(), 3);
      } catch (const RuntimeError&) {
        ++errors;
      }
    }
  }
  EXPECT_GT(errors, 0);
}

TEST(DataVision, TinyAndExtremeImages) {
  auto p = [](std::map<std::string, ParamValue> m) { return Params("t", std::move(m)); };
  Tensor one = make_image(1, 1, 3, 2), wide = make_image(2, 300, 3, 3);
  for (const char* interp : {"nearest", "linear", "cubic", "area"}) {
    auto r = make_transform("Resize", p({{"size", std::vector<int64_t>{37, 5}},
                                         {"interpolation", std::string(interp)}}));
    EXPECT_EQ(apply1(r, one).shape(), (Shape{37, 5, 3}));
    EXPECT_EQ(apply1(r, wide).shape(), (Shape{37, 5, 3}));
  }
  for (const char* mode : {"constant", "edge", "reflect", "symmetric"}) {
    auto pad = make_transform("Pad", p({{"padding", std::vector<int64_t>{5, 1, 0, 7}},
                                        {"padding_mode", std::string(mode)}}));
    EXPECT_EQ(apply1(pad, one).shape(), (Shape{9, 6, 3}));
  }
  auto rrc = make_transform("RandomResizedCrop", p({{"size", int64_t(8)}}));
  auto ra = make_transform("RandAugment", p({{"num_ops", int64_t(6)}, {"magnitude", int64_t(30)}}));
  auto rot =
      make_transform("RandomRotation",
                     p({{"degrees", 180.0}, {"expand", true}, {"resample", std::string("cubic")}}));
  for (uint64_t row = 0; row < 50; ++row) {
    EXPECT_EQ(apply1(rrc, one, row).shape(), (Shape{8, 8, 3}));
    EXPECT_EQ(apply1(rrc, wide, row).shape(), (Shape{8, 8, 3}));
    EXPECT_EQ(apply1(ra, one, row).shape(), (Shape{1, 1, 3}));
    EXPECT_EQ(apply1(ra, wide, row).shape(), (Shape{2, 300, 3}));
    EXPECT_GE(apply1(rot, one, row).numel(), 3);
  }
}

}  // namespace
}  // namespace mycel::data
