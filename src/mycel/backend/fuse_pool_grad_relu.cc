// max_pool2d_grad followed by the relu gradient's mask becomes one instruction,
// "max_pool2d_grad+relu_grad": in a conv -> relu -> 2x2 max pooling network (LeNet5) the backward
// pass routes dy to each window's maximum and then multiplies the whole tensor by cast(x > 0),
// x being relu's output, in a second pass over it (16 + 7 µs of LeNet5's step on two Zen 4
// cores). Only a maximum receives a nonzero gradient and x there is the window's maximum, so the
// pooling gradient applies the mask itself (kernels/cpu/pool_direct.h, max_pool_2x2_grad_relu),
// with the chain's multiply: the result is bit-identical. Matches, after fuse_elementwise, the
// fused chain "greater(i0,i1); cast; mul(i2,t1)" whose i0 is the pooling's x, i1 a constant zero
// and i2 the pooling gradient (its only reader); float32 2x2 stride-2 unpadded pooling with
// static image sizes, never across a side effect.
#include <memory>
#include <string>

#include "mycel/backend/fuse_util.h"
#include "mycel/kernels/cpu/pool_direct.h"
#include "mycel/ops/nn_window.h"

namespace mycel::backend::detail {
namespace {

constexpr const char* kMaskChain = "fused_elementwise{t0=greater(i0,i1); t1=cast(t0); t2=mul(i2,t1)}";

bool is_pool_grad(const Instr& in) {
  return is_kernel1(in) && in.op->name == "max_pool2d_grad" && in.in.size() == 2;
}

// A constant float32 zero of one element (relu's threshold in its gradient's mask).
bool is_const_zero(const Function& f, int r) {
  if (r < 0 || !f.regs[r].is_const || f.regs[r].type != RegType::kTensor) return false;
  const Tensor& t = f.regs[r].value.t;
  return t.defined() && t.dtype() == DType::float32 && t.numel() == 1 &&
         t.data<float>()[0] == 0.f;
}

bool fusible(const Function& f, const Instr& pool, const Instr& mask) {
  const int x = pool.in[0], dy = pool.in[1], dx = pool.out[0];
  if (!is_kernel1(mask) || mask.op->name != kMaskChain || mask.in.size() != 3 ||
      mask.in[0] != x || mask.in[2] != dx || !is_const_zero(f, mask.in[1]))
    return false;
  if (!is_f32_static_but_batch(f, x) || !is_f32_static_but_batch(f, dy) ||
      !is_f32_static_but_batch(f, dx) || !is_f32_static_but_batch(f, mask.out[0]) ||
      f.regs[x].meta.shape.size() != 4 || f.regs[x].meta.shape != f.regs[mask.out[0]].meta.shape ||
      f.regs[x].meta.shape != f.regs[dx].meta.shape)
    return false;
  const cpu::WindowGeom g = pool2d_window(*pool.op, pool.attrs, f.regs[x].meta.shape);
  return cpu::max_pool_2x2_fits(DType::float32, g);
}

std::shared_ptr<const OpDef> make_op(const OpDef& pool) {
  auto d = std::make_shared<OpDef>(pool);
  d->name = "max_pool2d_grad+relu_grad";
  d->doc = "Fused max_pool2d_grad and the relu gradient's mask, one pass (graph backend only).";
  const OpDef* p = &pool;
  d->kernel = [p](const KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const cpu::WindowGeom g = pool2d_window(*p, ctx.attrs, x.shape());
    if (ctx.out(0).numel() == 0) return;
    cpu::max_pool_2x2_grad_relu(x, ctx.in(1), ctx.out(0), g);
  };
  d->dtypes = {DType::float32};
  d->grad = "none";
  d->backend.unfused = &pool;
  return d;
}

void fuse_function(Function& f, ProgramImpl& p) {
  const std::vector<int> uses = count_uses(f);
  const std::vector<int> reader = single_readers(f, uses);
  const int n = static_cast<int>(f.code.size());
  std::vector<char> keep(n, 1);
  for (int i = 0; i < n; ++i) {
    const Instr& pool = f.code[i];
    if (!keep[i] || !is_pool_grad(pool)) continue;
    const int j = reader[pool.out[0]];
    if (j < 0 || j <= i || side_effect_between(f, keep, i, j) || !fusible(f, pool, f.code[j]))
      continue;
    p.fused_ops.push_back(make_op(*pool.op));
    Instr fused = pool;
    fused.op = p.fused_ops.back().get();
    fused.params = nullptr;
    fused.out = {f.code[j].out[0]};
    fused.node = f.code[j].node;
    keep[i] = 0;
    f.code[j] = std::move(fused);
    ++p.num_fused;
  }
  compact(f, keep);
}

}  // namespace

void fuse_pool_grad_relu(ProgramImpl& p) {
  for (Function& f : p.fns) fuse_function(f, p);
}

}  // namespace mycel::backend::detail
