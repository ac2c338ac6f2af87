// The lite runtime's per-thread requests (post-ops, activation layouts, constant weights), kept
// only until it passes KernelParams in its KernelContext as the graph backend does: a scope
// installs a request, and a oneDNN kernel launched without parameters takes it as its
// KernelParams (take_scoped_params), reporting back what it applied. Nothing else may use them
// (STYLE.md 16: decisions travel as data); the graph backend never does.
#pragma once
#include <vector>

#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// Post-ops asked of the next conv2d_dnnl/matmul_dnnl call on this thread; `applied` tells the
/// asker whether the primitive did them (else it must, by apply_post_ops).
struct PostOpRequest {
  std::vector<PostOp> ops;
  bool applied = false;
};

/// Installs `r` for the duration of a scope (the kernel call it wraps).
class PostOpScope {
 public:
  explicit PostOpScope(PostOpRequest* r);
  ~PostOpScope();
  PostOpScope(const PostOpScope&) = delete;
  PostOpScope& operator=(const PostOpScope&) = delete;
};

/// Which tensors of the next conv2d/pool2d call on this thread are channel-blocked, and whether
/// the conv's weights are constants (KernelParams has the same fields).
struct LayoutRequest {
  bool src_blocked = false;
  bool dst_blocked = false;
  bool const_weights = false;
};

/// Installs `r` for the duration of a scope.
class LayoutScope {
 public:
  explicit LayoutScope(const LayoutRequest& r);
  ~LayoutScope();
  LayoutScope(const LayoutScope&) = delete;
  LayoutScope& operator=(const LayoutScope&) = delete;
  /// Whether a kernel honoured the request (one that did not ran on NCHW: a runtime bug).
  bool taken() const;
};

/// Takes this thread's pending layout request (plain if none) for a kernel that reads only
/// const_weights (the int8 kernels).
LayoutRequest take_layout();

/// The pending requests of this thread as one KernelParams (nullptr if none), taken so that
/// nested calls do not see them; its result flags go back to the scopes.
KernelParams* take_scoped_params();

}  // namespace mycel::cpu
