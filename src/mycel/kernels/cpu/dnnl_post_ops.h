// Post-ops for the oneDNN conv2d/matmul primitives, requested per thread by the graph backend's
// fused kernels. The op's own kernel stays the one place that computes the geometry and builds
// the primitive; a scoped request lets it append "relu" or "add a row vector" to that primitive.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// One operation applied to the primitive's float32 result before it is stored.
struct PostOp {
  // max(y, 0); y + v with v of shape (N,) along the last dim; min(max(y, 0), 6) (the lite runtime)
  enum class Kind { kRelu, kAddRow, kRelu6 };
  Kind kind;
  Tensor operand;  // kAddRow: the row vector
};

/// The post-ops asked of the next conv2d_dnnl/matmul_dnnl call on this thread; `applied` tells
/// the asker whether the primitive did them (oneDNN may lack an implementation: then it must).
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

/// Takes this thread's pending request (nullptr if none), so nested fallback calls do not see it.
PostOpRequest* take_post_ops();
/// A cache-key fragment naming the post-ops ("" for none).
std::string post_ops_key(const PostOpRequest* r);
/// Appends r's post-ops to `attr`; kAddRow operands get `row_md` (the dst's rank, 1 x ... x N).
void append_post_ops(dnnl::primitive_attr& attr, const PostOpRequest* r,
                     const dnnl::memory::desc& row_md);
/// Adds the execution arguments of r's binary post-ops.
void add_post_op_args(std::unordered_map<int, dnnl::memory>& args, const PostOpRequest* r,
                      const dnnl::memory::desc& row_md);
/// The same post-ops as plain loops over a float32 result (when the primitive could not take them).
void apply_post_ops(const std::vector<PostOp>& ops, Tensor& y);

}  // namespace mycel::cpu
