// A residual's gradient into a layer norm's backward in bfloat16 (amp O2): dy = add(a, b), read
// only by layer_norm_grad, is summed inside the norm's pass (each element rounded to bf16 as the
// add rounds, so the results are the unfused bits): one launch and a write and read of dy less
// per layer norm (4 of the transformer's bf16 step, 35-45 us each on two threads).
// MYCEL_FUSE_ADD_NORM_GRAD=0 turns it off (A/B measurements).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "mycel/backend/fuse_util.h"
#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"
#include "mycel/kernels/cpu/norm_fast.h"

namespace mycel::backend::detail {
namespace {

// The fused op: inputs (a, b, x, gamma, mean, rstd, dmean, drstd). Where the fast loop refuses at
// run time (MYCEL_NN_BACKEND=ref), dy is materialized and the original kernel runs.
std::shared_ptr<OpDef> make_op(const Instr& norm_grad, std::vector<TensorMeta> outs, int64_t outer,
                               int64_t inner) {
  auto d = std::make_shared<OpDef>();
  d->name = "layer_norm_grad{add(i0,i1)}";
  d->class_name = "LayerNormGradAdd";
  d->doc = "layer_norm_grad of dy = a + b in bfloat16, fused by the graph backend.";
  d->inputs = {{"a"}, {"b"}, {"x"}, {"gamma"}, {"mean"}, {"rstd"}, {"dmean"}, {"drstd"}};
  d->dtypes = {DType::bfloat16};
  d->grad = "none";
  d->infer = [outs](const InferContext&) { return outs; };
  const OpDef* orig = norm_grad.op;
  const Attrs attrs = norm_grad.attrs;
  d->kernel = [orig, attrs, outer, inner](const KernelContext& c) {
    if (cpu::nn_backend() != cpu::NnBackend::kRef &&
        cpu::layer_norm_grad_sum_bf16(c.in(0), c.in(1), c.in(2), c.in(3), c.in(4), c.in(5), c.in(6),
                                      c.in(7), c.out(0), c.out(1), c.out(2), outer, inner))
      return;
    Tensor dy = Tensor::empty(c.in(0).shape(), DType::bfloat16);
    const uint16_t *a = static_cast<const uint16_t*>(c.in(0).data()),
                   *b = static_cast<const uint16_t*>(c.in(1).data());
    uint16_t* o = static_cast<uint16_t*>(dy.data());
    for (int64_t i = 0; i < dy.numel(); ++i)
      o[i] = cpu::bf16_round_bits(cpu::bf16_widen(a[i]) + cpu::bf16_widen(b[i]));
    std::vector<Tensor> ins(c.inputs.begin() + 1, c.inputs.end());
    ins[0] = dy;
    const KernelContext k{*orig, ins, c.outputs, attrs};
    orig->kernel(k);
  };
  return d;
}

void fuse_function(Function& f, ProgramImpl& p) {
  const std::vector<int> uses = count_uses(f);
  const std::vector<int> producer = sole_producers(f);
  const int n = static_cast<int>(f.code.size());
  std::vector<char> keep(n, 1);
  for (int j = 0; j < n; ++j) {
    const Instr& ng = f.code[j];
    if (ng.code != Code::kKernel || !ng.op->backend.norm_grad_sums_dout || ng.in.size() != 7 ||
        ng.out.size() != 3 || ng.params || std::find(ng.in.begin(), ng.in.end(), -1) != ng.in.end())
      continue;
    const int dy = ng.in[0], x = ng.in[1], gamma = ng.in[2], mean = ng.in[3];
    const int ai = dy >= 0 ? producer[dy] : -1;
    if (ai < 0 || uses[dy] != 1 || !keep[ai] || !is_kernel1(f.code[ai]) ||
        !f.code[ai].op->backend.fuses_elementwise || f.code[ai].op->backend.ew != cpu::EwOp::kAdd ||
        f.code[ai].in.size() != 2 || f.code[ai].params)
      continue;
    const Instr& add = f.code[ai];
    const int a = add.in[0], b = add.in[1];
    if (!is_static_plain(f, dy, DType::bfloat16) || !is_static_plain(f, a, DType::bfloat16) ||
        !is_static_plain(f, b, DType::bfloat16) || !is_static_plain(f, x, DType::bfloat16) ||
        !is_static_plain(f, gamma, DType::float32) || !is_static_plain(f, mean, DType::float32) ||
        f.regs[a].meta.shape != f.regs[dy].meta.shape ||
        f.regs[b].meta.shape != f.regs[dy].meta.shape ||
        f.regs[x].meta.shape != f.regs[dy].meta.shape || written_between(f, a, ai, j) ||
        written_between(f, b, ai, j))
      continue;
    const int64_t outer = numel(f.regs[mean].meta.shape), all = numel(f.regs[x].meta.shape);
    if (outer <= 0 || all % outer != 0 || numel(f.regs[gamma].meta.shape) != all / outer) continue;
    std::vector<TensorMeta> outs;
    for (int r : ng.out) outs.push_back(f.regs[r].meta);
    p.fused_ops.push_back(make_op(ng, outs, outer, all / outer));
    Instr fused = ng;
    fused.op = p.fused_ops.back().get();
    fused.attrs = Attrs(fused.op, {});
    fused.in = {a, b};
    fused.in.insert(fused.in.end(), ng.in.begin() + 1, ng.in.end());
    keep[ai] = 0;
    f.code[j] = std::move(fused);
    ++p.num_fused;
  }
  compact(f, keep);
}

}  // namespace

void fuse_add_norm_grad(ProgramImpl& p) {
  const char* v = std::getenv("MYCEL_FUSE_ADD_NORM_GRAD");
  if (v && std::strcmp(v, "0") == 0) return;
  for (Function& f : p.fns) fuse_function(f, p);
}

}  // namespace mycel::backend::detail
