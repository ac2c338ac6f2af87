#include "mycel/kernels/cpu/dnnl_post_ops.h"

#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/dnnl_util.h"

namespace mycel::cpu {
namespace {
thread_local PostOpRequest* t_request = nullptr;
}

PostOpScope::PostOpScope(PostOpRequest* r) {
  r->applied = false;
  t_request = r;
}
PostOpScope::~PostOpScope() { t_request = nullptr; }

PostOpRequest* take_post_ops() {
  PostOpRequest* r = t_request;
  t_request = nullptr;
  return r;
}

std::string post_ops_key(const PostOpRequest* r) {
  std::string k;
  if (!r) return k;
  for (const PostOp& p : r->ops)
    k += p.kind == PostOp::Kind::kRelu    ? "+relu"
         : p.kind == PostOp::Kind::kRelu6 ? "+relu6"
                                          : "+addrow";
  return k;
}

void append_post_ops(dnnl::primitive_attr& attr, const PostOpRequest* r,
                     const dnnl::memory::desc& row_md) {
  if (!r || r->ops.empty()) return;
  dnnl::post_ops po;
  for (const PostOp& p : r->ops) {
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

void add_post_op_args(std::unordered_map<int, dnnl::memory>& args, const PostOpRequest* r,
                      const dnnl::memory::desc& row_md) {
  if (!r) return;
  for (size_t i = 0; i < r->ops.size(); ++i)
    if (r->ops[i].kind == PostOp::Kind::kAddRow)
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1] =
          dnnl_util::wrap(row_md, r->ops[i].operand);
}

void apply_post_ops(const std::vector<PostOp>& ops, Tensor& y) {
  float* o = y.data<float>();
  const int64_t n = y.numel();
  for (const PostOp& p : ops) {
    if (p.kind == PostOp::Kind::kRelu) {
      parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = o[i] < 0.f ? 0.f : o[i];
      });
    } else if (p.kind == PostOp::Kind::kRelu6) {
      parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = o[i] < 0.f ? 0.f : o[i] > 6.f ? 6.f : o[i];
      });
    } else {
      const float* v = p.operand.data<float>();
      const int64_t len = p.operand.numel();
      parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = o[i] + v[i % len];
      });
    }
  }
}

}  // namespace mycel::cpu
