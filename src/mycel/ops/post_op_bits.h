// More PostOpBits (registry.h) for BackendTraits::accepts_post_ops / as_post_op: relu6 as a
// oneDNN clip(0, 6) post-op, and batch_norm in inference mode, which a convolution absorbs by
// folding it into its weights and bias (backend/fold_batch_norm.cc).
#pragma once
#include <cstdint>

namespace mycel {

inline constexpr uint8_t kPostRelu6 = 4;
/// An op with this as_post_op is y = x * s + t per channel (dim 1) when its `is_training`
/// attribute is false, s and t from its inputs 1-4 (scale, bias, mean, variance) and `epsilon`.
inline constexpr uint8_t kPostChannelAffine = 8;

}  // namespace mycel
