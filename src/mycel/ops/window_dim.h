// One spatial dim of a sliding window (output size and padding from pad_mode), shared by the 2-d
// (nn_conv.cc) and 3-d (nn_conv3d.cc) windowed ops so both read pad_mode the same way.
#pragma once
#include <cstdint>

#include "mycel/kernels/kernel_context.h"

namespace mycel {

enum class PadMode { kValid, kSame, kPad };

/// The op's `pad_mode` attribute ('valid', 'same' or 'pad', any case); ValueError otherwise.
PadMode pad_mode(const OpSchema& op, const Attrs& a);

/// Output size and padding (p0 before, p1 after) of one spatial dim of size `in` under kernel k,
/// stride s and dilation d. 'same' computes the padding, 'valid' zeroes it, 'pad' keeps p0/p1.
/// Throws ShapeError naming `dim` if the dilated kernel exceeds the padded input, and ValueError
/// if the sizes overflow int64.
void window_dim(const OpSchema& op, PadMode mode, const char* dim, int64_t in, int64_t k, int64_t s,
                int64_t d, int64_t& p0, int64_t& p1, int64_t& out);

}  // namespace mycel
