#include "mycel/kernels/cpu/scoped_params.h"

namespace mycel::cpu {
namespace {

enum class Layout { kNone, kPending, kTaken, kInParams };

struct Scoped {
  PostOpRequest* post = nullptr;
  bool post_in_params = false;
  LayoutRequest layout;
  Layout layout_state = Layout::kNone;
  KernelParams params;  // what take_scoped_params() handed out
};
thread_local Scoped t_scoped;

}  // namespace

PostOpScope::PostOpScope(PostOpRequest* r) {
  r->applied = false;
  t_scoped.post = r;
  t_scoped.post_in_params = false;
}

PostOpScope::~PostOpScope() {
  Scoped& s = t_scoped;
  if (s.post_in_params) s.post->applied = s.params.post_applied;
  s.params.post_ops.clear();  // do not keep the operands alive
  s.post = nullptr;
  s.post_in_params = false;
}

LayoutScope::LayoutScope(const LayoutRequest& r) {
  t_scoped.layout = r;
  t_scoped.layout_state = Layout::kPending;
}

LayoutScope::~LayoutScope() {
  t_scoped.layout = LayoutRequest{};
  t_scoped.layout_state = Layout::kNone;
}

bool LayoutScope::taken() const {
  const Scoped& s = t_scoped;
  return s.layout_state == Layout::kTaken ||
         (s.layout_state == Layout::kInParams && s.params.layout_taken);
}

LayoutRequest take_layout() {
  Scoped& s = t_scoped;
  if (s.layout_state != Layout::kPending) return LayoutRequest{};
  s.layout_state = Layout::kTaken;
  return s.layout;
}

KernelParams* take_scoped_params() {
  Scoped& s = t_scoped;
  const bool post = s.post && !s.post_in_params;
  const bool layout = s.layout_state == Layout::kPending;
  if (!post && !layout) return nullptr;
  s.params = KernelParams{};
  if (post) {
    s.params.post_ops = s.post->ops;
    s.post_in_params = true;
  }
  if (layout) {
    s.params.src_blocked = s.layout.src_blocked;
    s.params.dst_blocked = s.layout.dst_blocked;
    s.params.const_weights = s.layout.const_weights;
    s.layout_state = Layout::kInParams;
  }
  return &s.params;
}

}  // namespace mycel::cpu
