// Fusion of per-image transforms: a run of deterministic per-pixel transforms (Resize, Rescale,
// Normalize, HWC2CHW, TypeCast to float32) becomes one pass per image that allocates nothing but
// its output (or writes straight into a batch: MapBatchOp, engine/batch_op.cc): no intermediate
// image per transform. The pass does the same arithmetic as the transforms one by one, in the same
// order, so its output equals theirs bit for bit. Anything the pass does not cover (another
// dtype, a string column, a shape the transforms would reject) makes it decline, and the caller
// runs the transforms one by one: same results and same errors as without fusion.
#pragma once
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mycel/data/vision/image.h"

namespace mycel::data::vision {

/// What a fusable transform does to an image (Transform::pixel_stage).
struct PixelStage {
  enum class Kind { resize, rescale, normalize, hwc2chw, to_float32 };
  Kind kind = Kind::rescale;
  std::pair<int64_t, int64_t> size{0, 0};  // resize: (h, w), or (shorter side, -1)
  Interp interp = Interp::linear;          // resize: linear, cubic or area (never nearest)
  float scale = 1, shift = 0;              // rescale: v * scale + shift
  std::vector<float> mean, inv;            // normalize: (v - mean[k]) * inv[k]
  bool hwc = true;                         // normalize: channels on the last axis (else first)
};

/// The arithmetic of Rescale and Normalize, shared with the fused pass so that both round alike
/// (an explicit fma: whether the compiler contracts v * scale + shift must not differ between
/// the two).
inline float rescale_value(float v, float scale, float shift) { return std::fma(v, scale, shift); }
inline float normalize_value(float v, float mean, float inv) { return (v - mean) * inv; }

/// One float stage of a one-channel image: fma(v, a, b) (Rescale), or (v - a) * b (Normalize).
struct FloatStep {
  bool sub_mul = false;
  float a = 0, b = 0;
};
/// Bilinear resize of a one-channel uint8 image, its rounding to uint8, the conversion to float
/// and `steps`, in one pass per output row (resize.cc): the same bits as resize_into<uint8_t>
/// followed by the stages one by one, without the intermediate image. False (nothing written)
/// where the taps are not bilinear or the image has several channels.
bool resize_u8c1_float(const uint8_t* src, const ImageShape& s, int64_t oh, int64_t ow,
                       Interp interp, const FloatStep* steps, int nsteps, float* dst);

/// How one image goes through a chain: the output's shape and dtype, found from the input's
/// shape and dtype alone.
struct PixelPlan {
  ImageShape in;
  DType in_dtype = DType::uint8, out_dtype = DType::uint8;
  bool resize = false, chw = false, to_float = false;
  int64_t oh = 0, ow = 0;
  Interp interp = Interp::linear;
  Shape out_shape;
  int64_t out_numel = 0;
  // The float stages in order: rescale, or normalize (per channel when per_channel).
  struct Step {
    bool normalize = false, per_channel = false;
    float a = 0, b = 0;              // rescale: scale, shift; scalar normalize: mean, inv
    const PixelStage* st = nullptr;  // per-channel normalize: its mean/inv vectors
  };
  std::vector<Step> steps;
};

/// Whether a chain may resize, round and scale a one-channel uint8 image in one pass per row
/// (resize_u8c1_float): MYCEL_DATA_ROWPASS is unset or not "0" (read when a chain is built).
bool row_pass_enabled();

/// A run of two or more fusable transforms, run as one pass.
class PixelChain {
 public:
  explicit PixelChain(std::vector<const PixelStage*> stages)
      : stages_(std::move(stages)), row_pass_(row_pass_enabled()) {}
  /// The plan for one image, or false when the pass does not cover it (then run the transforms
  /// one by one: they give the result, or the error, the user would get without fusion).
  bool plan(const Tensor& img, PixelPlan& p) const;
  /// Writes the image's output (plan.out_numel values of plan.out_dtype) at dst.
  void run_into(const Tensor& img, const PixelPlan& p, void* dst) const;
  /// Each column through the chain (the transforms' own multi-column rule: every column
  /// transformed alike); false, with `out` untouched, when a column is not covered.
  bool apply(const std::vector<Tensor>& in, std::vector<Tensor>& out) const;

 private:
  std::vector<const PixelStage*> stages_;
  bool row_pass_;  // resize_u8c1_float where it applies
};

/// A transform list cut into segments: [begin, end) with a chain when it fused (two or more
/// fusable transforms in a row, a Resize only first), or one unfused transform.
struct ChainSegment {
  size_t begin = 0, end = 0;
  std::shared_ptr<PixelChain> chain;
};
/// Segments of ts; with fuse false (or MYCEL_DATA_FUSE=0 in the environment), one per transform.
std::vector<ChainSegment> fuse_transforms(const TransformList& ts, bool fuse = true);
/// Whether fusion is on: MYCEL_DATA_FUSE is unset or not "0" (read at each pipeline build).
bool fusion_enabled();

}  // namespace mycel::data::vision
