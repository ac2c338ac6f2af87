#include "mycel/kernels/cpu/dnnl_post_ops.h"

#include <cmath>

#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/dnnl_layout.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"
#include "mycel/kernels/cpu/relu_clamp.h"

namespace mycel::cpu {

const KernelParams* activation_post_ops(const KernelParams* p) {
  if (!p || p->post_ops.empty()) return nullptr;
  for (const PostOp& op : p->post_ops)
    if (op.kind != PostOp::Kind::kRelu && op.kind != PostOp::Kind::kRelu6) return nullptr;
  return p;
}

std::string post_ops_key(const KernelParams* r) {
  std::string k;
  if (!r) return k;
  for (const PostOp& p : r->post_ops)
    k += p.kind == PostOp::Kind::kRelu    ? "+relu"
         : p.kind == PostOp::Kind::kRelu6 ? "+relu6"
                                          : "+addrow";
  return k;
}

void append_post_ops(dnnl::primitive_attr& attr, const KernelParams* r,
                     const dnnl::memory::desc& row_md) {
  if (!r || r->post_ops.empty()) return;
  dnnl::post_ops po;
  for (const PostOp& p : r->post_ops) {
    // relu with alpha 0 is y > 0 ? y : 0 * y: the same value as our max(y, 0) for every y.
    if (p.kind == PostOp::Kind::kRelu)
      po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    else if (p.kind == PostOp::Kind::kRelu6)
      po.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, 0.f, 6.f);
    else
      po.append_binary(dnnl::algorithm::binary_add, row_md);
  }
  attr.set_post_ops(po);
}

void apply_post_ops(const std::vector<PostOp>& ops, Tensor& y, bool blocked) {
  if (y.dtype() == DType::bfloat16) {
    // A bf16 product (graph mode fuses relu/relu6 only, fuse_post_ops.cc): the unfused op on
    // the rounded values.
    uint16_t* o = y.data<uint16_t>();
    for (const PostOp& p : ops) {
      MYCEL_CHECK(p.kind != PostOp::Kind::kAddRow, RuntimeError,
                  "[post-ops] a bf16 row add is not fused (backend bug)");
      const float hi = p.kind == PostOp::Kind::kRelu6 ? 6.f : INFINITY;
      parallel_for(y.numel(), 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const float v = bf16_widen(o[i]);
          o[i] = bf16_round_bits(relu_clamp(v, hi));
        }
      });
    }
    return;
  }
  float* o = y.data<float>();
  const int64_t n =
      blocked ? static_cast<int64_t>(blocked_nbytes(y.shape(), y.dtype()) / 4) : y.numel();
  // An operand's elements: y's whole buffer for one of y's shape.
  auto length = [&](const Tensor& v) { return blocked && v.shape() == y.shape() ? n : v.numel(); };
  for (size_t k = 0; k < ops.size(); ++k) {
    const PostOp& p = ops[k];
    if (p.kind == PostOp::Kind::kAddRow && k + 1 < ops.size() &&
        ops[k + 1].kind != PostOp::Kind::kAddRow) {
      // An add then relu/relu6 (a conv's residual, graph mode's fuse_post_ops.cc): one pass.
      const float* v = p.operand.data<float>();
      const int64_t len = length(p.operand);
      const float hi = ops[++k].kind == PostOp::Kind::kRelu6 ? 6.f : INFINITY;
      parallel_for(n, 1, [&, hi](int64_t b, int64_t e) {
        if (len == n) {
          for (int64_t i = b; i < e; ++i) o[i] = relu_clamp(o[i] + v[i], hi);
        } else {
          for (int64_t i = b; i < e; ++i) o[i] = relu_clamp(o[i] + v[i % len], hi);
        }
      });
    } else if (p.kind == PostOp::Kind::kRelu) {
      parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = relu_clamp(o[i], INFINITY);
      });
    } else if (p.kind == PostOp::Kind::kRelu6) {
      parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = relu_clamp(o[i], 6.f);
      });
    } else {
      const float* v = p.operand.data<float>();
      const int64_t len = length(p.operand);
      parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = o[i] + v[i % len];
      });
    }
  }
}

}  // namespace mycel::cpu
