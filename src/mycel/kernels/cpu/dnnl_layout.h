// Channel-blocked activations (oneDNN's nChw16c / nChw8c) for the graph backend: its layout step
// lets conv2d write its preferred blocked layout and pooling read and write it, so no reorder runs
// between them. A per-thread request (like PostOpScope) tells the next conv2d_dnnl/pool2d_dnnl
// call which of its tensors are blocked; tensors keep their logical NCHW shape, only their buffer
// is laid out (and sized) differently.
#pragma once
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// Channels per block of the blocked layout on this CPU (16 with AVX-512, else 8).
int64_t channel_block();
/// Bytes of an NCHW tensor of `shape` and `dtype` in the blocked layout (channels padded to
/// channel_block(); the padding is kept zero by oneDNN's primitives).
size_t blocked_nbytes(const Shape& shape, DType dtype);

/// Which tensors of the next oneDNN conv2d/pool2d forward call on this thread are blocked.
struct LayoutRequest {
  bool src_blocked = false;
  bool dst_blocked = false;
};

/// Installs `r` for the duration of a scope (the kernel call it wraps).
class LayoutScope {
 public:
  explicit LayoutScope(const LayoutRequest& r);
  ~LayoutScope();
  LayoutScope(const LayoutScope&) = delete;
  LayoutScope& operator=(const LayoutScope&) = delete;
};

/// Takes this thread's pending request (plain/plain if none), so nested calls do not see it.
LayoutRequest take_layout();

/// oneDNN descriptor of an NCHW tensor: nchw, or the blocked tag when `blocked`.
dnnl::memory::desc blocked_desc(const Shape& shape, DType dtype, bool blocked);

/// y (plain NCHW) := x (blocked), or the reverse with `to_blocked`; both of x's logical shape.
void reorder_blocked(const Tensor& x, Tensor& y, bool to_blocked);

}  // namespace mycel::cpu
