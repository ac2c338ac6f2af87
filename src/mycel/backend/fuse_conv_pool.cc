// conv2d (with or without a fused relu) whose only reader is a 2x2, stride 2 max pooling becomes
// one instruction, "conv2d+relu+max_pool2d", for convolutions the direct kernel takes (few
// channels: a network's first layer). The kernel pools two convolution rows while they are still
// in registers, so the full-size activation is never written or read back; its arithmetic is
// the unfused conv2d's, and max is exact, so the result is bit-identical. float32 only, with
// static image sizes and weights (the batch may be dynamic), never across a side effect. Runs
// after fuse_post_ops, before the layout step, which may ask the instruction for a
// channels-last output like any conv2d.
#include <memory>

#include "mycel/backend/fuse_util.h"
#include "mycel/kernels/cpu/conv_direct.h"
#include "mycel/kernels/cpu/dnnl_layout.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/ops/nn_window.h"

namespace mycel::backend::detail {
namespace {

// conv2d, or conv2d with a fused relu: the registry says its direct kernel may pool.
bool is_conv2d(const Instr& in) { return is_kernel1(in) && in.op->backend.absorbs_max_pool; }

bool is_max_pool(const Instr& in) {
  return is_kernel1(in) && in.op->backend.window == WindowKind::kMaxPool;
}

// Whether `pool` is 2x2, stride 2, unpadded max pooling of conv's NCHW output, which the direct
// kernel computes in one pass with conv.
bool fusible(const Function& f, const Instr& conv, const Instr& pool) {
  const int x = conv.in[0], w = conv.in[1], y = conv.out[0];
  if (!is_f32_static_but_batch(f, x) || !is_static_f32(f, w) || !is_f32_static_but_batch(f, y) ||
      !is_f32_static_but_batch(f, pool.out[0]) || f.regs[y].meta.shape.size() != 4 ||
      numel_per_sample(f, x) == 0 || numel(f.regs[w].meta.shape) == 0)
    return false;
  const cpu::WindowGeom g =
      conv2d_window(*conv.op, conv.attrs, f.regs[x].meta.shape, f.regs[w].meta.shape);
  const cpu::WindowGeom p = pool2d_window(*pool.op, pool.attrs, f.regs[y].meta.shape);
  return cpu::conv2d_direct_fits(DType::float32, g) && g.oh >= 2 && g.ow >= 2 && p.kh == 2 &&
         p.kw == 2 && p.sh == 2 && p.sw == 2 && p.pt == 0 && p.pb == 0 && p.pl == 0 && p.pr == 0;
}

std::shared_ptr<const OpDef> make_conv_pool_op(const OpDef& conv, bool relu) {
  auto d = std::make_shared<OpDef>();
  d->name = relu ? "conv2d+relu+max_pool2d" : "conv2d+max_pool2d";
  d->class_name = conv.class_name;
  d->doc = "Fused conv2d (relu) and 2x2 max pooling, one pass (graph backend only).";
  d->inputs = conv.inputs;
  const OpDef* c = &conv;
  d->infer = [c](const InferContext& ctx) {
    std::vector<TensorMeta> m = c->infer(InferContext{*c, ctx.inputs, ctx.attrs});
    m[0].shape[2] /= 2;
    m[0].shape[3] /= 2;
    return m;
  };
  d->kernel = [c, relu](const KernelContext& ctx) {
    const Tensor& w = ctx.in(1);
    const cpu::WindowGeom g = conv2d_window(*c, ctx.attrs, ctx.in(0).shape(), w.shape());
    const bool src_blocked = ctx.params && ctx.params->src_blocked;
    const bool dst_blocked = ctx.params && ctx.params->dst_blocked;
    if (ctx.params) ctx.params->layout_taken = true;
    Tensor x = ctx.in(0);
    if (src_blocked && !(g.c == 1 && cpu::channel_block() == 1)) {
      // The direct kernel reads NCHW: stage a plain copy (a reused per-thread buffer).
      Tensor buf = cpu::dnnl_util::staging_buffer(3, x.nbytes());
      Tensor plain(buf.storage(), buf.offset(), x.shape(), x.dtype());
      cpu::reorder_blocked(x, plain, false);
      x = plain;
    }
    const Tensor* bias = ctx.in(2).defined() ? &ctx.in(2) : nullptr;
    cpu::conv2d_direct_max_pool(x, w, bias, ctx.out(0), g, relu,
                                dst_blocked ? cpu::direct_block(g.oc) : 0);
  };
  d->dtypes = {DType::float32};
  d->dtype_input = conv.dtype_input;
  d->grad = "none";
  d->backend.window = WindowKind::kConv;  // the layout step may ask it for a blocked output
  d->backend.unfused = &conv;
  d->backend.fused_post_ops = relu ? kPostRelu : 0;
  return d;
}

void fuse_function(Function& f, ProgramImpl& p) {
  const std::vector<int> uses = count_uses(f);
  const std::vector<int> reader = single_readers(f, uses);
  const int n = static_cast<int>(f.code.size());
  std::vector<char> keep(n, 1);
  for (int i = 0; i < n; ++i) {
    const Instr& conv = f.code[i];
    if (!keep[i] || !is_conv2d(conv)) continue;
    const int j = reader[conv.out[0]];
    if (j < 0 || !is_max_pool(f.code[j]) || f.code[j].in[0] != conv.out[0] ||
        side_effect_between(f, keep, i, j) || !fusible(f, conv, f.code[j]))
      continue;
    const bool relu = conv.op->backend.fused_post_ops & kPostRelu;
    // Geometry and infer of the plain op.
    const OpDef& base = conv.op->backend.unfused ? *conv.op->backend.unfused : *conv.op;
    p.fused_ops.push_back(make_conv_pool_op(base, relu));
    Instr fused = conv;
    fused.op = p.fused_ops.back().get();
    fused.in.resize(base.inputs.size(), -1);
    fused.params = nullptr;  // the kernel applies the relu itself
    fused.out = {f.code[j].out[0]};
    fused.node = f.code[j].node;
    keep[i] = 0;
    f.code[j] = std::move(fused);
    ++p.num_fused;
  }
  compact(f, keep);
}

}  // namespace

void fuse_conv_pool(ProgramImpl& p) {
  for (Function& f : p.fns) fuse_function(f, p);
}

}  // namespace mycel::backend::detail
