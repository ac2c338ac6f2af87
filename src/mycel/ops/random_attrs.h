// The attributes every random op reads (random.cc, random_dist.cc, random_more.cc): MindSpore's
// seed / seed2 pair and the sample shape.
#pragma once
#include "mycel/ops/registry.h"

namespace mycel {

/// Attributes seed and seed2 must be >= 0; ValueError naming the op otherwise.
void check_seeds(const InferContext& c);

/// The `shape` attribute (non-negative dims) followed by `extra`, whose element count fits in
/// int64 with room for 16-byte elements; ValueError naming the op otherwise.
Shape sample_shape(const InferContext& c, const Shape& extra = {});

}  // namespace mycel
