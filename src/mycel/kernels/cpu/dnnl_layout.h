// oneDNN's preferred activation layout for the graph backend ("blocked" below): its layout step
// lets conv2d write the layout oneDNN's convolutions prefer on this CPU (NHWC for the brgemm
// kernels, nChw16c / nChw8c for the older blocked ones) and pooling read and write it, so no
// reorder runs between them. The launch's KernelParams (src_blocked, dst_blocked) tell
// conv2d_dnnl/pool2d_dnnl which of its tensors are in that layout; tensors keep their logical
// NCHW shape, only their buffer is laid out (and sized) differently.
#pragma once
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>

#include "mycel/core/tensor.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// The activation layout oneDNN's convolutions prefer here (nhwc, nChw16c or nChw8c), found once
/// by asking it; format_tag::undef when it is none of those (the layout step then stays off).
dnnl::memory::format_tag activation_tag();
/// Its name as the program listing shows it ("nhwc", "nChw16c", "nChw8c").
const char* activation_tag_name();
/// Channels per block of that layout (16, 8, or 1 for nhwc: no padding).
int64_t channel_block();
/// The `block` argument of conv_direct.h's kernels for a blocked output of oc channels.
inline int64_t direct_block(int64_t oc) { return channel_block() == 1 ? oc : channel_block(); }
/// The layout of blocked bf16 activations (the lite runtime's bf16 graphs): oneDNN's choice for
/// a bf16 convolution here (nhwc or nChw16c), undef where it has no jit bf16 convolution.
/// blocked_desc and blocked_nbytes use it for bf16 tensors.
dnnl::memory::format_tag bf16_activation_tag();
/// Bytes of an NCHW tensor of `shape` and `dtype` in the blocked layout (channels padded to
/// channel_block(); the padding is kept zero by oneDNN's primitives).
size_t blocked_nbytes(const Shape& shape, DType dtype);

/// oneDNN descriptor of an NCHW tensor: nchw, or activation_tag() when `blocked` (for bf16:
/// bf16_activation_tag()).
dnnl::memory::desc blocked_desc(const Shape& shape, DType dtype, bool blocked);

/// y (plain NCHW) := x (blocked), or the reverse with `to_blocked`; both of x's logical shape.
/// `slot` (graph mode) keeps the prepared reorder between launches.
void reorder_blocked(const Tensor& x, Tensor& y, bool to_blocked,
                     std::unique_ptr<KernelPrepared>* slot = nullptr);

}  // namespace mycel::cpu
