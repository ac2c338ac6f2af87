// How fuse_transforms cuts a transform list into fused runs, and the fused pass against the
// transforms run one by one (the Python tests check whole pipelines; these the segmenting rules
// and odd geometries: 1x1 images, extreme ratios, many channels).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "mycel/data/transform.h"
#include "mycel/data/vision/pixel_chain.h"

namespace mycel::data {
namespace {

Params P(std::map<std::string, ParamValue> m) { return Params("t", std::move(m)); }

std::shared_ptr<Transform> resize(int64_t h, int64_t w, const char* interp = "linear") {
  return make_transform(
      "Resize", P({{"size", std::vector<int64_t>{h, w}}, {"interpolation", std::string(interp)}}));
}
std::shared_ptr<Transform> rescale(double s, double b) {
  return make_transform("Rescale", P({{"rescale", s}, {"shift", b}}));
}
std::shared_ptr<Transform> hwc2chw() { return make_transform("HWC2CHW", P({})); }
std::shared_ptr<Transform> normalize(std::vector<double> m, std::vector<double> s) {
  return make_transform("Normalize", P({{"mean", m}, {"std", s}}));
}

std::vector<std::pair<size_t, bool>> shape_of(const std::vector<vision::ChainSegment>& segs) {
  std::vector<std::pair<size_t, bool>> out;  // (length, fused)
  for (const auto& s : segs) out.emplace_back(s.end - s.begin, s.chain != nullptr);
  return out;
}

TEST(PixelChain, SegmentsStartAtEachResizeAndNeedTwoStages) {
  auto flip = make_transform("RandomHorizontalFlip", P({}));
  TransformList ts{
      flip, resize(4, 4),  rescale(2, 0),           hwc2chw(),    resize(2, 2), rescale(1, 1),
      flip, rescale(1, 0), resize(3, 3, "nearest"), rescale(1, 0)};
  using V = std::vector<std::pair<size_t, bool>>;
  EXPECT_EQ(shape_of(vision::fuse_transforms(ts)),
            (V{{1, false}, {3, true}, {2, true}, {1, false}, {1, false}, {1, false}, {1, false}}));
  EXPECT_EQ(shape_of(vision::fuse_transforms(ts, false)).size(), ts.size());
  setenv("MYCEL_DATA_FUSE", "0", 1);
  EXPECT_EQ(shape_of(vision::fuse_transforms(ts)).size(), ts.size());
  unsetenv("MYCEL_DATA_FUSE");
}

// The fused pass equals the transforms one by one, bit for bit, or declines where they throw.
void check_same(const TransformList& ts, const Tensor& img) {
  auto segs = vision::fuse_transforms(ts);
  ASSERT_EQ(segs.size(), 1u);
  ASSERT_TRUE(segs[0].chain);
  RowRng rng(0, 0);
  std::vector<Tensor> plain{img};
  bool threw = false;
  try {
    for (const auto& t : ts) plain = t->apply(plain, rng);
  } catch (const std::exception&) {
    threw = true;
  }
  std::vector<Tensor> fused;
  bool ok = segs[0].chain->apply({img}, fused);
  if (threw) {
    EXPECT_FALSE(ok);
    return;
  }
  ASSERT_TRUE(ok);
  ASSERT_EQ(fused[0].shape(), plain[0].shape());
  ASSERT_EQ(fused[0].dtype(), plain[0].dtype());
  EXPECT_EQ(std::memcmp(fused[0].data(), plain[0].data(), plain[0].nbytes()), 0);
}

TEST(PixelChain, EqualsTheTransformsOneByOne) {
  std::mt19937 g(3);
  auto image = [&](Shape s, DType dt) {
    Tensor t = Tensor::empty(s, dt);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (dt == DType::uint8)
        t.data<uint8_t>()[i] = static_cast<uint8_t>(g());
      else
        t.data<float>()[i] = static_cast<float>(g() % 1000) / 7.f;
    }
    return t;
  };
  for (DType dt : {DType::uint8, DType::float32}) {
    for (const char* interp : {"linear", "cubic", "area"}) {
      check_same({resize(1, 1, interp), rescale(0.5, 1)}, image({9, 13, 3}, dt));
      check_same({resize(31, 2, interp), rescale(0.5, 1), hwc2chw()}, image({1, 1, 2}, dt));
      check_same({resize(17, 40, interp), hwc2chw()}, image({5, 3, 5}, dt));  // no float stage
      check_same({resize(8, 8, interp), normalize({1, 2, 3, 4}, {2, 3, 4, 5}), hwc2chw()},
                 image({8, 20, 4}, dt));
      check_same({resize(8, 8, interp), rescale(3, -1)}, image({30, 30}, dt));  // <H, W>
    }
    check_same({rescale(1, 0), hwc2chw()}, image({6, 6}, dt));                     // HWC2CHW throws
    check_same({rescale(1, 0), normalize({1, 2}, {1, 1})}, image({6, 6, 3}, dt));  // throws
  }
}

}  // namespace
}  // namespace mycel::data
