// Per-row transforms (vision and generic): C++ functions from some columns to new columns.
// Random transforms draw from a RowRng, which the engine seeds from (seed, epoch, row index), so
// results do not depend on the number of workers.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mycel/core/random.h"
#include "mycel/core/tensor.h"
#include "mycel/data/params.h"

namespace mycel::data {

namespace vision {
struct PixelStage;  // vision/pixel_chain.h: what a fusable per-pixel transform does
}

/// A deterministic random stream for one row: Philox keyed by the pipeline seed, with the row's
/// position as the counter, so the same row gets the same draws whatever thread runs it.
class RowRng {
 public:
  RowRng(uint64_t seed, uint64_t row_id, uint32_t salt = 0)
      : seed_(seed), row_(row_id), salt_(salt) {}
  /// Next uniform 32-bit integer.
  uint32_t next_u32();
  /// Uniform double in [0, 1).
  double uniform();
  /// Uniform double in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [lo, hi] (inclusive).
  int64_t randint(int64_t lo, int64_t hi);
  /// A child stream (for a nested transform), independent of this one.
  RowRng fork(uint32_t salt) const {
    return RowRng(seed_ ^ (0x9E3779B97F4A7C15ull * (salt + 1)), row_, salt_);
  }

 private:
  uint64_t seed_, row_;
  uint32_t salt_;
  uint32_t block_ = 0;
  uint32_t buf_[4] = {0, 0, 0, 0};
  int used_ = 4;
};

/// A transform over a row's selected columns.
class Transform {
 public:
  virtual ~Transform() = default;
  /// Maps input columns to output columns (usually one to one). Throws ValueError/TypeError that
  /// names the transform and the expected vs given shape/dtype on bad input.
  virtual std::vector<Tensor> apply(const std::vector<Tensor>& in, RowRng& rng) const = 0;
  /// Registered name, e.g. "Resize".
  virtual std::string name() const = 0;
  /// Whether apply() draws from rng.
  virtual bool is_random() const { return false; }
  /// Whether apply() accepts string columns (data/string_tensor.h); the map op refuses to pass
  /// them to the others, which would read the bytes as numbers.
  virtual bool takes_strings() const { return false; }
  /// A deterministic per-image transform that vision::fuse_transforms may merge with its
  /// neighbours into one pass (Resize, Rescale, Normalize, HWC2CHW, TypeCast to float32);
  /// nullptr for the others.
  virtual const vision::PixelStage* pixel_stage() const { return nullptr; }
};

using TransformList = std::vector<std::shared_ptr<Transform>>;
/// Builds a transform from its parameters and child transforms (Compose, RandomApply, ...).
using TransformFactory =
    std::function<std::shared_ptr<Transform>(const Params&, const TransformList&)>;

/// Registers a transform under a name (the Python class name, e.g. "RandomResizedCrop").
void register_transform(const std::string& name, TransformFactory factory);
/// Builds a registered transform; throws ValueError for an unknown name.
std::shared_ptr<Transform> make_transform(const std::string& name, const Params& params,
                                          const TransformList& children = {});
/// Names of registered transforms.
std::vector<std::string> transform_names();

/// Registers at static-initialization time: MYCEL_REGISTER_DATA(vision) { register_transform(...);
/// }
#define MYCEL_REGISTER_DATA(group)                       \
  static void mycel_register_data_##group();             \
  static const bool mycel_data_registered_##group = [] { \
    mycel_register_data_##group();                       \
    return true;                                         \
  }();                                                   \
  static void mycel_register_data_##group()

}  // namespace mycel::data
