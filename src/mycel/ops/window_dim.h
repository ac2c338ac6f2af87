// Sliding windows over any number of spatial dims, shared by the 2-d (nn_conv.cc) and 3-d
// (nn_conv3d.cc) windowed ops so both read their attributes and check their shapes the same way:
// the per-dim attributes, pad_mode and one dim's output size, and the convolution's checks.
#pragma once
#include <cstdint>

#include "mycel/kernels/kernel_context.h"
#include "mycel/ops/registry.h"

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

/// A per-dim attribute of n spatial dims: 1 value (every dim), n values, or n + 2 (MindSpore's
/// (1, 1, ...) form, whose leading two are ignored); each at least lo. `out` gets n values
/// (kernels call this every run: it allocates nothing).
void spatial_attr(const OpSchema& op, const Attrs& a, const char* name, size_t n, int64_t lo,
                  int64_t* out);

/// The 'pad' attribute of n spatial dims: 1 value, n (the same before and after each dim) or 2n
/// (before, after of each dim in turn); non-negative, and all 0 unless pad_mode is 'pad'.
/// p0 and p1 get n values each.
void pad_attr(const OpSchema& op, const Attrs& a, PadMode mode, size_t n, int64_t* p0, int64_t* p1);

/// The convolution's channel, group and kernel checks of input shape xs (N, C, spatial...)
/// against weight shape ws (O, C / groups, kernel...), forward and backward ops alike.
void check_conv_channels(const InferContext& c, const Shape& xs, const Shape& ws);

/// The optional bias (input 2) of a convolution with weight shape ws: dtype of x, shape (O,).
void check_conv_bias(const InferContext& c, const Shape& ws);

/// A backward op's full-shape attribute (input_size, filter_size) of `rank` non-negative values;
/// `dims` names them in the error ("N, C, H, W"). A `batch` >= 0 replaces the first value
/// (input_size's batch dim follows dout's, so MindSpore's -1 there is fine).
Shape full_shape_attr(const InferContext& c, const char* name, size_t rank, const char* dims,
                      int64_t batch = -1);

/// A backward op's 'dout' (input 0) must be `want`, the forward output for xs and ws.
void check_conv_dout(const InferContext& c, const Shape& want, const Shape& xs, const Shape& ws,
                     const char* forward);

/// The infer rule of a convolution's backward ops on rank-`rank` operands (dims names them,
/// "N, C, H, W"): backprop_input(dout, w) gives dx of 'input_size' (its batch dim taken from
/// dout), backprop_filter(dout, x) dw of 'filter_size'; check_dy(c, xs, ws) checks dout against
/// the forward's output for x shape xs and weight shape ws.
using ConvDyCheck = void (*)(const InferContext& c, const Shape& xs, const Shape& ws);
std::vector<TensorMeta> infer_conv_backprop(const InferContext& c, size_t rank, const char* dims,
                                            bool filter, ConvDyCheck check_dy);

}  // namespace mycel
