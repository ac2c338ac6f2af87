// Post-ops for the oneDNN conv2d/matmul primitives, asked by the graph backend's fused kernels
// (and the lite runtime) through the launch's KernelParams (kernels/kernel_context.h). The op's
// own kernel stays the one place that computes the geometry and builds the primitive; the
// parameters let it append "relu" or "add a row vector" to that primitive.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "mycel/core/tensor.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

using PostOp = mycel::PostOp;

/// The post-ops of `p` a kernel that can apply only activations takes: `p` when it has post-ops
/// and all are relu/relu6, else nullptr (then the caller applies them all).
const KernelParams* activation_post_ops(const KernelParams* p);
/// The post-ops of `p` (nullptr when it has none).
inline const KernelParams* post_ops_of(const KernelParams* p) {
  return p && !p->post_ops.empty() ? p : nullptr;
}
/// A cache-key fragment naming the post-ops ("" for none).
std::string post_ops_key(const KernelParams* p);
/// Appends p's post-ops to `attr`; kAddRow operands get `row_md` (the dst's rank, 1 x ... x N).
void append_post_ops(dnnl::primitive_attr& attr, const KernelParams* p,
                     const dnnl::memory::desc& row_md);
/// The same post-ops as plain loops over a float32 result (when the primitive could not take them).
/// `blocked`: y is in a channel-blocked layout, taken whole with its zero padding, as is an operand
/// of y's shape (a conv's residual in y's layout); the padding stays zero (0 + 0, then relu).
void apply_post_ops(const std::vector<PostOp>& ops, Tensor& y, bool blocked = false);

}  // namespace mycel::cpu
