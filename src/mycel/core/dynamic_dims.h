// Dynamic dims while graph mode's analysis infers an op. Infer runs on concrete sizes, so the
// analysis puts a placeholder size in place of every dynamic dim (analysis/eval_op.cc). Shape
// checks that compare two sizes ask `dims_agree` instead of `==`: a placeholder agrees with
// any size, since the real size is known only when the program runs, and the backend's shape
// plan infers the op again on the real sizes, where the same check sees numbers and a mismatch
// is the op's ordinary error. Outside analysis no placeholder is active and dims_agree is `==`.
#pragma once
#include <cstdint>

#include "mycel/core/shape.h"

namespace mycel {

/// The placeholder size active on this thread, or 0 when none is.
int64_t dynamic_placeholder();
/// Whether d is the active placeholder (a dim known only at run time).
inline bool is_dynamic_placeholder(int64_t d) {
  int64_t p = dynamic_placeholder();
  return p != 0 && d == p;
}
/// a == b, or either one a dynamic dim.
inline bool dims_agree(int64_t a, int64_t b) {
  return a == b || is_dynamic_placeholder(a) || is_dynamic_placeholder(b);
}
/// Same rank and every dim agrees.
inline bool shapes_agree(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (!dims_agree(a[d], b[d])) return false;
  return true;
}
/// For `b` where `a` is the (possibly dynamic) dim an op requires: the static one of the two.
inline int64_t agreed_dim(int64_t a, int64_t b) { return is_dynamic_placeholder(a) ? b : a; }

/// Makes `placeholder` the active placeholder for the scope (analysis's infer runs).
class DynamicPlaceholderScope {
 public:
  explicit DynamicPlaceholderScope(int64_t placeholder);
  ~DynamicPlaceholderScope();
  DynamicPlaceholderScope(const DynamicPlaceholderScope&) = delete;
  DynamicPlaceholderScope& operator=(const DynamicPlaceholderScope&) = delete;

 private:
  int64_t saved_;
};

}  // namespace mycel
